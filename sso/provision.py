"""What a verified sign-in does in CurreChat: the account it reaches (made at the first sign-in,
or an existing local one linked by an address its owner confirmed to CurreChat when
SSO_LINK_VERIFIED_EMAIL allows), and the role the provider's attributes give it, decided again at
every sign-in. An existing account an identity joins keeps no other way in (`_take_over`).

Both protocols hand over a `Person`; this module is the one home of the rules.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Role, User
from kernel.errors import CurreChatError
from sso.models import Protocol, SsoIdentity

log = logging.getLogger(__name__)


class SignInRefused(CurreChatError):
    """A sign-in that was verified, or failed to verify, and is not let in. Nothing was created."""

    status_code = 403
    code = "not_allowed"


@dataclass(frozen=True)
class Person:
    """What the provider said about the person, after its signature and audience were checked."""

    protocol: Protocol
    issuer: str
    subject: str
    name: str = ""
    given_name: str = ""
    family_name: str = ""
    email: str = ""
    email_verified: bool = False
    language: str = ""
    affiliations: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    person_id: str = ""

    @property
    def first_and_last(self) -> tuple[str, str]:
        first = self.given_name or (self.name.split(" ", 1)[0] if self.name else "")
        last = self.family_name or (self.name.split(" ", 1)[1] if " " in self.name else "")
        return first[:150], last[:150]


def values(raw) -> tuple[str, ...]:
    """A claim or attribute as a tuple of strings: a list, or one string of space-separated values."""
    if raw is None:
        return ()
    items: Iterable = raw if isinstance(raw, list | tuple) else str(raw).split()
    return tuple(str(item).strip() for item in items if str(item).strip())


def _unscoped(value: str) -> str:
    # eduPersonScopedAffiliation: "faculty@uni.example" is faculty at that university.
    return value.split("@", 1)[0].strip().casefold()


def role_for(person: Person) -> Role:
    """Teacher when any affiliation or group is one of SSO_TEACHER_VALUES; student when one is in
    SSO_STUDENT_VALUES (or that list is empty); anyone else is refused with a sentence."""
    held = {_unscoped(v) for v in (*person.affiliations, *person.groups)}
    if held & {v.casefold() for v in settings.SSO_TEACHER_VALUES}:
        return Role.TEACHER
    students = {v.casefold() for v in settings.SSO_STUDENT_VALUES}
    if not students or held & students:
        return Role.STUDENT
    raise SignInRefused(
        _(
            "Your account at %(name)s is not one of a student or a teacher, so it cannot use CurreChat. "
            "If this is wrong, contact your university's IT help desk."
        )
        % {"name": settings.SSO_NAME}
    )


def username_for(issuer: str, subject: str) -> str:
    """A stable username from the issuer and subject (never from a name or an address)."""
    return "sso-" + hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()[:20]


def sign_in(person: Person) -> User:
    """The account `person` reaches, made or linked if need be, with role and profile updated."""
    if not person.subject:
        raise SignInRefused(_("The sign-in service sent no identifier for you, so CurreChat cannot tell who you are."))
    role = role_for(person)  # refused before anything is made
    key = {"issuer": person.issuer, "subject": person.subject}
    reached = SsoIdentity.reach(key, person.person_id, lambda: _link(person, role))
    if reached is None:
        raise SignInRefused(_("Signing in did not complete. Try again."))
    identity, made = reached
    if not made:
        SsoIdentity.objects.filter(pk=identity.pk).update(last_sign_in=timezone.now())
    user = identity.user
    if not user.is_active:
        raise SignInRefused(_("Your CurreChat account is deactivated. Ask your administrator."))
    _update(user, person, role)
    return user


def _link(person: Person, role: Role) -> dict[str, Any]:
    """A new identity's other fields: the account it joins (an existing one, taken over) or a new one."""
    existing = _existing_account(person)
    if existing is not None:
        _take_over(existing, person)
    return {"protocol": person.protocol, "user": existing or _new_account(person, role)}


def person_id_linking() -> bool:
    """Whether the deployment named the attribute that carries the university's person identifier."""
    return bool(settings.OIDC_CLAIM_PERSON_ID or settings.SAML_ATTRIBUTE_PERSON_ID)


def shared_account(person_id: str) -> User | None:
    """The one account that a campus sign-in, or a launch from a platform whose administrator turned
    on `share_person_id`, already reached with this person identifier (the provider's
    OIDC_CLAIM_PERSON_ID / SAML_ATTRIBUTE_PERSON_ID, the platform's lis.person_sourcedid). None when
    linking is off, the value is empty or ambiguous, or the account is a staff member's or a
    superuser's: a platform's identifier is typed by its administrators, so it never leads into an
    account that runs CurreChat (an administrator links those by hand). A platform whose switch is
    off counts for nothing here (lti/provision.py asks only for a platform whose switch is on)."""
    if not (person_id and person_id_linking()):
        return None
    # Through the user's identities (lti declares `lti_identities` on the user): sign-in needs no
    # import of the learning-platform app, which sits above it and asks this function.
    reached = Q(sso_identities__person_id=person_id) | Q(
        lti_identities__person_id=person_id, lti_identities__platform__share_person_id=True
    )
    users = set(User.objects.filter(reached).values_list("pk", flat=True))
    if len(users) != 1:
        return None
    return User.objects.filter(pk=users.pop(), is_superuser=False, is_staff=False).first()


def _existing_account(person: Person) -> User | None:
    """An account to link: the same person's LTI account (a shared person identifier), or a local
    account, only with SSO_LINK_VERIFIED_EMAIL, only by an address the provider vouches for and
    the account's owner confirmed to CurreChat (accounts/confirmation.py), only when exactly one
    account has it, never an LTI account by its address, and never a superuser's (an
    administrator links those by hand)."""
    shared = shared_account(person.person_id)
    if shared is not None:
        # Launches through this identifier now share an account with a campus identity: they never
        # open it once it is a staff or superuser account (lti/provision.py).
        shared.lti_identities.filter(person_id=person.person_id).update(joined_by_person_id=True)
        return shared
    if not (settings.SSO_LINK_VERIFIED_EMAIL and person.email and person.email_verified):
        return None
    # Only an address the owner proved by following CurreChat's link: one typed on a profile, or
    # set by an administrator or a teacher, would let whoever typed it hand the account to the
    # address's owner, or a stranger's sign-in take an account its holder keeps a password for.
    # Not an account a learning platform reached: whoever launches from there would keep a way in.
    matches = list(
        User.objects.filter(
            email_confirmed__iexact=person.email, email__iexact=person.email, lti_identities__isnull=True
        )[:2]
    )
    if len(matches) != 1:
        if matches:
            raise SignInRefused(
                _("Several CurreChat accounts have your address, so none was linked. Ask your administrator.")
            )
        return None
    user = matches[0]
    if user.is_superuser or SsoIdentity.objects.filter(user=user, issuer=person.issuer).exists():
        return None
    return user


def _take_over(user: User, person: Person) -> None:
    """A campus identity joins an existing account: nobody who held it before keeps a way in. Its
    password stops working (a new unusable one also ends its other sessions: Django checks every
    session against the password hash, and the sign-in that follows starts with the new one), and
    its API tokens are revoked. With LOCAL_LOGIN letting them, its owner may set a password again
    through a reset link from a superuser."""
    user.set_unusable_password()
    user.save(update_fields=["password"])
    revoked, _kinds = user.api_tokens.all().delete()
    log.info(
        "Campus identity %s @ %s joined account %s: password unusable, %s API token(s) revoked",
        person.subject,
        person.issuer,
        user.pk,
        revoked,
    )


def _new_account(person: Person, role: Role) -> User:
    username = username_for(person.issuer, person.subject)
    if User.objects.filter(username=username).exists():
        # An earlier account of this person whose link an administrator removed stays theirs alone.
        username = f"{username}-{secrets.token_hex(3)}"
    user = User(username=username, role=role)
    user.set_unusable_password()  # the university keeps the password
    user.save()
    return user


def _update(user: User, person: Person, role: Role) -> None:
    """Profile and role as the provider says now: a demotion takes effect at this sign-in, and every
    check (pages, API, open websockets) reads the role from the database at the next action."""
    first, last = person.first_and_last
    # Names and address only when the provider sends them (an omitted claim erases nothing).
    wanted: dict[str, object] = {
        field: value
        for field, value in (("first_name", first), ("last_name", last), ("email", person.email[:254]))
        if value
    }
    language = person.language[:2].lower()
    if language in dict(settings.LANGUAGES) and not user.language:  # the user's own choice wins
        wanted["language"] = language
    if not user.is_superuser:  # superusers are made and unmade by hand only
        # A co-teacher by invitation stays one while the university calls them a student: the
        # invitation, not the university, made them that (a teacher's role is the university's).
        wanted["role"] = Role.GUEST if (user.role == Role.GUEST and role == Role.STUDENT) else role
        if settings.SSO_STAFF_GROUPS:
            staff = {g.casefold() for g in settings.SSO_STAFF_GROUPS}
            wanted["is_staff"] = any(g.casefold() in staff for g in person.groups)
    changed = [field for field, value in wanted.items() if getattr(user, field) != value]
    for field in changed:
        setattr(user, field, wanted[field])
    if changed:
        user.save(update_fields=changed)
