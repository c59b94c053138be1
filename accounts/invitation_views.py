"""The owner's "Invite someone without an account" section and its two actions, the same for a
prompt and a collection (accounts/invitations.py writes them; `chat.course.views` and
`collections_app.views` plug in how they find the thing, through the access rules, and draw its page).

An invitation is mailed to the address when a mail server is set up, and its link is also shown to
the owner on that one response (never stored or redirected), to send another way if they prefer.
"""

from __future__ import annotations

import logging
import smtplib

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.mail import EmailMessage
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import URLPattern, path, reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.invitations import CoTeaching, Invitation
from accounts.picker import invitations_section, unfound_address
from accounts.resets import mail_configured
from kernel.errors import CurreChatError, InvalidInput

log = logging.getLogger(__name__)


def invitation_url(request, raw: str) -> str:
    return request.build_absolute_uri(reverse("invitation", args=[raw]))


def mail_invitation(request, invitation: Invitation, raw: str) -> bool:
    """Mail the link to the invited address, in the inviter's language; False when no mail server is
    set up or it fails (the owner still has the link on the page)."""
    if not mail_configured():
        return False
    inviter = request.user
    context = {"inviter": inviter.display_name, "target": invitation.target, "link": invitation_url(request, raw)}
    context["kind"] = invitation.target._meta.model_name
    context["days"] = settings.TEACHER_INVITATION_DAYS
    with translation.override(inviter.language or translation.get_language() or settings.LANGUAGE_CODE):
        subject = _("%(name)s invites you to co-teach on CurreChat") % {"name": inviter.display_name}
        body = render_to_string("accounts/invitation_mail.txt", context)
    try:
        EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [invitation.email]).send()
    except (smtplib.SMTPException, OSError):
        log.exception("Could not mail invitation %s", invitation.pk)
        return False
    return True


class InvitationViews:
    """A kind's invite and withdraw views, routed as `<kind>_invite` and `<kind>_withdraw_invitation`
    (the kind is `coteaching.field`, e.g. "prompt"): `coteaching` (its writer), `page_name` (the URL
    name of the page that holds the section), `find` (the thing for a user and its pk, through the
    access rules) and `page` (draws that page: `page(request, target, form=None, *, status=,
    invitations=)`, with an unbound form when none is given)."""

    def __init__(self, coteaching: CoTeaching, page_name: str, *, find, page) -> None:
        self.coteaching = coteaching
        kind = coteaching.field
        self.names = (f"{kind}_invite", f"{kind}_withdraw_invitation", page_name)
        self.find = find
        self.page = page

    def urls(self) -> list[URLPattern]:
        """The invite and withdraw routes (signed-in users' POSTs only), below the thing's own prefix."""
        invite, withdraw = login_required(require_POST(self.invite)), login_required(require_POST(self.withdraw))
        return [
            path("<int:pk>/invitations/", invite, name=self.names[0]),
            path("<int:pk>/invitations/<int:invitation_id>/withdraw/", withdraw, name=self.names[1]),
        ]

    def get_target(self, request, pk: int):
        return self.find(request.user, pk)

    def render_page(self, request, target, *, status: int = 200, invitations: dict | None = None):
        return self.page(request, target, status=status, invitations=invitations)

    def page_with_form(self, request, target, form, picker_field: str):
        """The page with `form` as the owner left it (unsaved): the section offers to invite the
        address typed into the co-teacher picker (`picker_field`) that matched no account."""
        section = self.section(request, target, email=unfound_address(form, picker_field))
        return self.page(request, target, form, invitations=section)

    def section(self, request, target, *, new=None, error: str = "", email: str = "", sent=False) -> dict | None:
        """The section's context for the owner (None for anyone else: they see no section)."""
        if not self.coteaching.may_change(request.user, target):
            return None
        invite, withdraw, _page = self.names
        context = invitations_section(
            request,
            target.invitations.all(),
            invite_url=reverse(invite, args=[target.pk]),
            withdraw_url=lambda i: reverse(withdraw, args=[target.pk, i.pk]),
            new=new,
            error=error,
            email=email,
        )
        context["sent"] = sent
        context["guest_only"] = not settings.TEACHER_INVITATIONS
        return context

    def invite(self, request, pk: int):
        """POST: an invitation for the address typed, mailed and shown on this response only."""
        target = self.get_target(request, pk)
        email = request.POST.get("email", "")
        try:
            new = self.coteaching.invite(request.user, target, email)
        except InvalidInput as exc:
            section = self.section(request, target, error=str(exc), email=email)
            return self.render_page(request, target, status=400, invitations=section)
        sent = mail_invitation(request, *new)
        return self.render_page(request, target, invitations=self.section(request, target, new=new, sent=sent))

    def invite_after_save(self, request, target, addresses: list[str]) -> None:
        """The addresses the owner chose to invite when saving the form: each gets an invitation
        mailed, and the owner is told (with the link when it could not be mailed)."""
        for address in addresses:
            try:
                invitation, raw = self.coteaching.invite(request.user, target, address)
            except CurreChatError as exc:  # refused (e.g. not the owner): said, and the saved form stays saved
                messages.error(request, str(exc))
                continue
            if mail_invitation(request, invitation, raw):
                sentence = _("An invitation to co-teach was mailed to %(address)s.")
                messages.success(request, sentence % {"address": invitation.email})
            else:
                sentence = _("Mail could not be sent here. Send %(address)s this invitation link yourself: %(link)s")
                messages.warning(
                    request, sentence % {"address": invitation.email, "link": invitation_url(request, raw)}
                )

    def withdraw(self, request, pk: int, invitation_id: int):
        target = self.get_target(request, pk)
        invitation = self.coteaching.withdraw(request.user, target, invitation_id)
        sentence = _("The invitation for %(address)s is withdrawn; its link no longer works.")
        messages.success(request, sentence % {"address": invitation.email})
        return redirect(f"{reverse(self.names[2], args=[pk])}#invitations")
