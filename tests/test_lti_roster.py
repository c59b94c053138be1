"""Roster sync (LTI Names and Role Provisioning) against the test platform's real HTTP endpoints
(tests/lti_platform_http.py): its token endpoint checks CurreChat's signed assertion against
CurreChat's key set, its memberships endpoint pages and offers a differences link."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from accounts.models import Role, User
from chat.models import ChatSession, Enrollment, EnrollmentStatus
from lti.models import CourseContext, LtiIdentity, Platform, SyncLog
from lti.nrps import CLAIM
from lti.provision import CUSTOM_CODE
from lti.roster import sync_course
from tests.lti_platform import INSTRUCTOR, LEARNER, TestPlatform, new_private_key
from tests.lti_platform_http import PlatformServer
from tests.websockets import EVENT_SECONDS, open_websocket

ORIGIN = "https://lms.example.test"


@pytest.fixture(scope="module")
def platform_key():
    return new_private_key()


@pytest.fixture
def lms_server():
    server = PlatformServer("currechat-client-1")
    yield server
    server.stop()


@pytest.fixture
def lms(platform_key, settings, lms_server):
    settings.EMBED_ALLOWED_ORIGINS = [ORIGIN]
    platform = TestPlatform(key=platform_key)
    platform.register(auth_token_url=lms_server.token_url)
    lms_server.tool_jwks = Client().get("/lti/jwks/").json()  # what the platform reads from our jwks_uri
    return platform


def nrps_launch(lms, lms_server, prompt, *, sub="learner-1", roles=(LEARNER,)):
    claim = {CLAIM: {"context_memberships_url": lms_server.memberships_url(), "service_versions": ["2.0"]}}
    return lms.launch(Client(), sub=sub, roles=roles, custom={CUSTOM_CODE: prompt.join_code}, **claim)


def enrolled(prompt, subject: str) -> str | None:
    row = Enrollment.objects.filter(prompt=prompt, student__lti_identities__subject=subject).first()
    return row.status if row else None


def course_page(client_for, owner, prompt) -> str:
    return client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()


@pytest.mark.django_db
def test_first_launch_syncs_in_the_worker_and_the_teacher_sees_who_has_not_started(
    lms, lms_server, prompt, owner, client_for, run_worker, django_capture_on_commit_callbacks
):
    lms_server.page_size = 2  # three members: two pages
    lms_server.add("learner-1", LEARNER, "Liisa Learner")
    lms_server.add("learner-2", LEARNER, "Pekka Pupil", lis_person_sourcedid="P-2")
    lms_server.add("teacher-9", INSTRUCTOR, "Ilmari Instructor")
    with django_capture_on_commit_callbacks(execute=True):
        response = nrps_launch(lms, lms_server, prompt)
    assert response.status_code == 302
    assert enrolled(prompt, "learner-2") is None, "the launch does not wait for the platform"
    run_worker()

    assert enrolled(prompt, "learner-2") == EnrollmentStatus.ENROLLED
    pekka = User.objects.get(lti_identities__subject="learner-2")
    assert pekka.get_full_name() == "Pekka Pupil" and not pekka.has_usable_password()
    assert LtiIdentity.objects.get(subject="learner-2").person_id == "P-2"
    teacher = User.objects.get(lti_identities__subject="teacher-9")
    assert teacher.role == Role.TEACHER and not prompt.is_taught_by(teacher), "co-teaching is the teacher's choice"
    log = SyncLog.objects.get()
    assert (log.ok, log.trigger, log.added, log.removed, log.errors) == (True, "launch", 3, 0, [])
    assert lms_server.tokens and not lms_server.refused

    liisa = User.objects.get(lti_identities__subject="learner-1")
    ChatSession.objects.create(prompt=prompt, user=liisa)  # Liisa launched and started a chat
    html = course_page(client_for, owner, prompt)
    assert "3 added, 0 updated, 0 removed, 0 unchanged" in html
    # Pekka (synced, never launched) and the fixture's student who joined by code and never chatted.
    assert "2 students have not started yet." in html
    assert html.count('data-testid="not-started"') == 2

    # Pekka's first launch reaches the account the sync made.
    launched = nrps_launch(lms, lms_server, prompt, sub="learner-2")
    assert launched.status_code == 302 and User.objects.filter(lti_identities__subject="learner-2").count() == 1


@pytest.fixture
def synced(lms, lms_server, prompt, django_capture_on_commit_callbacks, run_worker):
    lms_server.add("learner-1", LEARNER, "Liisa Learner")
    lms_server.add("learner-2", LEARNER, "Pekka Pupil")
    with django_capture_on_commit_callbacks(execute=True):
        nrps_launch(lms, lms_server, prompt)
    run_worker()
    assert enrolled(prompt, "learner-2") == EnrollmentStatus.ENROLLED
    return CourseContext.objects.get()


@pytest.mark.django_db
def test_sync_now_follows_the_differences_link_adding_updating_and_removing(
    synced, lms_server, prompt, owner, client_for, run_worker, django_capture_on_commit_callbacks
):
    assert synced.differences_url.startswith(lms_server.memberships_url() + "?since=")
    lms_server.add("learner-3", LEARNER, "Sanna Student")
    lms_server.update("learner-1", name="Liisa Lahtinen", family_name="Lahtinen")
    lms_server.drop("learner-2")
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(owner).post(f"/lti/prompts/{prompt.pk}/sync/")
    assert answer.status_code == 302
    run_worker()

    assert enrolled(prompt, "learner-3") == EnrollmentStatus.ENROLLED
    assert enrolled(prompt, "learner-2") == EnrollmentStatus.REMOVED
    assert User.objects.get(lti_identities__subject="learner-1").last_name == "Lahtinen"
    log = SyncLog.objects.first()
    assert (log.trigger, log.added, log.updated, log.removed, log.unchanged) == ("teacher", 1, 1, 1, 0)
    assert "1 added, 1 updated, 1 removed, 0 unchanged" in course_page(client_for, owner, prompt)


@pytest.mark.django_db
def test_a_full_sync_blocks_who_left_when_the_teacher_chose_so_and_instructors_co_teach(
    synced, lms_server, prompt, owner, client_for
):
    answer = client_for(owner).post(
        f"/lti/prompts/{prompt.pk}/courses/{synced.pk}/", {"leavers": "block", "instructors_co_teach": "1"}
    )
    assert answer.status_code == 302
    CourseContext.objects.filter(pk=synced.pk).update(differences_url="")  # the platform offered none
    del lms_server.members["learner-2"]  # gone from the listing altogether
    lms_server.add("teacher-9", INSTRUCTOR, "Ilmari Instructor")
    log = sync_course(synced.pk, "daily")
    assert (log.ok, log.added, log.removed, log.unchanged) == (True, 1, 1, 1)
    assert enrolled(prompt, "learner-2") == EnrollmentStatus.BLOCKED
    assert prompt.is_taught_by(User.objects.get(lti_identities__subject="teacher-9"))

    lms_server.drop("teacher-9")  # the instructor leaves: no longer a co-teacher
    sync_course(synced.pk, "daily")
    assert not prompt.is_taught_by(User.objects.get(lti_identities__subject="teacher-9"))


@pytest.mark.django_db
@pytest.mark.parametrize("failure", ["down", "garbage"])
def test_a_platform_down_or_answering_garbage_leaves_the_roster_and_logs_a_sentence(
    synced, lms_server, prompt, owner, client_for, failure
):
    lms_server.drop("learner-2")
    if failure == "down":
        lms_server.stop()
    else:
        lms_server.mode = "garbage"
    log = sync_course(synced.pk, "teacher")
    assert not log.ok and enrolled(prompt, "learner-2") == EnrollmentStatus.ENROLLED
    [sentence] = log.errors
    assert ("did not answer" if failure == "down" else "not a course roster") in sentence
    assert "the roster was left as it was" in sentence
    html = course_page(client_for, owner, prompt)
    assert "did not complete" in html and "Test LMS" in html


@pytest.mark.django_db
def test_the_token_endpoint_refuses_an_assertion_not_signed_with_the_tools_key(synced, lms_server, prompt):
    lms_server.tool_jwks = {"keys": [json.loads(json.dumps(TestPlatform().jwks()["keys"][0]))]}  # someone else's key
    lms_server.drop("learner-2")
    log = sync_course(synced.pk, "teacher")
    assert not log.ok and "refused CurreChat's request to read the roster" in log.errors[0]
    assert lms_server.refused and lms_server.refused[-1].startswith("assertion")
    assert enrolled(prompt, "learner-2") == EnrollmentStatus.ENROLLED


@pytest.mark.django_db(transaction=True)
async def test_a_student_removed_by_a_sync_loses_their_open_chat_at_the_next_message(
    synced, lms_server, prompt, ollama
):
    student = await database_sync_to_async(User.objects.get)(lti_identities__subject="learner-2")
    chat = await database_sync_to_async(ChatSession.objects.create)(prompt=prompt, user=student)
    ws, connected, _ = await open_websocket(student, f"/ws/chats/{chat.pk}/")
    assert connected
    lms_server.drop("learner-2")
    await database_sync_to_async(sync_course)(synced.pk, "daily")
    await ws.send_json_to({"type": "user_message", "content": "Still here?"})
    event = json.loads(await ws.receive_from(timeout=EVENT_SECONDS))
    await ws.disconnect()
    assert event["type"] == "error" and event["code"] == "not_allowed"
    assert not ollama.chat_requests()


@pytest.mark.django_db
def test_a_platform_switched_off_is_not_read(synced, lms_server, prompt):
    Platform.objects.update(active=False)
    lms_server.drop("learner-2")
    asked = len(lms_server.jtis)
    log = sync_course(synced.pk, "daily")
    assert not log.ok and "switched off" in log.errors[0] and len(lms_server.jtis) == asked
    assert enrolled(prompt, "learner-2") == EnrollmentStatus.ENROLLED


@pytest.mark.django_db
def test_the_daily_run_syncs_every_course_and_queues_the_next_run(synced, lms_server, prompt, run_worker):
    import django_rq

    from lti.tasks import sync_all_rosters

    lms_server.drop("learner-2")
    assert sync_all_rosters.call() == 1
    run_worker()
    assert enrolled(prompt, "learner-2") == EnrollmentStatus.REMOVED
    assert SyncLog.objects.first().trigger == "daily"
    scheduled = django_rq.get_queue("default").scheduled_job_registry
    assert any(
        "sync_all_rosters" in (job.func_name or "") or "sync_all_rosters" in str(job.args)
        for job in (scheduled.job_class.fetch(i, connection=scheduled.connection) for i in scheduled.get_job_ids())
    )
