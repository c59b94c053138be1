"""Home pages and joining a prompt (with sign-up for new students)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.db.models import Count, Q
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.models import Role, User
from chat.enrollment import join_prompt
from chat.models import Prompt
from collections_app.models import Collection, FileStatus
from currechat.errors import CurreChatError


@login_required
def home(request):
    if request.user.is_teacher:
        collections = (
            Collection.objects.editable_by(request.user)
            .select_related("owner")
            .annotate(
                n_files=Count("files", distinct=True),
                n_ready=Count("files", filter=Q(files__status=FileStatus.READY), distinct=True),
                n_failed=Count("files", filter=Q(files__status=FileStatus.FAILED), distinct=True),
            )
        )
        prompts = Prompt.objects.editable_by(request.user).annotate(
            n_students=Count("enrollments", distinct=True), n_collections=Count("collections", distinct=True)
        )
        return render(request, "teacher_home.html", {"collections": collections, "prompts": prompts})
    prompts = Prompt.objects.joined_by(request.user).select_related("owner")
    return render(request, "student_home.html", {"prompts": prompts, "join_form": JoinForm()})


class JoinForm(forms.Form):
    code = forms.CharField(max_length=32, label="Join code", help_text="The code your teacher gave you.")


class StudentSignupForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username",)


@login_required
@require_http_methods(["POST"])
def join_by_code(request):
    form = JoinForm(request.POST)
    if form.is_valid():
        try:
            prompt = join_prompt(request.user, form.cleaned_data["code"])
        except CurreChatError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"You joined “{prompt.name}”. Ask your first question below.")
            return redirect("chat_home", pk=prompt.pk)
    return redirect("home")


@require_http_methods(["GET", "POST"])
def join_link(request, code: str):
    """A prompt's join link: logged-in users join at once; new students sign up here first."""
    prompt = Prompt.objects.filter(join_code=code.upper(), active=True).first()
    if prompt is None:
        return render(
            request,
            "error.html",
            {"title": "Not found", "message": "This join link is not valid any more. Ask your teacher for a new one."},
            status=404,
        )
    if request.user.is_authenticated:
        if prompt.owner_id == request.user.id:
            return redirect("prompt_detail", pk=prompt.pk)
        join_prompt(request.user, code)
        messages.success(request, f"You joined “{prompt.name}”. Ask your first question below.")
        return redirect("chat_home", pk=prompt.pk)
    form = StudentSignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save(commit=False)
        user.role = Role.STUDENT
        user.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        join_prompt(user, code)
        messages.success(request, f"Welcome! You joined “{prompt.name}”. Ask your first question below.")
        return redirect("chat_home", pk=prompt.pk)
    return render(request, "registration/signup.html", {"form": form, "prompt": prompt})
