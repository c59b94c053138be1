"""A user's own name, address and password, and the page behind a password-reset link (a teacher
asks for a student's link on chat/course/views.start_reset; the link goes only to the student's own
address: accounts/resets.py)."""

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
from accounts.resets import mail_configured


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


class ResetConfirmView(PasswordResetConfirmView):
    """Django's page behind a reset link; a used or expired link also offers a new one by mail when
    mail is configured."""

    def get_context_data(self, **kwargs):
        return super().get_context_data(reset_by_mail=mail_configured(), **kwargs)
