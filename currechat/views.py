"""Home pages, logging in (and asking for a reset link), and joining a prompt (with sign-up for new
students).

Logging in, asking for reset links, signing up and trying join codes are rate limited
(kernel/ratelimit.py): failed logins by account and by address, reset requests by address and
by the email address asked for, sign-ups by address, unknown join codes by address. A refusal is a
429 page with a `Retry-After` header and a sentence saying when to try again.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.contrib.auth.views import LoginView, PasswordResetView
from django.db.models import Count, Q
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from access.rules import state_sentence
from accounts.models import Role, User
from accounts.resets import ResetRequestForm, mail_configured
from chat.course.enrollment import join_prompt
from chat.models import STUDENT_SENTENCES, ChatSession, EnrollmentStatus, Prompt, PromptState
from collections_app.models import Collection, FileStatus
from kernel.errors import CurreChatError, NotFound
from kernel.ratelimit import (
    RateLimited,
    client_address,
    join_by_address,
    limit_failures,
    login_by_account,
    login_by_address,
    reset_by_address,
    reset_by_email,
    signup_by_address,
)
from sso.config import local_password_allowed, local_password_sentence, sign_in_options, sso_enabled


def _too_many(request, exc: RateLimited):
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
            return _too_many(request, exc)
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
            return _too_many(request, exc)
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
        return render(request, "teacher_home.html", {"collections": collections, "prompts": prompts})
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


class StudentSignupForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username",)


@login_required
@require_http_methods(["POST"])
def join_by_code(request):
    form = JoinForm(request.POST)
    if form.is_valid():
        code = form.cleaned_data["code"]
        try:
            prompt = limit_failures(join_by_address(), client_address(request), lambda: join_prompt(request.user, code))
        except RateLimited as exc:
            return _too_many(request, exc)
        except CurreChatError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, _joined(prompt))
            return redirect("chat_home", pk=prompt.pk)
    return redirect("home")


@require_http_methods(["GET"])
def join_with_code(request):
    """The login page's join-code box: a visitor with only the code reaches the join page its link
    opens (which shows the prompt and signs them up); a code is letters and digits only."""
    code = "".join(ch for ch in request.GET.get("code", "") if ch.isalnum())[:32]
    if not code:
        messages.error(request, _("Enter the join code your teacher gave you."))
        return redirect("login")
    return redirect("join_link", code=code)


@require_http_methods(["GET", "POST"])
def join_link(request, code: str):
    """A prompt's join link. GET only shows what joining means (a link followed from another site
    must not enroll anyone); the POST of its button enrolls, and signs a new student up first."""
    try:
        prompt = limit_failures(join_by_address(), client_address(request), lambda: _prompt_for_link(code))
    except RateLimited as exc:
        return _too_many(request, exc)
    except NotFound as exc:
        return render(request, "error.html", {"title": _("Not found"), "message": str(exc)}, status=404)
    if request.user.is_authenticated and prompt.is_taught_by(request.user):
        return redirect("prompt_detail", pk=prompt.pk)
    sso_options = [] if request.user.is_authenticated else sign_in_options(request.path)
    if request.method == "POST" and sso_options:
        # Campus sign-in first, then the join: the intent is kept in this browser's session (the
        # POST proves it came from this page), and the link's GET after the sign-in completes it.
        chosen = next((o for o in sso_options if o.protocol == request.POST.get("sso")), None)
        if chosen is not None:
            request.session[SSO_JOIN_KEY] = prompt.join_code
            # A page that moves on by itself, not a redirect: browsers hold a form's redirects to the
            # page's CSP form-action, which names no identity provider.
            return render(request, "sso/continue.html", {"url": chosen.url, "label": chosen.label})
    pending = request.session.get(SSO_JOIN_KEY) if request.user.is_authenticated else None
    if request.method == "GET" and pending == prompt.join_code:
        del request.session[SSO_JOIN_KEY]
        return _join(request, request.user, code, prompt)
    # With campus sign-in on, new accounts come from the university unless LOCAL_LOGIN=all.
    signup = not request.user.is_authenticated and (not sso_options or settings.LOCAL_LOGIN == "all")
    form = StudentSignupForm(request.POST or None) if signup else None
    if request.method == "POST" and not request.user.is_authenticated and form is None:
        return redirect(request.path)
    if request.method == "POST" and form is not None:
        try:
            signup_by_address().hit(client_address(request))
        except RateLimited as exc:
            return _too_many(request, exc)
    if request.method == "POST" and (form is None or form.is_valid()):
        user = request.user
        if form is not None:
            user = form.save(commit=False)
            user.role = Role.STUDENT
            user.save()
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return _join(request, user, code, prompt)
    context = {
        "sso_options": sso_options,
        "prompt": prompt,
        "form": form,
        "already_joined": request.user.is_authenticated and prompt.is_enrolled(request.user),
        "visibility": STUDENT_SENTENCES[prompt.chat_visibility],
        "state_sentence": state_sentence(prompt) if prompt.state() != PromptState.OPEN else "",
        "reset_by_mail": mail_configured(),  # then a new student is told why to add an address
    }
    return render(request, "registration/join.html", context)


SSO_JOIN_KEY = "sso_join_code"


def _join(request, user, code: str, prompt: Prompt):
    try:
        join_prompt(user, code)
    except CurreChatError as exc:
        messages.error(request, str(exc))
        return redirect("home")
    messages.success(request, _joined(prompt))
    return redirect("chat_home", pk=prompt.pk)


def _joined(prompt: Prompt) -> str:
    """The welcome after joining: ask away when the prompt is open, otherwise when it opens (or why
    it cannot be used), never an invitation to ask what would be refused."""
    if prompt.state() == PromptState.OPEN:
        return _("You joined “%(name)s”. Ask your first question below.") % {"name": prompt.name}
    joined = _("You joined “%(name)s”.") % {"name": prompt.name}
    return f"{joined} {state_sentence(prompt)}"


def _prompt_for_link(code: str) -> Prompt:
    prompt = Prompt.objects.filter(join_code=code.upper()).exclude(active=False).select_related("owner").first()
    if prompt is None:
        raise NotFound(_("This join link is not valid any more. Ask your teacher for a new one."))
    return prompt
