"""Accounts people expect: a display name, changing one's password, and a one-time reset link that
an administrator or a student's teacher makes (no mail server assumed)."""

from __future__ import annotations

import re

from chat.models import ChatVisibility, EnrollmentStatus
from tests.conftest import PASSWORD


def test_a_user_sets_their_name_and_teachers_see_it_only_when_chats_are_named(client_for, owner, student, prompt):
    client_for(student).post("/account/profile/", {"save_name": "1", "first_name": "Sanna", "last_name": "Suomi"})
    student.refresh_from_db()
    assert student.get_full_name() == "Sanna Suomi"
    roster = client_for(owner).get(f"/api/v1/prompts/{prompt.pk}/students").json()
    assert roster[0]["label"] == "Student 1"
    prompt.chat_visibility = ChatVisibility.NAMED
    prompt.save()
    assert client_for(owner).get(f"/api/v1/prompts/{prompt.pk}/students").json()[0]["label"] == "Sanna Suomi"


def test_changing_the_password_keeps_this_browser_signed_in(client, student):
    client.login(username=student.username, password=PASSWORD)
    response = client.post(
        "/account/profile/",
        {
            "change_password": "1",
            "old_password": PASSWORD,
            "new_password1": "uusi-salasana-987",
            "new_password2": "uusi-salasana-987",
        },
    )
    assert response.status_code == 302
    student.refresh_from_db()
    assert student.check_password("uusi-salasana-987")
    assert client.get("/").status_code == 200, "still signed in here"


def test_a_teacher_makes_a_one_time_reset_link_for_their_own_student_only(
    client, client_for, owner, other_teacher, student, other_student, prompt
):
    refused = client_for(other_teacher).post("/account/reset/", {"username": student.username}).content.decode()
    assert "no such user among your students" in refused
    page = client_for(owner).post("/account/reset/", {"username": student.username}).content.decode()
    link = re.search(r'value="(http[^"]+/account/reset/[^"]+)"', page).group(1)
    form_page = client.get(link, follow=True)
    assert "Choose a new password" in form_page.content.decode()
    done = client.post(
        form_page.redirect_chain[-1][0] if form_page.redirect_chain else link,
        {"new_password1": "palautettu-salasana-42", "new_password2": "palautettu-salasana-42"},
    )
    assert done.status_code == 302
    student.refresh_from_db()
    assert student.check_password("palautettu-salasana-42")
    again = client.get(link, follow=True).content.decode()
    assert "has been used or has expired" in again, "the link works once"
    assert (
        "no such user"
        in client_for(owner).post("/account/reset/", {"username": other_student.username}).content.decode()
    )
    prompt.enrollments.filter(student=student).update(status=EnrollmentStatus.REMOVED)
    assert "no such user" in client_for(owner).post("/account/reset/", {"username": student.username}).content.decode()


def test_students_cannot_make_reset_links(client_for, student, other_student):
    assert client_for(student).post("/account/reset/", {"username": other_student.username}).status_code == 403
