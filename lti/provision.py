"""What a validated launch does in CurreChat: the user it signs in, the prompt its link points to,
and the page it lands on. Enrollment goes through `chat.course.enrollment.enroll`, its one write path.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.urls import reverse
from django.utils.translation import gettext as _

from accounts.models import Role, User
from chat.course import enrollment
from chat.models import Prompt, PromptState
from kernel.errors import Forbidden
from lti import nrps
from lti.config import find_platform
from lti.launch import LaunchRefused, Reason
from lti.models import LtiIdentity, Platform, ResourceLink
from sso.provision import shared_account

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
# Course roles that teach. Sub-roles of Instructor (e.g. TeachingAssistant) teach too.
TEACHING_ROLES = {f"{MEMBERSHIP}#Instructor", f"{MEMBERSHIP}#Administrator", f"{MEMBERSHIP}#ContentDeveloper"}
CUSTOM_CODE = "currechat_join_code"  # the custom parameter a deep-linked resource carries


@dataclass(frozen=True)
class LaunchClaims:
    """The parts of a validated id_token CurreChat uses."""

    platform: Platform
    subject: str
    roles: tuple[str, ...]
    name: str
    given_name: str
    family_name: str
    email: str
    course: str
    link_id: str
    link_title: str
    custom: dict[str, Any]
    person_id: str = ""  # lis.person_sourcedid
    # The course as its roster service knows it (lti/roster.record_course), when the launch names one.
    context_id: str = ""
    deployment_id: str = ""
    memberships_url: str = ""  # the names-and-roles service's context_memberships_url

    @property
    def teaches(self) -> bool:
        return any(r in TEACHING_ROLES or r.startswith(f"{MEMBERSHIP}/Instructor#") for r in self.roles)

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> LaunchClaims:
        aud = body.get("aud")
        client_id = aud[0] if isinstance(aud, list) else aud
        subject = str(body.get("sub") or "")
        if not subject:  # an anonymous launch cannot be tied to a CurreChat user
            raise LaunchRefused(Reason.MALFORMED, "no sub")
        context = body.get(f"{LTI}context") or {}
        link = body.get(f"{LTI}resource_link") or {}
        return cls(
            platform=find_platform(str(body.get("iss")), str(client_id)),
            subject=subject,
            roles=tuple(str(r) for r in body.get(f"{LTI}roles") or []),
            name=str(body.get("name") or ""),
            given_name=str(body.get("given_name") or ""),
            family_name=str(body.get("family_name") or ""),
            email=str(body.get("email") or ""),
            course=str(context.get("title") or context.get("label") or ""),
            link_id=str(link.get("id") or ""),
            link_title=str(link.get("title") or ""),
            custom=dict(body.get(f"{LTI}custom") or {}),
            person_id=str((body.get(f"{LTI}lis") or {}).get("person_sourcedid") or "").strip(),
            context_id=str(context.get("id") or ""),
            deployment_id=str(body.get(f"{LTI}deployment_id") or ""),
            memberships_url=_memberships_url(body),
        )

    @property
    def display_name(self) -> str:
        return self.name or " ".join(p for p in (self.given_name, self.family_name) if p)


def _memberships_url(body: dict[str, Any]) -> str:
    service = body.get(nrps.CLAIM) or {}
    return str(service.get("context_memberships_url") or "") if isinstance(service, dict) else ""


def username_for(platform: Platform, subject: str) -> str:
    """A stable username from issuer and subject (the same person from two platforms is two users)."""
    digest = hashlib.sha256(f"{platform.issuer}\n{subject}".encode()).hexdigest()[:20]
    return f"lti-{digest}"


def user_for_launch(claims: LaunchClaims) -> User:
    """The launch's user: created on the first launch, names and email kept as the platform says.

    An instructor becomes a teacher; nobody is demoted (a teacher who is a learner in another course
    keeps their prompts). A deactivated account stays out.
    """
    key = {"platform": claims.platform, "subject": claims.subject}
    reached = LtiIdentity.reach(key, claims.person_id, lambda: _account(claims), vet=_refuse_joined_staff)
    if reached is None:
        raise LaunchRefused(Reason.MALFORMED, "identity race")
    user = reached[0].user
    if not user.is_active:
        raise LaunchRefused(
            Reason.NOT_ALLOWED, message=_("Your CurreChat account is deactivated. Ask your administrator.")
        )
    _update_profile(user, claims)
    return user


def _account(claims: LaunchClaims) -> dict[str, Any]:
    """A new identity's account: the same person's campus sign-in's, when the platform's administrator
    turned sharing on and platform and provider agree on an identifier (never a staff or superuser
    account: shared_account), or a new one."""
    shared = shared_account(claims.person_id) if claims.platform.share_person_id else None
    return {"user": shared or _new_user(claims), "joined_by_person_id": shared is not None}


def _refuse_joined_staff(identity: LtiIdentity) -> None:
    """An identity that shares its account with a campus sign-in through a person identifier never
    opens it once the account is a staff member's or a superuser's (a promotion after the sharing
    began included): the identifier is the platform's word. An administrator's own link stands."""
    user = identity.user
    if identity.joined_by_person_id and (user.is_staff or user.is_superuser):
        raise LaunchRefused(
            Reason.NOT_ALLOWED,
            message=_(
                "This CurreChat account is an administrator's, so the learning platform cannot open it. "
                "Sign in to CurreChat directly instead."
            ),
        )


def _new_user(claims: LaunchClaims) -> User:
    user = User(username=username_for(claims.platform, claims.subject), role=Role.STUDENT)
    user.set_unusable_password()
    user.save()
    return user


def _update_profile(user: User, claims: LaunchClaims) -> None:
    changed = []
    first = claims.given_name or (claims.name.split(" ", 1)[0] if claims.name else "")
    last = claims.family_name or (claims.name.split(" ", 1)[1] if " " in claims.name else "")
    for field, value in (("first_name", first[:150]), ("last_name", last[:150]), ("email", claims.email[:254])):
        if value and getattr(user, field) != value:
            setattr(user, field, value)
            changed.append(field)
    if claims.teaches and user.role != Role.TEACHER:
        user.role = Role.TEACHER
        changed.append("role")
    if changed:
        user.save(update_fields=changed)


def prompt_for_link(claims: LaunchClaims) -> Prompt:
    """The prompt a resource link points to: fixed at its first launch from the join code the link
    carries (the same secret students join with, so a course cannot link to a prompt it was not given)."""
    link = ResourceLink.objects.select_related("prompt").filter(
        platform=claims.platform, resource_link_id=claims.link_id
    )
    row = link.first()
    if row is None:
        code = str(claims.custom.get(CUSTOM_CODE) or "").strip().upper()
        prompt = Prompt.objects.filter(join_code=code).first() if code else None
        if prompt is None:
            raise LaunchRefused(Reason.NO_PROMPT, f"link {claims.link_id!r} without a known join code")
        row, _created = ResourceLink.objects.get_or_create(
            platform=claims.platform, resource_link_id=claims.link_id, defaults={"prompt": prompt}
        )
    if (row.context_title, row.title) != (claims.course[:255], claims.link_title[:255]):
        row.context_title, row.title = claims.course[:255], claims.link_title[:255]
        row.save(update_fields=["context_title", "title"])
    return row.prompt


def landing_url(claims: LaunchClaims, user: User, prompt: Prompt) -> str:
    """Where a resource launch lands: teachers on the prompt page, learners (enrolled now) in its chat."""
    if prompt.is_taught_by(user):
        return reverse("prompt_detail", args=[prompt.pk]) if claims.teaches else reverse("chat_home", args=[prompt.pk])
    if claims.teaches:
        raise LaunchRefused(
            Reason.NOT_ALLOWED,
            message=_(
                "You teach this course in the learning platform, but this assistant belongs to another teacher in "
                "CurreChat. Ask its owner to add you as a co-teacher."
            ),
        )
    if prompt.state() == PromptState.OFF:
        raise LaunchRefused(Reason.NOT_ALLOWED, message=_("This assistant is switched off. Ask your teacher."))
    try:
        enrollment.enroll(prompt, user)
    except Forbidden as exc:  # blocked by the teacher: stays blocked
        raise LaunchRefused(Reason.NOT_ALLOWED, message=str(exc))
    return reverse("chat_home", args=[prompt.pk])
