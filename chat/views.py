"""Prompt pages for teachers."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.permissions import get_prompt_for_edit, require_teacher
from chat.forms import PromptForm


@login_required
@require_http_methods(["GET", "POST"])
def prompt_create(request):
    require_teacher(request.user)
    form = PromptForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        prompt = form.save(commit=False)
        prompt.owner = request.user
        prompt.save()
        form.save_m2m()
        messages.success(request, f"Prompt “{prompt.name}” created. Share its join link with your students.")
        return redirect("prompt_detail", pk=prompt.pk)
    return render(request, "prompts/form.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def prompt_detail(request, pk: int):
    prompt = get_prompt_for_edit(request.user, pk)
    form = PromptForm(request.POST or None, instance=prompt, user=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Prompt saved.")
        return redirect("prompt_detail", pk=prompt.pk)
    join_url = request.build_absolute_uri(f"/join/{prompt.join_code}/")
    enrollments = prompt.enrollments.select_related("student")
    context = {"prompt": prompt, "form": form, "join_url": join_url, "enrollments": enrollments}
    return render(request, "prompts/detail.html", context)


@login_required
@require_POST
def prompt_delete(request, pk: int):
    prompt = get_prompt_for_edit(request.user, pk)
    name = prompt.name
    prompt.delete()
    messages.success(request, f"Prompt “{name}” deleted.")
    return redirect("home")
