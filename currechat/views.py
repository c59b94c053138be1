"""Home pages, logging in and asking for a reset link. Joining a prompt (with sign-up for new
students) is in currechat/joining.py.

Logging in, asking for reset links, signing up and trying join codes are rate limited
(kernel/ratelimit.py): failed logins by account and by address, reset requests by address and
by the email address asked for, sign-ups by address, unknown join codes by address. A refusal is a
429 page with a `Retry-After` header and a sentence saying when to try again.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView, PasswordResetView
from django.db.models import Count, Q
from django.shortcuts import render
from django.urls import reverse_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from access.rules import state_sentence
from accounts.reset_requests import ResetRequestForm
from accounts.resets import mail_configured
from chat.models import ChatSession, EnrollmentStatus, Prompt, PromptState
from collections_app.models import Collection, FileStatus
from kernel.ratelimit import (
    RateLimited,
    client_address,
    login_by_account,
    login_by_address,
    reset_by_address,
    reset_by_email,
)
from sso.config import local_password_allowed, local_password_sentence, sign_in_options, sso_enabled


def too_many(request, exc: RateLimited):
    response = render(request, "error.html", {"title": _("Too many attempts"), "message": str(exc)}, status=429)
    response["Retry-After"] = str(exc.retry_after)
    return response


def _account_key(username: str) -> str:
    # Case-folded so "Sam" and "sam" share one window whichever the login backend accepts.
    return username.strip().casefold()[:150]


class LocalLoginForm(AuthenticationForm):
    """A CurreChat password, for whom LOCAL_LOGIN still allows one (sso/config.py)."""

    def confirm_login_allowed(self, user):
        super().confirm_login_allowed(user)
        if not local_password_allowed(user):
            raise forms.ValidationError(local_password_sentence(), code="sso_only")


class AdminLoginForm(AdminAuthenticationForm):
    """The admin site's own password form follows LOCAL_LOGIN too (currechat/urls.py sets it)."""

    def confirm_login_allowed(self, user):
        super().confirm_login_allowed(user)
        if not local_password_allowed(user):
            raise forms.ValidationError(local_password_sentence(), code="sso_only")


class RateLimitedLoginView(LoginView):
    """Django's login, refused with 429 after too many failures for the account or the address.
    Only failures count; a successful login forgives its account's failures. With campus sign-in
    on, the page offers "Sign in with <university>" first."""

    form_class = LocalLoginForm

    def post(self, request, *args, **kwargs):
        try:
            login_by_address().check(client_address(request))
            login_by_account().check(_account_key(request.POST.get("username", "")))
        except RateLimited as exc:
            return too_many(request, exc)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        for window, who in (
            (login_by_address(), client_address(self.request)),
            (login_by_account(), _account_key(self.request.POST.get("username", ""))),
        ):
            try:
                window.hit(who)
            except RateLimited:
                pass  # already full: the next attempt is refused
        return super().form_invalid(form)

    def form_valid(self, form):
        login_by_account().clear(_account_key(form.get_user().get_username()))
        return super().form_valid(form)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(reset_by_mail=mail_configured(), **kwargs)
        context["sso_options"] = sign_in_options(self.get_redirect_url())
        context["local_login"] = settings.LOCAL_LOGIN
        return context


class RequestResetView(PasswordResetView):
    """ "Forgot your password?" from the login page, only when mail is configured (otherwise the page
    says whom to ask). The answer is the same whether or not the address belongs to anyone; requests
    are rate limited per network address and per address asked for, known or not."""

    form_class = ResetRequestForm
    template_name = "registration/password_reset_form.html"
    success_url = reverse_lazy("password_reset_done")

    def get_context_data(self, **kwargs):
        return super().get_context_data(reset_by_mail=mail_configured(), **kwargs)

    def post(self, request, *args, **kwargs):
        if not mail_configured() or sso_enabled():  # the university manages passwords
            return self.get(request, *args, **kwargs)
        try:
            reset_by_address().hit(client_address(request))
            reset_by_email().hit(request.POST.get("email", "").strip().casefold()[:254])
        except RateLimited as exc:
            return too_many(request, exc)
        return super().post(request, *args, **kwargs)


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
        # Students as the roster counts them: enrolled now (not removed or blocked).
        enrolled = Q(enrollments__status=EnrollmentStatus.ENROLLED)
        prompts = Prompt.objects.editable_by(request.user).annotate(
            n_students=Count("enrollments", filter=enrolled, distinct=True),
            n_collections=Count("collections", distinct=True),
        )
        limits = {
            "max_upload_mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024),
            "max_pages": settings.UPLOAD_MAX_PDF_PAGES,
        }
        return render(request, "teacher_home.html", {"collections": collections, "prompts": prompts, **limits})
    if request.user.may_co_teach:  # a co-teacher by invitation: what they were invited to, nothing more
        context = {
            "prompts": Prompt.objects.editable_by(request.user).select_related("owner"),
            "collections": Collection.objects.editable_by(request.user).select_related("owner"),
        }
        return render(request, "guest_home.html", context)
    # Each with why it cannot be used now, if so ("Opens on …", "Closed on …").
    joined = [
        (prompt, state_sentence(prompt) if prompt.state() != PromptState.OPEN else "")
        for prompt in Prompt.objects.joined_by(request.user).select_related("owner")
    ]
    # The latest chats across the prompts they are still in, to pick up where they left off.
    recent = (
        ChatSession.objects.filter(user=request.user, messages__isnull=False, prompt__in=[p for p, _ in joined])
        .select_related("prompt")
        .distinct()[:5]
    )
    return render(request, "student_home.html", {"prompts": joined, "recent": recent, "join_form": JoinForm()})


class JoinForm(forms.Form):
    code = forms.CharField(
        max_length=32, label=gettext_lazy("Join code"), help_text=gettext_lazy("The code your teacher gave you.")
    )
