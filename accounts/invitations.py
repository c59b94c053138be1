"""Invitations to co-teach, for a person who has no account yet.

A collection's or a prompt's owner names an address nobody has; CurreChat makes a link with a random
token (only its SHA-256 is stored, as for API tokens) that is valid for one use within
TEACHER_INVITATION_DAYS, for that one collection or prompt. Whoever opens it may accept it: the
account that accepts becomes a co-teacher, and nobody else gains anything. The person may make an
account on the link, or sign in with campus sign-in there, without an administrator: that account is
a co-teacher by invitation (`Role.GUEST`), who teaches only what they were invited to and cannot make
prompts or collections (unless an administrator lets invitations make full teacher accounts,
TEACHER_INVITATIONS, or the university says at sign-in that they are a teacher, sso/provision.py).

The concrete models belong to what they invite to (`collections_app.models.CollectionInvitation`,
`chat.models.PromptInvitation`); each app's write module describes its kind in one `CoTeaching`
(who may invite, what accepting adds), and the one writer here does the rest.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import models, transaction
from django.utils import formats, timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import Role, User
from kernel.errors import Forbidden, InvalidInput, NotFound


class InvitationState(StrEnum):
    PENDING = "pending"
    USED = "used"
    WITHDRAWN = "withdrawn"
    EXPIRED = "expired"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class InvitationQuerySet(models.QuerySet):
    def pending(self) -> InvitationQuerySet:
        """Neither used nor withdrawn, and not expired."""
        return self.filter(used_at__isnull=True, withdrawn_at__isnull=True, expires__gt=timezone.now())

    def by_token(self, raw: str):
        """The invitation a raw link token belongs to, in any state, or None."""
        return self.filter(token_hash=hash_token(raw)).first() if raw else None


class Invitation(models.Model):
    """One link to co-teach one thing (the subclass adds the foreign key to it)."""

    email = models.EmailField(gettext_lazy("address"))
    token_hash = models.CharField(gettext_lazy("token hash"), max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=gettext_lazy("invited by"), on_delete=models.CASCADE, related_name="+"
    )
    created = models.DateTimeField(gettext_lazy("created"), auto_now_add=True)
    expires = models.DateTimeField(gettext_lazy("expires"))
    used_at = models.DateTimeField(gettext_lazy("accepted"), null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=gettext_lazy("accepted by"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    withdrawn_at = models.DateTimeField(gettext_lazy("withdrawn"), null=True, blank=True)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.email

    @property
    def target(self) -> models.Model:
        raise NotImplementedError

    def state(self) -> InvitationState:
        if self.used_at is not None:
            return InvitationState.USED
        if self.withdrawn_at is not None:
            return InvitationState.WITHDRAWN
        if self.expires <= timezone.now():
            return InvitationState.EXPIRED
        return InvitationState.PENDING

    def refusal(self) -> str:
        """Why the link no longer works, in a sentence the person can act on ("" while pending)."""
        state = self.state()
        if state == InvitationState.USED:
            return _("This invitation has already been used. Ask the teacher who sent it for a new one if you need it.")
        if state == InvitationState.WITHDRAWN:
            return _("The teacher who sent this invitation has withdrawn it. Ask them for a new one if you need it.")
        if state == InvitationState.EXPIRED:
            when = formats.date_format(timezone.localtime(self.expires), "DATE_FORMAT")
            return _("This invitation expired on %(when)s. Ask the teacher who sent it for a new one.") % {"when": when}
        return ""


def clean_address(value: str) -> str:
    """An address to invite: well formed, and no teacher's (a teacher is added by it). A student's
    account may accept it with that address proven (currechat/invitations.py), and co-teaches by
    invitation."""
    email = (value or "").strip()
    try:
        validate_email(email)
    except ValidationError as exc:
        raise InvalidInput(_("Enter the person's email address, e.g. name@university.fi."), field="email") from exc
    holders = list(User.objects.filter(email__iexact=email)[:2])
    if any(user.is_teacher and user.is_active for user in holders):
        sentence = _("%(address)s already has a teacher account: add them as a co-teacher by this address instead.")
        raise InvalidInput(sentence % {"address": email}, field="email")
    return email


def issue(model: type[Invitation], *, actor: User, email: str, **target) -> tuple[Invitation, str]:
    """A new invitation of `model` for `target` (e.g. collection=…) and its raw token, shown once.
    An earlier pending invitation of the same address to the same thing is withdrawn: one link
    per person, so an old copy of it stops working."""
    email = clean_address(email)
    raw = secrets.token_urlsafe(32)
    expires = timezone.now() + timedelta(days=settings.TEACHER_INVITATION_DAYS)
    with transaction.atomic():
        model.objects.pending().filter(email__iexact=email, **target).update(withdrawn_at=timezone.now())
        invitation = model.objects.create(
            email=email, token_hash=hash_token(raw), created_by=actor, expires=expires, **target
        )
    return invitation, raw


def withdraw(invitation: Invitation) -> None:
    """The link stops working at once (a used or expired one stays as it is)."""
    type(invitation).objects.filter(pk=invitation.pk).pending().update(withdrawn_at=timezone.now())


NOT_A_TEACHER = gettext_lazy(
    "You are signed in with a student account, which cannot co-teach. "
    "Log out and open the link again to make an account for co-teaching, or ask the site's administrator."
)


def accept(
    invitation: Invitation,
    user: User,
    *,
    still_allowed: Callable[[User], bool],
    add: Callable[[], None],
    as_guest: bool = False,
):
    """`user` accepts: the invitation is used up and `add()` makes them a co-teacher, in one
    transaction. Refused (nothing changes) when the link no longer works, when `user` may not
    co-teach (a student, unless `as_guest`: the invited address is the account's, proven by campus
    sign-in or a confirmation mail; it then becomes a co-teacher by invitation, Role.GUEST, and is
    left a student if anything else refuses), or when its inviter may no longer change the co-teachers
    (`still_allowed`): the invitation carries the inviter's right as it is now, not as it was."""
    with transaction.atomic():
        locked = type(invitation).objects.select_for_update().get(pk=invitation.pk)
        if locked.state() != InvitationState.PENDING:
            raise Forbidden(locked.refusal())
        if as_guest and user.is_active and user.role == Role.STUDENT and not user.is_staff:
            User.objects.filter(pk=user.pk).update(role=Role.GUEST)
            user.role = Role.GUEST
        if not user.may_co_teach:
            raise Forbidden(str(NOT_A_TEACHER))
        inviter = User.objects.filter(pk=locked.created_by_id, is_active=True).first()
        if inviter is None or not inviter.is_teacher or not still_allowed(inviter):
            raise Forbidden(
                _("This invitation no longer works: its sender can no longer change who teaches here. Ask the owner.")
            )
        type(invitation).objects.filter(pk=locked.pk).update(used_at=timezone.now(), used_by=user)
        add()


@dataclass(frozen=True)
class CoTeaching:
    """The one writer of invitations to co-teach one kind of thing (a prompt, a collection): the
    kind says who may change its teachers and how one is added; inviting, withdrawing and accepting
    are the same for every kind."""

    model: type[Invitation]
    field: str  # the invitation's foreign key to what it invites to, e.g. "prompt"
    relation: str  # what holds its co-teachers, e.g. "co_teachers"
    may_change: Callable[[User, Any], bool]  # may this user change who teaches it, now?
    not_allowed: str | Promise  # the sentence refusing anyone else
    already_owner: str | Promise  # the sentence for an owner opening their own invitation

    def invite(self, actor: User, target: models.Model, email: str) -> tuple[Invitation, str]:
        """An invitation link for an address nobody has, and its raw token (shown once)."""
        self._check(actor, target)
        return issue(self.model, actor=actor, email=email, **{self.field: target})

    def withdraw(self, actor: User, target: models.Model, invitation_id: int) -> Invitation:
        self._check(actor, target)
        invitation = self.model.objects.filter(pk=invitation_id, **{self.field: target}).first()
        if invitation is None:
            raise NotFound(_("There is no such invitation."))
        withdraw(invitation)
        return invitation

    def accept(self, invitation: Invitation, user: User, *, as_guest: bool = False) -> models.Model:
        """`user` becomes a co-teacher through the invitation (`accept` above says when not)."""
        target = invitation.target
        if getattr(target, "owner_id", None) == user.pk:
            raise Forbidden(str(self.already_owner))
        fresh = type(target)._default_manager.filter(pk=target.pk)
        accept(
            invitation,
            user,
            still_allowed=lambda inviter: self.may_change(inviter, fresh.get()),
            add=lambda: getattr(target, self.relation).add(user),
            as_guest=as_guest,
        )
        return target

    def _check(self, actor: User, target: models.Model) -> None:
        if not self.may_change(actor, target):
            raise Forbidden(str(self.not_allowed))
