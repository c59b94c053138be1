"""The page an invitation to co-teach opens (accounts/invitations.py).

GET only shows what the invitation is for and how to accept it: a link followed from a mail client
or another site changes nothing. Accepting is a POST — as the teacher already signed in, by making
an account (a co-teacher of this one thing; a teacher when an administrator allows that,
TEACHER_INVITATIONS), or by campus sign-in first
(the intent kept in this browser's session, as the join link does, and completed by the GET that the
sign-in comes back to). A used, withdrawn or expired link says so; an unknown one says nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from accounts.invitations import NOT_A_TEACHER, Invitation
from accounts.models import Role, User
from chat.course import writes as prompt_writes
from chat.models import PromptInvitation
from collections_app import writes as collection_writes
from collections_app.models import CollectionInvitation
from kernel.errors import CurreChatError
from kernel.ratelimit import RateLimited, client_address, signup_by_address
from sso.config import invitation_sign_up_allowed, sign_in_options

SSO_INVITATION_KEY = "sso_invitation"

# Per kind: how accepting is written, where the new co-teacher lands, and what they are told.
_KINDS: dict[type[Invitation], tuple[Callable[..., Any], str, Promise]] = {
    CollectionInvitation: (
        collection_writes.COLLECTION_INVITATIONS.accept,
        "collection_detail",
        gettext_lazy("You are now a co-owner of the collection “%(name)s”."),
    ),
    PromptInvitation: (
        prompt_writes.PROMPT_INVITATIONS.accept,
        "prompt_detail",
        gettext_lazy("You are now a co-teacher of “%(name)s”."),
    ),
}


class TeacherSignupForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "first_name", "last_name")


def _find(token: str) -> Invitation | None:
    for model in _KINDS:
        found = model.objects.select_related("created_by").by_token(token)
        if found is not None:
            return found
    return None


@require_http_methods(["GET", "POST"])
def invitation_page(request, token: str):
    invitation = _find(token)
    if invitation is None:
        message = _(
            "This invitation link is not valid. Check that it was copied whole, or ask the teacher who sent it "
            "for a new one."
        )
        return render(request, "error.html", {"title": _("Not found"), "message": message}, status=404)
    context = {
        "invitation": invitation,
        "target": invitation.target,
        "kind": _kind_name(invitation),
        "guest_only": not settings.TEACHER_INVITATIONS,  # accepting gives this one thing, nothing more
    }
    refusal = invitation.refusal()
    if refusal:
        return render(request, "registration/invitation.html", {**context, "refusal": refusal}, status=410)
    user = request.user
    if user.is_authenticated:
        after_sign_in = request.session.get(SSO_INVITATION_KEY) == invitation.token_hash
        if request.method == "POST" or after_sign_in:
            request.session.pop(SSO_INVITATION_KEY, None)
            return _accept(request, invitation, user, context)
        if not (user.may_co_teach or _proves_address(request, user, invitation)):
            context["refusal"] = _not_a_teacher(request)
        return render(request, "registration/invitation.html", context)
    sso_options = sign_in_options(request.path)
    if request.method == "POST" and request.POST.get("sso"):
        chosen = next((o for o in sso_options if o.protocol == request.POST["sso"]), None)
        if chosen is not None:
            request.session[SSO_INVITATION_KEY] = invitation.token_hash
            # A page that moves on by itself, not a redirect: browsers hold a form's redirects to
            # the page's CSP form-action, which names no identity provider.
            return render(request, "sso/continue.html", {"url": chosen.url, "label": chosen.label})
    form = TeacherSignupForm(request.POST or None) if invitation_sign_up_allowed() else None
    if request.method == "POST" and form is not None:
        try:
            signup_by_address().hit(client_address(request))
        except RateLimited as exc:
            response = render(request, "error.html", {"title": _("Too many attempts"), "message": str(exc)}, status=429)
            response["Retry-After"] = str(exc.retry_after)
            return response
        if form.is_valid():
            return _sign_up_and_accept(request, invitation, form, context)
    context.update({"sso_options": sso_options, "form": form})
    return render(request, "registration/invitation.html", context, status=400 if form and form.errors else 200)


def _sign_up_and_accept(request, invitation: Invitation, form: TeacherSignupForm, context: dict):
    """A teacher account with the invited address, made only if accepting succeeds too."""
    accept, url_name, sentence = _KINDS[type(invitation)]
    try:
        with transaction.atomic():
            user = form.save(commit=False)
            # A co-teacher of this one thing, unless an administrator lets invitations make teachers.
            user.role = Role.TEACHER if settings.TEACHER_INVITATIONS else Role.GUEST
            user.email = invitation.email
            user.save()
            target = accept(invitation, user)
    except CurreChatError as exc:
        return render(request, "registration/invitation.html", {**context, "refusal": str(exc)}, status=403)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    messages.success(request, str(sentence) % {"name": target.name})
    return redirect(url_name, pk=target.pk)


def _proves_address(request, user: User, invitation: Invitation) -> bool:
    """Whether a signed-in account shows it is the person invited: its address is the invited one,
    as the university gave it at this campus sign-in or as its owner confirmed it by mail. Only then
    does an account that is a student's become a co-teacher by invitation: a forwarded link makes no
    student a teacher of their course."""
    proven = user.email if request.session.get("sso_protocol") else user.email_confirmed
    return bool(proven) and proven.casefold() == invitation.email.casefold()


def _accept(request, invitation: Invitation, user: User, context: dict):
    accept, url_name, sentence = _KINDS[type(invitation)]
    as_guest = _proves_address(request, user, invitation)
    if not (user.may_co_teach or as_guest):
        return render(
            request, "registration/invitation.html", {**context, "refusal": _not_a_teacher(request)}, status=403
        )
    try:
        target = accept(invitation, user, as_guest=as_guest)
    except CurreChatError as exc:
        status = exc.status_code
        return render(request, "registration/invitation.html", {**context, "refusal": str(exc)}, status=status)
    messages.success(request, str(sentence) % {"name": target.name})
    return redirect(url_name, pk=target.pk)


def _not_a_teacher(request) -> str:
    if request.session.get("sso_protocol"):  # the university decides the role, at every sign-in
        return _(
            "Your account at %(name)s is not a teacher's, and %(name)s decides who is a teacher here, so it cannot "
            "co-teach. If this is wrong, ask %(name)s's IT help desk or the site's administrator."
        ) % {"name": settings.SSO_NAME}
    return str(NOT_A_TEACHER)


def _kind_name(invitation: Invitation) -> str:
    return "collection" if isinstance(invitation, CollectionInvitation) else "prompt"
