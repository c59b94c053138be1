"""A user's own name, address and password, and password resets a teacher asks CurreChat to mail to
a student (the link goes only to the student's own address: accounts/resets.py)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.views import PasswordResetConfirmView
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from accounts.models import User
from accounts.permissions import require_teacher
from accounts.resets import mail_configured, mail_reset_to_student, resettable_by_teacher


class NameForm(forms.ModelForm):
    """One's name, and with a mail server configured one's address (where reset links go)."""

    class Meta:
        model = User
        fields = ["first_name", "last_name", "email"]
        labels = {
            "first_name": gettext_lazy("First name"),
            "last_name": gettext_lazy("Last name"),
            "email": gettext_lazy("Email address"),
        }
        help_texts = {
            "last_name": gettext_lazy("Teachers see your name only where a course says they read chats by name."),
            "email": gettext_lazy("Optional. A link to choose a new password goes here if you forget it."),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not mail_configured():
            del self.fields["email"]  # nothing is ever mailed: don't ask for an address


@login_required
@require_http_methods(["GET", "POST"])
def profile(request):
    """Change one's display name or password (each form posts on its own)."""
    name_form = NameForm(request.POST if "save_name" in request.POST else None, instance=request.user)
    password_form = PasswordChangeForm(request.user, request.POST if "change_password" in request.POST else None)
    if "save_name" in request.POST and name_form.is_valid():
        name_form.save()
        messages.success(request, _("Your name was saved."))
        return redirect("profile")
    if "change_password" in request.POST and password_form.is_valid():
        user = password_form.save()
        update_session_auth_hash(request, user)  # this browser stays signed in; others are signed out
        messages.success(request, _("Your password was changed. Other browsers signed in as you are signed out."))
        return redirect("profile")
    return render(request, "accounts/profile.html", {"name_form": name_form, "password_form": password_form})


def student_for_reset(teacher: User, username: str) -> User | None:
    """The student a teacher's reset request may reach: enrolled now in a prompt `teacher` teaches,
    with a password of their own (accounts.resets.resettable_by_teacher). None for anyone else, and
    the caller must answer the same either way: the answer would otherwise tell a teacher whether a
    username is among their students, linking it to "Student N"."""
    from chat.models import Prompt, enrolled_q

    user = User.objects.filter(username=username.strip()).first()
    if user is None or not resettable_by_teacher(user):
        return None
    return user if Prompt.objects.editable_by(teacher).filter(enrolled_q(user)).exists() else None


class ResetForm(forms.Form):
    username = forms.CharField(
        label=gettext_lazy("Username"), max_length=150, help_text=gettext_lazy("The student tells you their username.")
    )


@login_required
@require_http_methods(["GET", "POST"])
def start_reset(request):
    """A teacher asks CurreChat to mail one of their students a link to choose a new password. The
    link goes only to the student's own address and the page answers the same whoever the username
    is (superusers make links in the admin)."""
    require_teacher(request.user)
    form = ResetForm(request.POST or None) if mail_configured() else None
    asked_for = ""
    if form is not None and request.method == "POST" and form.is_valid():
        asked_for = form.cleaned_data["username"].strip()
        mail_reset_to_student(request, student_for_reset(request.user, asked_for))
        form = ResetForm()
    return render(request, "accounts/start_reset.html", {"form": form, "asked_for": asked_for})


class ResetConfirmView(PasswordResetConfirmView):
    """Django's page behind a reset link; a used or expired link also offers a new one by mail when
    mail is configured."""

    def get_context_data(self, **kwargs):
        return super().get_context_data(reset_by_mail=mail_configured(), **kwargs)
