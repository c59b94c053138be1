"""A platform's course as CurreChat syncs it (LTI Names and Role Provisioning, lti/roster.py):
where its roster is read, what the teachers chose for it, who was in it at the last sync, and
what each sync did."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Leavers(models.TextChoices):
    REMOVE = "remove", _("remove them (they may join again with the code)")
    BLOCK = "block", _("remove and block them")


class CourseContext(models.Model):
    """One course (LTI context) of one platform whose launches carry the names-and-roles claim."""

    platform = models.ForeignKey(
        "lti.Platform", verbose_name=_("learning platform"), on_delete=models.CASCADE, related_name="courses"
    )
    context_id = models.CharField(_("course ID"), max_length=255)
    deployment_id = models.CharField(_("deployment ID"), max_length=255)
    title = models.CharField(_("course"), max_length=255, blank=True)
    memberships_url = models.URLField(_("memberships URL"), max_length=1000)
    # The platform's link to the changes since the last read (NRPS `rel="differences"`).
    differences_url = models.URLField(_("differences URL"), max_length=1000, blank=True)
    instructors_co_teach = models.BooleanField(_("instructors become co-teachers"), default=False)
    leavers = models.CharField(_("members who leave"), max_length=8, choices=Leavers.choices, default=Leavers.REMOVE)
    synced = models.DateTimeField(_("last synced"), null=True, blank=True)
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("LMS course")
        verbose_name_plural = _("LMS courses")
        constraints = [models.UniqueConstraint(fields=["platform", "context_id"], name="lti_course_platform_context")]

    def __str__(self) -> str:
        return self.title or self.context_id


class MemberRole(models.TextChoices):
    LEARNER = "learner", _("learner")
    INSTRUCTOR = "instructor", _("instructor")


class CourseMember(models.Model):
    """Someone the last sync found in the course (who left is found by comparing with this)."""

    course = models.ForeignKey(
        CourseContext, verbose_name=_("course"), on_delete=models.CASCADE, related_name="members"
    )
    identity = models.ForeignKey(
        "lti.LtiIdentity", verbose_name=_("identity"), on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(_("role"), max_length=16, choices=MemberRole.choices)
    # Made a co-teacher of the course's prompts by a sync (so a sync may take it back when they leave).
    co_teacher = models.BooleanField(_("made a co-teacher by a sync"), default=False)

    class Meta:
        verbose_name = _("course member")
        verbose_name_plural = _("course members")
        constraints = [models.UniqueConstraint(fields=["course", "identity"], name="lti_member_course_identity")]


class SyncLog(models.Model):
    """What one sync of a course did; errors are sentences a teacher can act on."""

    course = models.ForeignKey(
        CourseContext, verbose_name=_("course"), on_delete=models.CASCADE, related_name="sync_logs"
    )
    trigger = models.CharField(_("started by"), max_length=16)  # "launch", "daily" or "teacher"
    started = models.DateTimeField(_("started at"), auto_now_add=True)
    ok = models.BooleanField(_("completed"), default=False)
    added = models.PositiveIntegerField(_("added"), default=0)
    updated = models.PositiveIntegerField(_("updated"), default=0)
    removed = models.PositiveIntegerField(_("removed"), default=0)
    unchanged = models.PositiveIntegerField(_("unchanged"), default=0)
    errors = models.JSONField(_("errors"), default=list)

    class Meta:
        verbose_name = _("roster sync")
        verbose_name_plural = _("roster syncs")
        ordering = ["-started", "-pk"]
