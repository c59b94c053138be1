"""The roster page's platform part: a teacher of a prompt syncs its courses now, and chooses per
course what a sync does with instructors and with members who left. The page itself is the
prompt's (chat/course/views.py); the panel comes from lti/templatetags/lti_roster.py."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from access.rules import get_prompt_for_edit
from kernel.errors import NotFound
from lti.models import CourseContext, Leavers
from lti.roster import change_course
from lti.tasks import request_sync


def _back(pk: int):
    return redirect(f"{reverse('prompt_detail', args=[pk])}#lms-roster")


@login_required
@require_POST
def sync_now(request, pk: int):
    prompt = get_prompt_for_edit(request.user, pk)
    courses = list(CourseContext.objects.filter(links__prompt=prompt).distinct())
    for course in courses:
        request_sync(course, "teacher")
    if courses:
        messages.success(request, _("Roster sync started. Reload this page in a moment to see what it did."))
    else:
        messages.error(request, _("No course of a learning platform has shared its roster with this prompt yet."))
    return _back(pk)


@login_required
@require_POST
def course_settings(request, pk: int, course_id: int):
    prompt = get_prompt_for_edit(request.user, pk)
    course = CourseContext.objects.filter(pk=course_id, links__prompt=prompt).first()
    if course is None:
        raise NotFound(_("This prompt is not linked to that course."))
    leavers = request.POST.get("leavers", Leavers.REMOVE)
    change_course(course, instructors_co_teach=request.POST.get("instructors_co_teach") == "1", leavers=leavers)
    messages.success(request, _("The course's sync settings are saved; they apply from the next sync."))
    return _back(pk)
