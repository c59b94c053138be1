"""Password reset links by mail when a mail server is configured (EMAIL_HOST): a teacher's or an
administrator's link goes to the user's address (the maker sees it masked), and users may ask for
one on the login page without learning whether an address exists. The mail goes through Django's
SMTP backend to a real SMTP server on loopback (tests/fake_smtp.py)."""

from __future__ import annotations

import re

import pytest

from accounts.models import Role, User
from tests.conftest import PASSWORD
from tests.fake_smtp import SmtpServer

NEW_PASSWORD = "palautettu-salasana-42"


@pytest.fixture
def smtp(settings):
    """A configured mail server: the app's settings point at the loopback SMTP server."""
    server = SmtpServer().start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = server.port
    settings.DEFAULT_FROM_EMAIL = "CurreChat <noreply@school.example>"
    yield server.inbox
    server.stop()


def link_in(body: str) -> str:
    return re.search(r"http://testserver/account/reset/\S+/", body).group(0)


def use_link_once(client, link: str) -> None:
    """Choose a new password through `link`, then see it refused a second time."""
    form_page = client.get(link, follow=True)
    assert "Choose a new password" in form_page.content.decode()
    done = client.post(form_page.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302
    again = client.get(link, follow=True).content.decode()
    assert "has been used or has expired" in again
    assert 'href="/password-reset/">Or get a new link by mail' in again


def test_a_teachers_reset_link_is_mailed_to_the_student_and_works_once(
    client, client_for, owner, student, prompt, smtp
):
    student.email = "jaana.virtanen@example.org"
    student.save()
    page = client_for(owner).post("/account/reset/", {"username": student.username}).content.decode()
    assert "The link was sent to j…@example.org." in page
    assert "/account/reset/M" not in page, "a mailed link is not shown as well"

    [mail] = smtp.messages
    assert mail["To"] == "jaana.virtanen@example.org"
    assert mail["From"] == "CurreChat <noreply@school.example>"
    assert mail["Subject"] == "Choose a new CurreChat password"
    body = smtp.bodies()[0]
    assert student.username in body
    use_link_once(client, link_in(body))
    student.refresh_from_db()
    assert student.check_password(NEW_PASSWORD)


def test_a_student_without_an_address_gets_the_link_shown_to_the_teacher(client_for, owner, student, prompt, smtp):
    page = client_for(owner).post("/account/reset/", {"username": student.username}).content.decode()
    assert f"{student.username} has no email address, so the link is shown here instead." in page
    assert re.search(r'value="http://testserver/account/reset/[^"]+"', page)
    assert smtp.messages == []


def test_when_the_mail_server_is_down_the_teacher_gets_the_link(settings, client_for, owner, student, prompt, smtp):
    from scripts.redis_stack import free_port

    student.email = "jaana@example.org"
    student.save()
    settings.EMAIL_PORT = free_port()  # nothing listens there
    page = client_for(owner).post("/account/reset/", {"username": student.username}).content.decode()
    assert "The mail could not be sent, so the link is shown here instead." in page
    assert re.search(r'value="http://testserver/account/reset/[^"]+"', page)


def test_an_administrators_reset_links_are_mailed_or_shown(client_for, admin_user, student, other_student, smtp):
    student.email = "sam@example.org"
    student.save()
    response = client_for(admin_user).post(
        "/admin/accounts/user/",
        {"action": "make_reset_links", "_selected_action": [student.pk, other_student.pk]},
        follow=True,
    )
    page = response.content.decode()
    # The admin capitalises its messages' first letter.
    assert re.search(rf"{student.username}: sent to s…@example.org<", page, re.IGNORECASE)
    assert re.search(
        rf"{other_student.username}: {other_student.username} has no email address.*http://testserver/", page, re.I
    )
    assert [m["To"] for m in smtp.messages] == ["sam@example.org"]


def test_a_user_asks_for_a_link_on_the_login_page_and_uses_it_once(client, student, smtp):
    student.email = "Sam@Example.org"
    student.save()
    login_page = client.get("/login/").content.decode()
    assert 'href="/password-reset/"' in login_page

    response = client.post("/password-reset/", {"email": "sam@example.org"}, follow=True)
    assert "If that address belongs to an account" in response.content.decode()
    [mail] = smtp.messages
    assert mail["To"] == "Sam@Example.org"
    use_link_once(client, link_in(smtp.bodies()[0]))
    student.refresh_from_db()
    assert student.check_password(NEW_PASSWORD)
    assert client.login(username=student.username, password=NEW_PASSWORD)


def test_asking_for_an_unknown_address_looks_the_same_and_mails_nothing(client, student, smtp):
    student.email = "sam@example.org"
    student.save()
    known = client.post("/password-reset/", {"email": "sam@example.org"}, follow=True)
    unknown = client.post("/password-reset/", {"email": "nobody@example.org"}, follow=True)
    assert unknown.redirect_chain == known.redirect_chain
    masked = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')  # a fresh mask per response
    assert masked.sub("", unknown.content.decode()) == masked.sub("", known.content.decode())
    assert [m["To"] for m in smtp.messages] == ["sam@example.org"]


def test_reset_requests_are_limited_per_address_asked_for_and_per_network(settings, client, db, smtp):
    User.objects.create_user("sanni", email="sanni@example.org", password=PASSWORD, role=Role.STUDENT)
    settings.RATE_RESET_EMAIL = (2, 3600)
    for _ in range(2):
        assert client.post("/password-reset/", {"email": "nobody@example.org"}).status_code == 302
    refused = client.post("/password-reset/", {"email": "NOBODY@example.org"})
    assert refused.status_code == 429
    assert "Too many password reset requests for this address." in refused.content.decode()
    assert int(refused["Retry-After"]) > 0

    settings.RATE_RESET_ADDRESS = (3, 3600)  # three requests from this network so far
    refused = client.post("/password-reset/", {"email": "sanni@example.org"})
    assert refused.status_code == 429
    assert "from your network" in refused.content.decode()
    assert smtp.messages == []


def test_without_mail_settings_links_are_only_shown_and_users_are_told_whom_to_ask(
    settings, client, client_for, owner, student, prompt
):
    settings.EMAIL_HOST = ""
    student.email = "sam@example.org"
    student.save()
    assert "/password-reset/" not in client.get("/login/").content.decode()
    page = client.get("/password-reset/").content.decode()
    assert "Ask your teacher" in page and 'name="email"' not in page
    asked = client.post("/password-reset/", {"email": "sam@example.org"})
    assert asked.status_code == 200 and "Ask your teacher" in asked.content.decode()
    teacher_page = client_for(owner).post("/account/reset/", {"username": student.username}).content.decode()
    assert re.search(r'value="http://testserver/account/reset/[^"]+"', teacher_page)
    assert "has no email address" not in teacher_page


def test_with_mail_a_user_gives_their_address_on_the_profile_page_and_gets_links_there(client, student, smtp):
    client.force_login(student)
    assert 'name="email"' in client.get("/account/profile/").content.decode()
    client.post("/account/profile/", {"save_name": "1", "first_name": "Sam", "email": "sam.new@example.org"})
    student.refresh_from_db()
    assert student.email == "sam.new@example.org"
    client.logout()
    client.post("/password-reset/", {"email": "sam.new@example.org"})
    assert [m["To"] for m in smtp.messages] == ["sam.new@example.org"]


def test_without_mail_the_profile_page_asks_for_no_address(client_for, student):
    assert 'name="email"' not in client_for(student).get("/account/profile/").content.decode()
