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
from accounts.permissions import state_sentence
from chat.enrollment import join_prompt
from chat.models import STUDENT_SENTENCES, Prompt, PromptState
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
    # Each with why it cannot be used now, if so ("Opens on …", "Closed on …").
    joined = [
        (prompt, state_sentence(prompt) if prompt.state() != PromptState.OPEN else "")
        for prompt in Prompt.objects.joined_by(request.user).select_related("owner")
    ]
    return render(request, "student_home.html", {"prompts": joined, "join_form": JoinForm()})


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
    """A prompt's join link. GET only shows what joining means (a link followed from another site
    must not enroll anyone); the POST of its button enrolls, and signs a new student up first."""
    prompt = Prompt.objects.filter(join_code=code.upper()).exclude(active=False).select_related("owner").first()
    if prompt is None:
        return render(
            request,
            "error.html",
            {"title": "Not found", "message": "This join link is not valid any more. Ask your teacher for a new one."},
            status=404,
        )
    if request.user.is_authenticated and prompt.is_taught_by(request.user):
        return redirect("prompt_detail", pk=prompt.pk)
    form = None if request.user.is_authenticated else StudentSignupForm(request.POST or None)
    if request.method == "POST" and (form is None or form.is_valid()):
        user = request.user
        if form is not None:
            user = form.save(commit=False)
            user.role = Role.STUDENT
            user.save()
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        try:
            join_prompt(user, code)
        except CurreChatError as exc:
            messages.error(request, str(exc))
            return redirect("home")
        messages.success(request, f"You joined “{prompt.name}”. Ask your first question below.")
        return redirect("chat_home", pk=prompt.pk)
    context = {
        "prompt": prompt,
        "form": form,
        "already_joined": request.user.is_authenticated and prompt.is_enrolled(request.user),
        "visibility": STUDENT_SENTENCES[prompt.chat_visibility],
        "state_sentence": state_sentence(prompt) if prompt.state() != PromptState.OPEN else "",
    }
    return render(request, "registration/join.html", context)
