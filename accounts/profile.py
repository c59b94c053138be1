"""A user's own name and password, and password resets an administrator or a teacher starts.

No mail server is assumed: a reset makes a one-time link (Django's token generator: it stops
working once the password changes, and after PASSWORD_RESET_TIMEOUT) that is shown to the person
who started it, to hand to the user.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.tokens import default_token_generator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from accounts.models import User
from accounts.permissions import Forbidden, require_teacher
from currechat.errors import NotFound


class NameForm(forms.ModelForm):
    class Meta:
        model = User
        fields = ["first_name", "last_name"]
        labels = {"first_name": gettext_lazy("First name"), "last_name": gettext_lazy("Last name")}
        help_texts = {
            "last_name": gettext_lazy("Teachers see your name only where a course says they read chats by name.")
        }


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


def reset_link(request, user: User) -> str:
    """A one-time link that lets `user` choose a new password."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    return request.build_absolute_uri(reverse("password_reset_confirm", args=[uid, token]))


def student_for_reset(teacher: User, username: str) -> User:
    """A student enrolled in a prompt `teacher` teaches (or any user, for an administrator)."""
    from chat.models import Prompt, enrolled_q

    user = User.objects.filter(username=username.strip()).first()
    if user is None:
        raise NotFound(_("There is no such user among your students."))
    if teacher.is_superuser:
        return user
    if user.is_teacher or not Prompt.objects.editable_by(teacher).filter(enrolled_q(user)).exists():
        raise NotFound(_("There is no such user among your students."))
    return user


class ResetForm(forms.Form):
    username = forms.CharField(
        label=gettext_lazy("Username"), max_length=150, help_text=gettext_lazy("The student tells you their username.")
    )


@login_required
@require_http_methods(["GET", "POST"])
def start_reset(request):
    """A teacher makes a one-time password link for one of their students (admins for anyone)."""
    require_teacher(request.user)
    form = ResetForm(request.POST or None)
    link = None
    if request.method == "POST" and form.is_valid():
        try:
            link = reset_link(request, student_for_reset(request.user, form.cleaned_data["username"]))
        except (NotFound, Forbidden) as exc:
            form.add_error("username", str(exc))
    return render(request, "accounts/start_reset.html", {"form": form, "link": link})
