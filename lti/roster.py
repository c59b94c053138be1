"""Roster sync (LTI Names and Role Provisioning): a course's members as the platform lists them,
applied to CurreChat all at once.

- A learner gets an account as their first launch would make it (the same `user_for_launch`, keyed
  by issuer and `sub`), and is enrolled in the prompts the course links to.
- An instructor becomes a co-teacher of those prompts when the course's teachers chose so.
- A member who left (absent from a full listing, or listed Inactive/Deleted) is removed or blocked,
  as the course's teachers chose; a co-teacher made by a sync stops co-teaching.

A sync that cannot read the whole roster changes nothing and logs a sentence (lti/nrps.py).
"""

from __future__ import annotations

import logging
from collections import Counter

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from chat.course import enrollment
from chat.models import Enrollment, EnrollmentStatus, Prompt
from kernel.errors import CurreChatError, InvalidInput
from lti import nrps
from lti.launch import LaunchRefused
from lti.models import (
    CourseContext,
    CourseMember,
    Leavers,
    LtiIdentity,
    MemberRole,
    ResourceLink,
    SyncLog,
)
from lti.provision import LaunchClaims, user_for_launch

log = logging.getLogger(__name__)
KEEP_LOGS = 20  # the roster page shows the latest; older ones go


def record_course(claims: LaunchClaims, link: ResourceLink | None) -> CourseContext | None:
    """The course a launch names, when it carries the names-and-roles claim (its memberships URL
    kept up to date); None without the claim. The link is tied to the course."""
    url, context_id = claims.memberships_url, claims.context_id
    if not url.startswith(("https://", "http://")) or not context_id:
        return None
    deployment = claims.deployment_id
    course, _created = CourseContext.objects.update_or_create(
        platform=claims.platform,
        context_id=context_id[:255],
        defaults={"memberships_url": url[:1000], "deployment_id": deployment[:255], "title": claims.course[:255]},
    )
    if link is not None and link.course_id != course.pk:
        ResourceLink.objects.filter(pk=link.pk).update(course=course)
    return course


def sync_course(course_id: int, trigger: str) -> SyncLog | None:
    """Read the course's roster and apply it; the log of what happened (None: the course is gone)."""
    course = CourseContext.objects.select_related("platform").filter(pk=course_id).first()
    if course is None:
        return None
    entry = SyncLog(course=course, trigger=trigger)
    platform = course.platform
    if not platform.may_launch:
        entry.errors = [
            _("%(platform)s is switched off in CurreChat, so its roster was not read.") % {"platform": platform.name}
        ]
        entry.save()
        return entry
    full = not course.differences_url
    try:
        roster = nrps.read_roster(platform, course.differences_url or course.memberships_url)
    except nrps.RosterUnavailable as exc:
        entry.errors = [str(exc)]
        entry.save()
        return entry
    with transaction.atomic():
        _apply(course, roster, full=full, entry=entry)
        course.synced = timezone.now()
        course.differences_url = roster.differences_url[:1000]
        course.save(update_fields=["synced", "differences_url"])
        entry.ok = True
        entry.save()
    old = SyncLog.objects.filter(course=course).values_list("pk", flat=True)[KEEP_LOGS:]
    SyncLog.objects.filter(pk__in=list(old)).delete()
    return entry


def _apply(course: CourseContext, roster: nrps.Roster, *, full: bool, entry: SyncLog) -> None:
    prompts = list(Prompt.objects.filter(lti_links__course=course).distinct())
    existing = {m.identity.subject: m for m in course.members.select_related("identity__user")}
    counts: Counter[str] = Counter()
    refusals: Counter[str] = Counter()
    listed: set[str] = set()
    for member in roster.members:
        listed.add(member.user_id)
        row = existing.get(member.user_id)
        if not member.active:
            if row is not None:
                _leave(course, prompts, row)
                counts["removed"] += 1
            continue
        try:
            counts[_join(course, prompts, member, row)] += 1
        except LaunchRefused as refusal:
            refusals[str(refusal)] += 1
    left = [row for subject, row in existing.items() if subject not in listed]
    if full:
        for row in left:
            _leave(course, prompts, row)
        counts["removed"] += len(left)
    else:  # a differences listing names only who changed: everyone else stays as they were
        counts["unchanged"] += len(left)
    entry.added, entry.updated = counts["added"], counts["updated"]
    entry.removed, entry.unchanged = counts["removed"], counts["unchanged"]
    entry.errors = [
        ngettext(
            "%(count)s member was not synced: %(reason)s",
            "%(count)s members were not synced: %(reason)s",
            count,
        )
        % {"count": count, "reason": reason}
        for reason, count in refusals.items()
    ]


def _claims(course: CourseContext, member: nrps.Member) -> LaunchClaims:
    return LaunchClaims(
        platform=course.platform,
        subject=member.user_id,
        roles=member.roles,
        name=member.name,
        given_name=member.given_name,
        family_name=member.family_name,
        email=member.email,
        course=course.title,
        link_id="",
        link_title="",
        custom={},
        person_id=member.person_id,
    )


def _profile(user) -> tuple:
    return (user.first_name, user.last_name, user.email, user.role)


def _join(course: CourseContext, prompts: list[Prompt], member: nrps.Member, row: CourseMember | None) -> str:
    """Add or update one active member: "added", "updated" or "unchanged"."""
    claims = _claims(course, member)
    before = _profile(row.identity.user) if row is not None else None
    user = user_for_launch(claims)  # the account a launch makes, ready for their first launch
    role = MemberRole.INSTRUCTOR if claims.teaches else MemberRole.LEARNER
    if row is None:
        identity = LtiIdentity.objects.get(platform=course.platform, subject=member.user_id)
        row = CourseMember.objects.create(course=course, identity=identity, role=role)
        outcome = "added"
    else:
        outcome = "unchanged" if (before, row.role) == (_profile(user), role) else "updated"
    for prompt in prompts:
        if role == MemberRole.LEARNER:
            # A student the teacher removed by hand while still in the course stays removed: only a
            # new member (or one never enrolled) is enrolled.
            if outcome == "added" or not Enrollment.objects.filter(prompt=prompt, student=user).exists():
                try:
                    enrollment.enroll(prompt, user)
                except CurreChatError:  # blocked, or one of the prompt's teachers: left as they are
                    pass
        elif course.instructors_co_teach and not prompt.is_taught_by(user):
            # The course's teachers chose that its instructors co-teach (the setting on the course).
            prompt.co_teachers.add(user)
            row.co_teacher = True
    if row.role != role or row.co_teacher:
        row.role = role
        row.save(update_fields=["role", "co_teacher"])
    return outcome


def _leave(course: CourseContext, prompts: list[Prompt], row: CourseMember) -> None:
    """A member who left: out of the course's prompts (unless another synced course of the same
    prompt still lists them), as the teachers chose."""
    user = row.identity.user
    block = course.leavers == Leavers.BLOCK
    for prompt in prompts:
        elsewhere = CourseMember.objects.filter(identity=row.identity, course__links__prompt=prompt).exclude(
            course=course
        )
        if elsewhere.exists():
            continue
        if row.co_teacher:
            prompt.co_teachers.remove(user)
        found = Enrollment.objects.filter(prompt=prompt, student=user, status=EnrollmentStatus.ENROLLED).first()
        if found is not None:
            enrollment.remove_student(found, block=block)
    row.delete()


def latest_logs(prompt: Prompt) -> list[tuple[CourseContext, SyncLog | None]]:
    """Each synced course linking to `prompt`, with its latest sync log (for the roster page)."""
    courses = CourseContext.objects.filter(links__prompt=prompt).distinct().order_by("title", "pk")
    return [(course, course.sync_logs.first()) for course in courses]


def change_course(course: CourseContext, *, instructors_co_teach: bool, leavers: str) -> CourseContext:
    """The one write of a course's sync settings (the roster page)."""
    if leavers not in Leavers.values:
        raise InvalidInput(_("Choose whether members who leave are removed or blocked."), field="leavers")
    course.instructors_co_teach, course.leavers = instructors_co_teach, leavers
    course.save(update_fields=["instructors_co_teach", "leavers"])
    return course
