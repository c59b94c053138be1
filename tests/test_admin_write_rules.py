"""The admin writes through the same rules as the pages (docs/CONVENTIONS.md habit 18): each admin
form is posted with a changed protected field, as staff trying to write around a rule would, and the
rule still holds. "Only a chat's student deletes it" answers the same in the page and the API."""

from __future__ import annotations

import html

from chat.models import ChatSession, ChatVisibility, Enrollment, EnrollmentStatus, Message
from collections_app.models import FileStatus

# A change form's inline management data: no inline rows posted.
NO_MESSAGES = {f"messages-{k}": v for k, v in (("TOTAL_FORMS", 0), ("INITIAL_FORMS", 0), ("MIN_NUM_FORMS", 0))}


def test_no_one_changes_a_chats_privacy_level_owner_or_messages_in_the_admin(
    client_for, admin_user, other_student, session
):
    question = Message.objects.create(session=session, role="user", content="Is my grade at risk?")
    superuser = client_for(admin_user)
    change = superuser.post(
        f"/admin/chat/chatsession/{session.pk}/change/",
        {"visibility": ChatVisibility.NAMED, "user": other_student.pk, "title": "Moved", **NO_MESSAGES},
    )
    assert change.status_code == 403
    rewrite = superuser.post(
        f"/admin/chat/message/{question.pk}/change/", {"content": "Nothing to see", "role": "user"}
    )
    assert rewrite.status_code == 403
    assert superuser.post(f"/admin/chat/message/{question.pk}/delete/", {"post": "yes"}).status_code == 403
    assert superuser.get("/admin/chat/message/add/").status_code == 403
    session.refresh_from_db()
    question.refresh_from_db()
    assert (session.visibility, session.user_id) == (ChatVisibility.PSEUDONYMOUS, session.user_id)
    assert session.user != other_student
    assert question.content == "Is my grade at risk?"
    page = superuser.get(f"/admin/chat/chatsession/{session.pk}/change/").content.decode()
    assert "Is my grade at risk?" in html.unescape(page), "still readable"


def test_only_a_chats_student_deletes_it_with_one_answer_in_page_api_and_admin(
    client_for, owner, co_owner, student, other_student, admin_user, session
):
    session.prompt.co_teachers.add(co_owner)
    page_url = f"/prompts/{session.prompt_id}/chat/{session.pk}/delete/"
    api_url = f"/api/v1/chats/{session.pk}"
    for reader in (owner, co_owner):  # they may read it, so they are told why not
        page = client_for(reader).post(page_url)
        api = client_for(reader).delete(api_url)
        assert (page.status_code, api.status_code) == (403, 403)
        assert "Only the chat&#x27;s student can delete it." in page.content.decode()
        assert api.json()["detail"] == "Only the chat's student can delete it."
    outsider = client_for(other_student)
    assert (outsider.post(page_url).status_code, outsider.delete(api_url).status_code) == (404, 404)
    assert (
        client_for(admin_user).post(f"/admin/chat/chatsession/{session.pk}/delete/", {"post": "yes"}).status_code == 403
    )
    assert ChatSession.objects.filter(pk=session.pk).exists()

    enrollment = Enrollment.objects.get(prompt=session.prompt, student=student)
    enrollment.status = EnrollmentStatus.REMOVED  # access just taken away
    enrollment.save()
    removed = client_for(student)
    assert (removed.post(page_url).status_code, removed.delete(api_url).status_code) == (403, 403)
    enrollment.status = EnrollmentStatus.ENROLLED
    enrollment.save()
    assert client_for(student).post(page_url).status_code == 302
    assert not ChatSession.objects.filter(pk=session.pk).exists()


def test_student_n_is_never_moved_to_another_user_and_status_changes_take_effect(
    client_for, admin_user, owner, student, other_student, session
):
    enrollment = Enrollment.objects.get(prompt=session.prompt, student=student)
    superuser = client_for(admin_user)
    url = f"/admin/chat/enrollment/{enrollment.pk}/change/"
    moved = superuser.post(
        url, {"student": other_student.pk, "prompt": session.prompt_id, "number": 9, "status": EnrollmentStatus.REMOVED}
    )
    assert moved.status_code == 302
    enrollment.refresh_from_db()
    assert (enrollment.student, enrollment.number) == (student, 1), "Student 1 stays the same person"
    assert enrollment.status == EnrollmentStatus.REMOVED
    assert client_for(student).get(f"/api/v1/chats/{session.pk}").status_code == 403, "removal takes effect at once"
    assert superuser.post(f"/admin/chat/enrollment/{enrollment.pk}/delete/", {"post": "yes"}).status_code == 403

    teacher_as_student = superuser.post(
        "/admin/chat/enrollment/add/", {"student": owner.pk, "prompt": session.prompt_id, "status": ""}
    )
    assert "teachers don&#x27;t need to join their own prompts" in teacher_as_student.content.decode()
    added = superuser.post(
        "/admin/chat/enrollment/add/", {"student": other_student.pk, "prompt": session.prompt_id, "status": ""}
    )
    assert added.status_code == 302
    assert Enrollment.objects.get(prompt=session.prompt, student=other_student).number == 2


def test_the_prompt_pages_enrollment_rows_are_read_only_in_the_admin(
    client_for, admin_user, student, other_student, prompt
):
    from tests.test_write_paths import _prompt_admin_form

    enrollment = prompt.enrollments.get()
    rows = {
        "enrollments-TOTAL_FORMS": "1", "enrollments-INITIAL_FORMS": "1",
        "enrollments-0-id": str(enrollment.pk), "enrollments-0-prompt": str(prompt.pk),
        "enrollments-0-student": str(other_student.pk), "enrollments-0-status": EnrollmentStatus.BLOCKED,
    }  # fmt: skip
    response = client_for(admin_user).post(
        f"/admin/chat/prompt/{prompt.pk}/change/", {**_prompt_admin_form(prompt), **rows}
    )
    assert response.status_code == 302
    enrollment.refresh_from_db()
    assert (enrollment.student, enrollment.status) == (student, EnrollmentStatus.ENROLLED)


def test_no_file_is_marked_ready_by_hand_and_cancel_and_retry_run_the_lifecycle(
    fast_collection, ingest_upload, client_for, admin_user, run_worker
):
    from collections_app.lifecycle import requeue

    source = ingest_upload(fast_collection, b"The median is the middle value.", "median.txt")
    assert source.status == FileStatus.READY
    superuser = client_for(admin_user)
    requeue(source, enqueue=False)  # queued again, as after a settings change, before the worker takes it
    forged = superuser.post(
        f"/admin/collections_app/sourcefile/{source.pk}/change/",
        {"status": FileStatus.READY, "progress": 100, "chunk_count": 99, "original_name": "x.txt"},
    )
    assert forged.status_code == 302
    source.refresh_from_db()
    assert (source.status, source.chunk_count, source.original_name) == (FileStatus.QUEUED, 1, "median.txt")
    assert superuser.get("/admin/collections_app/sourcefile/add/").status_code == 403

    changelist = "/admin/collections_app/sourcefile/"
    superuser.post(changelist, {"action": "cancel_files", "_selected_action": [source.pk]})
    source.refresh_from_db()
    assert source.status == FileStatus.CANCELLED
    page = superuser.post(changelist, {"action": "cancel_files", "_selected_action": [source.pk]}, follow=True)
    assert "only queued or running files can be cancelled" in html.unescape(page.content.decode())
    superuser.post(changelist, {"action": "retry_files", "_selected_action": [source.pk]})
    source.refresh_from_db()
    assert source.status == FileStatus.QUEUED
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY and source.chunk_count == 1


def test_staff_who_may_delete_users_delete_a_student_but_never_a_staff_or_superuser_account(
    client_for, admin_user, student, other_student
):
    """Deleting an account is above staff's own rights when the account is staff's or a superuser's,
    one at a time or by the list's bulk action alike."""
    from accounts.models import Role, User
    from tests.test_password_reset_mail import staff_with

    deleter = staff_with("view_user", "delete_user")
    colleague = User.objects.create_user("colleague", password="x-Password-1", role=Role.TEACHER, is_staff=True)
    staff = client_for(deleter)
    for above in (admin_user, colleague):
        assert staff.post(f"/admin/accounts/user/{above.pk}/delete/", {"post": "yes"}).status_code == 403
    bulk = {"action": "delete_selected", "_selected_action": [admin_user.pk, other_student.pk], "post": "yes"}
    assert staff.post("/admin/accounts/user/", bulk).status_code == 403
    assert User.objects.filter(pk__in=[admin_user.pk, colleague.pk, other_student.pk]).count() == 3, "none deleted"
    assert staff.post(f"/admin/accounts/user/{student.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not User.objects.filter(pk=student.pk).exists()
    superuser = client_for(admin_user)
    assert superuser.post(f"/admin/accounts/user/{colleague.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not User.objects.filter(pk=colleague.pk).exists(), "a superuser may"
