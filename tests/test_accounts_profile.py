"""Accounts people expect: a display name, changing one's password, and a one-time reset link that
a superuser makes (no mail server assumed; links by mail: tests/test_password_reset_mail.py)."""

from __future__ import annotations

import re

from chat.models import ChatVisibility
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


def test_without_mail_a_superusers_one_time_link_lets_the_student_choose_a_password_once(
    client, client_for, admin_user, student
):
    response = client_for(admin_user).post(
        "/admin/accounts/user/", {"action": "make_reset_links", "_selected_action": [student.pk]}, follow=True
    )
    link = re.search(r"(http://testserver/account/reset/\S+/)<", response.content.decode()).group(1)
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


def test_students_cannot_make_reset_links(client_for, student, other_student):
    assert client_for(student).post("/account/reset/", {"username": other_student.username}).status_code == 403
