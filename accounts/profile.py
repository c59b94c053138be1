"""A user's own name, address and password, confirming that address (accounts/confirmation.py),
and the page behind a password-reset link (a teacher asks for a student's link on
chat/course/views.start_reset; the link goes only to the student's own address: accounts/resets.py)."""

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
from django.views.decorators.http import require_http_methods, require_POST

from accounts import confirmation, tasks
from accounts.models import User
from accounts.resets import mail_configured
from kernel.ratelimit import address_confirmation_by_user


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
            "email": gettext_lazy(
                "Optional. A link to choose a new password goes here if you forget it. A changed address "
                "needs confirming again."
            ),
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
        name_form.save()  # a changed address loses its confirmation (User.save)
        messages.success(request, _("Your name was saved."))
        return redirect("profile")
    if "change_password" in request.POST and password_form.is_valid():
        user = password_form.save()
        update_session_auth_hash(request, user)  # this browser stays signed in; others are signed out
        messages.success(request, _("Your password was changed. Other browsers signed in as you are signed out."))
        return redirect("profile")
    context = {"name_form": name_form, "password_form": password_form, "mail_configured": mail_configured()}
    return render(request, "accounts/profile.html", context)


@login_required
@require_POST
def ask_confirmation(request):
    """ "Confirm this address": the worker mails a link to the account's present address."""
    user = request.user
    if not mail_configured():
        messages.error(request, _("No mail server is configured, so addresses cannot be confirmed here."))
    elif not user.email:
        messages.error(request, _("Save an email address first, then ask for its confirmation link."))
    elif user.email_is_confirmed:
        messages.info(request, _("Your address %(address)s is already confirmed.") % {"address": user.email})
    else:
        address_confirmation_by_user().hit(user.pk)  # RateLimited: a 429 page with Retry-After (the middleware)
        tasks.mail_address_confirmation.enqueue(user.pk, user.email, request.build_absolute_uri("/").rstrip("/"))
        sentence = _("A confirmation link is on its way to %(address)s. Open it while signed in to this account.")
        messages.success(request, sentence % {"address": user.email})
    return redirect("profile")


@login_required
@require_http_methods(["GET", "POST"])
def confirm_address(request, uidb64: str, token: str):
    """The page behind a confirmation link: GET shows what would be confirmed, POST confirms it. Only
    the account the link was made for, signed in, may follow it: the link proves the mailbox, the
    sign-in proves the account, and a confirmation needs both (someone who typed another person's
    address on their own profile cannot get it confirmed by that person's click)."""
    link_user = confirmation.user_for_link(uidb64, token)
    if link_user is None:
        return render(request, "accounts/confirm_address.html", {"link_user": None}, status=400)
    if link_user.pk != request.user.pk:
        message = _(
            "This link confirms the address of another CurreChat account. Log out, then open it again "
            "and sign in to the account it was mailed for."
        )
        return render(request, "error.html", {"title": _("Another account's link"), "message": message}, status=403)
    if request.method == "POST":
        confirmation.confirm(link_user)
        messages.success(request, _("Your address %(address)s is confirmed.") % {"address": link_user.email})
        return redirect("profile")
    return render(request, "accounts/confirm_address.html", {"link_user": link_user})


class ResetConfirmView(PasswordResetConfirmView):
    """Django's page behind a reset link; a used or expired link also offers a new one by mail when
    mail is configured."""

    def get_context_data(self, **kwargs):
        return super().get_context_data(reset_by_mail=mail_configured(), **kwargs)
