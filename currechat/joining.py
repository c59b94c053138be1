"""Joining a prompt: its join link (which signs a new student up, or through the university), the
student home's join-code box, and the prompt's privacy notice for whoever holds its join code.

Every way in shows the prompt's privacy notice and asks the student to confirm it; joining without
the confirmation is refused with a sentence, and the enrollment records which level was confirmed
and when (chat.course.enrollment.join_prompt, the rule the API's `POST /prompts/join` follows too).
Unknown join codes count against the caller's address (kernel/ratelimit.py): guessing gets a 429.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from access.rules import state_sentence
from accounts.models import Role, User
from accounts.resets import mail_configured
from chat.course import privacy_levels as levels
from chat.course.enrollment import NOT_CONFIRMED, join_prompt
from chat.models import STUDENT_SENTENCES, Prompt, PromptState
from chat.privacy.notice import notice
from currechat.views import JoinForm, too_many
from kernel.errors import CurreChatError, NotFound
from kernel.ratelimit import RateLimited, client_address, join_by_address, limit_failures, signup_by_address
from sso.config import sign_in_options

SSO_JOIN_KEY = "sso_join_code"
# The privacy level the student confirmed before leaving for the university's sign-in.
SSO_JOIN_LEVEL_KEY = "sso_join_privacy_level"


class StudentSignupForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username",)


@login_required
@require_http_methods(["POST"])
def join_by_code(request):
    """The student home's join box: the code leads to the prompt's join page, which shows what
    joining means and its privacy notice, and asks for the confirmation before enrolling."""
    form = JoinForm(request.POST)
    if form.is_valid():
        code = form.cleaned_data["code"]
        try:
            prompt = limit_failures(join_by_address(), client_address(request), lambda: _prompt_for_code(code))
        except RateLimited as exc:
            return too_many(request, exc)
        except CurreChatError as exc:
            messages.error(request, str(exc))
        else:
            return redirect("join_link", code=prompt.join_code)
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
    must not enroll anyone); the POST of its button enrolls, and signs a new student up first, once
    they confirmed the privacy notice."""
    prompt = _linked_prompt(request, code)
    if isinstance(prompt, HttpResponse):
        return prompt
    if request.user.is_authenticated and prompt.is_taught_by(request.user):
        return redirect("prompt_detail", pk=prompt.pk)
    sso_options = [] if request.user.is_authenticated else sign_in_options(request.path)
    refusal = _privacy_refusal(request, prompt) if request.method == "POST" else ""
    if request.method == "POST" and sso_options and not refusal:
        # Campus sign-in first, then the join: the intent is kept in this browser's session (the
        # POST proves it came from this page), and the link's GET after the sign-in completes it.
        chosen = next((o for o in sso_options if o.protocol == request.POST.get("sso")), None)
        if chosen is not None:
            request.session[SSO_JOIN_KEY] = prompt.join_code
            request.session[SSO_JOIN_LEVEL_KEY] = prompt.chat_visibility
            # A page that moves on by itself, not a redirect: browsers hold a form's redirects to the
            # page's CSP form-action, which names no identity provider.
            return render(request, "sso/continue.html", {"url": chosen.url, "label": chosen.label})
    pending = request.session.get(SSO_JOIN_KEY) if request.user.is_authenticated else None
    if request.method == "GET" and pending == prompt.join_code:
        del request.session[SSO_JOIN_KEY]
        # Confirmed on this page before the sign-in (a session from before the notice has no level).
        seen = request.session.pop(SSO_JOIN_LEVEL_KEY, None)
        return _join(request, request.user, code, prompt, confirmed=seen is not None, seen=seen)
    # With campus sign-in on, new accounts come from the university unless LOCAL_LOGIN=all.
    signup = not request.user.is_authenticated and (not sso_options or settings.LOCAL_LOGIN == "all")
    form = StudentSignupForm(request.POST or None) if signup else None
    if request.method == "POST" and not request.user.is_authenticated and form is None:
        return redirect(request.path)
    if request.method == "POST" and form is not None and not refusal:
        try:
            signup_by_address().hit(client_address(request))
        except RateLimited as exc:
            return too_many(request, exc)
    if request.method == "POST" and not refusal and (form is None or form.is_valid()):
        user = request.user
        if form is not None:
            user = form.save(commit=False)
            user.role = Role.STUDENT
            user.save()
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return _join(request, user, code, prompt, confirmed=True, seen=request.POST.get("privacy_level") or None)
    if form is not None and refusal:
        form.is_valid()  # its own errors are shown beside the privacy one, and nothing typed is lost
    context = {
        "sso_options": sso_options,
        "prompt": prompt,
        "form": form,
        "already_joined": request.user.is_authenticated and prompt.is_enrolled(request.user),
        "visibility": STUDENT_SENTENCES[prompt.chat_visibility],
        "privacy_refusal": refusal,
        "privacy_confirmed": request.POST.get("privacy_confirmed") == "1",
        "state_sentence": state_sentence(prompt) if prompt.state() != PromptState.OPEN else "",
        "reset_by_mail": mail_configured(),  # then a new student is told why to add an address
    }
    return render(request, "registration/join.html", context)


@require_http_methods(["GET"])
def join_privacy(request, code: str):
    """The privacy notice of the prompt this join code opens, for anyone holding the code: what a
    visitor confirms on the join page before an account exists."""
    prompt = _linked_prompt(request, code)
    if isinstance(prompt, HttpResponse):
        return prompt
    context = {"prompt": prompt, "notice": notice(prompt), "join_code": prompt.join_code}
    return render(request, "prompts/privacy.html", context)


def _privacy_refusal(request, prompt: Prompt) -> str:
    """Why the join page's POST cannot enroll yet: the box not ticked, or the level raised while the
    student read it; empty when confirmed. Checked before an account is made for the join."""
    if request.POST.get("privacy_confirmed") != "1":
        return str(NOT_CONFIRMED)
    try:
        levels.level_to_confirm(prompt, request.POST.get("privacy_level") or None)
    except CurreChatError as exc:
        return str(exc)
    return ""


def _join(request, user, code: str, prompt: Prompt, *, confirmed: bool, seen: str | None):
    try:
        join_prompt(user, code, confirmed=confirmed, seen_level=seen)
    except CurreChatError as exc:
        messages.error(request, str(exc))
        # The confirmation is asked again on the join page; any other refusal ends at home.
        confirm_again = getattr(exc, "field", None) == "privacy_confirmed" or exc.code == "conflict"
        return redirect("join_link", code=prompt.join_code) if confirm_again else redirect("home")
    messages.success(request, _joined(prompt))
    return redirect("chat_home", pk=prompt.pk)


def _joined(prompt: Prompt) -> str:
    """The welcome after joining: ask away when the prompt is open, otherwise when it opens (or why
    it cannot be used), never an invitation to ask what would be refused."""
    if prompt.state() == PromptState.OPEN:
        return _("You joined “%(name)s”. Ask your first question below.") % {"name": prompt.name}
    joined = _("You joined “%(name)s”.") % {"name": prompt.name}
    return f"{joined} {state_sentence(prompt)}"


def _linked_prompt(request, code: str) -> Prompt | HttpResponse:
    """The prompt a join link's code opens, or the page to answer with instead: a 429 when this
    address guessed too many codes, a 404 for an unknown or inactive one (which counts as a guess)."""
    try:
        return limit_failures(join_by_address(), client_address(request), lambda: _prompt_for_link(code))
    except RateLimited as exc:
        return too_many(request, exc)
    except NotFound as exc:
        return render(request, "error.html", {"title": _("Not found"), "message": str(exc)}, status=404)


def _prompt_for_link(code: str) -> Prompt:
    prompt = Prompt.objects.filter(join_code=code.upper()).exclude(active=False).select_related("owner").first()
    if prompt is None:
        raise NotFound(_("This join link is not valid any more. Ask your teacher for a new one."))
    return prompt


def _prompt_for_code(code: str) -> Prompt:
    prompt = Prompt.objects.filter(join_code=code.strip().upper()).exclude(active=False).first()
    if prompt is None:
        raise NotFound(_("No active assistant has this join code. Check the code with your teacher."))
    return prompt
