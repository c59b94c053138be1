"""Password reset links by mail when a mail server is configured (EMAIL_HOST): a teacher's or an
administrator's link goes to the user's address (the maker sees it masked), and users may ask for
one on the login page without learning whether an address exists. The mail goes through Django's
SMTP backend to a real SMTP server on loopback (tests/fake_smtp.py)."""

from __future__ import annotations

import re

import pytest

from accounts.models import Role, User
from chat.models import Prompt
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
    client, client_for, owner, student, prompt, smtp, run_worker
):
    student.email = "jaana.virtanen@example.org"
    student.save()
    page = client_for(owner).post("/account/reset/", {"username": student.username}).content.decode()
    assert f"If {student.username} is a student of one of your prompts and gave an email address" in page
    assert "/account/reset/M" not in page, "the teacher never sees the link"
    assert smtp.messages == [], "the worker mails it: the page's answer takes no longer for a real student"
    run_worker()

    [mail] = smtp.messages
    assert mail["To"] == "jaana.virtanen@example.org"
    assert mail["From"] == "CurreChat <noreply@school.example>"
    assert mail["Subject"] == "Choose a new CurreChat password"
    body = smtp.bodies()[0]
    assert student.username in body
    use_link_once(client, link_in(body))
    student.refresh_from_db()
    assert student.check_password(NEW_PASSWORD)


def test_an_administrators_reset_links_are_mailed_or_shown_to_the_superuser(
    client_for, admin_user, student, other_student, smtp
):
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
        rf"{other_student.username}: {other_student.username} has no email address, so the link could not be "
        r"mailed. http://testserver/account/reset/",
        page,
        re.I,
    )
    assert [m["To"] for m in smtp.messages] == ["sam@example.org"]


def test_a_user_asks_for_a_link_on_the_login_page_and_uses_it_once(client, student, smtp, run_worker):
    student.email = "Sam@Example.org"
    student.save()
    login_page = client.get("/login/").content.decode()
    assert 'href="/password-reset/"' in login_page

    response = client.post("/password-reset/", {"email": "sam@example.org"}, follow=True)
    assert "If that address belongs to an account" in response.content.decode()
    assert smtp.messages == [], "the worker mails it: the page's answer takes no longer for a known address"
    run_worker()
    [mail] = smtp.messages
    assert mail["To"] == "Sam@Example.org"
    use_link_once(client, link_in(smtp.bodies()[0]))
    student.refresh_from_db()
    assert student.check_password(NEW_PASSWORD)
    assert client.login(username=student.username, password=NEW_PASSWORD)


def queued_jobs() -> int:
    import django_rq

    return django_rq.get_queue("default").count


def test_asking_for_an_unknown_address_looks_the_same_and_mails_nothing(client, student, smtp, run_worker):
    """Same answer, and the same work behind it: one job queued for either address (the worker looks
    the address up), so not even the page's time tells whether an account has it."""
    student.email = "sam@example.org"
    student.save()
    before = queued_jobs()
    known = client.post("/password-reset/", {"email": "sam@example.org"}, follow=True)
    assert queued_jobs() == before + 1
    unknown = client.post("/password-reset/", {"email": "nobody@example.org"}, follow=True)
    assert queued_jobs() == before + 2
    assert unknown.redirect_chain == known.redirect_chain
    masked = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')  # a fresh mask per response
    assert masked.sub("", unknown.content.decode()) == masked.sub("", known.content.decode())
    run_worker()
    assert [m["To"] for m in smtp.messages] == ["sam@example.org"]


def test_reset_requests_are_limited_per_address_asked_for_and_per_network(settings, client, db, smtp, run_worker):
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
    run_worker()
    assert smtp.messages == []


def test_without_mail_settings_nobody_but_a_superuser_gets_a_link_and_users_are_told_whom_to_ask(
    settings, client, client_for, owner, student, prompt
):
    settings.EMAIL_HOST = ""
    student.email = "sam@example.org"
    student.save()
    assert "/password-reset/" not in client.get("/login/").content.decode()
    page = client.get("/password-reset/").content.decode()
    assert "Ask an administrator" in page and 'name="email"' not in page
    asked = client.post("/password-reset/", {"email": "sam@example.org"})
    assert asked.status_code == 200 and "Ask an administrator" in asked.content.decode()
    teacher_page = client_for(owner).post("/account/reset/", {"username": student.username}).content.decode()
    assert "CurreChat has no mail server configured" in teacher_page
    assert "/account/reset/M" not in teacher_page


def test_with_mail_a_user_gives_their_address_on_the_profile_page_and_gets_links_there(
    client, student, smtp, run_worker
):
    client.force_login(student)
    assert 'name="email"' in client.get("/account/profile/").content.decode()
    client.post("/account/profile/", {"save_name": "1", "first_name": "Sam", "email": "sam.new@example.org"})
    student.refresh_from_db()
    assert student.email == "sam.new@example.org"
    client.logout()
    client.post("/password-reset/", {"email": "sam.new@example.org"})
    run_worker()
    assert [m["To"] for m in smtp.messages] == ["sam.new@example.org"]


def test_without_mail_the_profile_page_asks_for_no_address(client_for, student):
    assert 'name="email"' not in client_for(student).get("/account/profile/").content.decode()


# --- Nobody but the owner (or a superuser) gets a way into an account ---------------------------------

_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')


def _ask_as_teacher(client, username: str) -> str:
    """The teacher page's answer, with the username asked for and the CSRF mask taken out."""
    page = client.post("/account/reset/", {"username": username}).content.decode()
    return _CSRF.sub("", page).replace(username, "USERNAME")


def staff_with(*codenames: str) -> User:
    """A staff member (a teacher with admin access, not a superuser) holding these permissions."""
    from django.contrib.auth.models import Permission

    name = "staff-" + "-".join(codenames).replace("_", "-")
    user = User.objects.create_user(name, password=PASSWORD, role=Role.TEACHER, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


def test_a_teacher_never_sees_a_students_link_so_cannot_sign_in_as_them(settings, client_for, owner, student, prompt):
    """The attack: reset the student's password and sign in as them. Without mail, with no address and
    with a failing mail server alike, the teacher gets no link."""
    from scripts.redis_stack import free_port

    teacher = client_for(owner)
    settings.EMAIL_HOST = ""
    assert "/account/reset/M" not in teacher.post("/account/reset/", {"username": student.username}).content.decode()
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()  # configured, but nothing listens
    no_address = teacher.post("/account/reset/", {"username": student.username}).content.decode()
    student.email = "sam@example.org"
    student.save()
    mail_fails = teacher.post("/account/reset/", {"username": student.username}).content.decode()
    for page in (no_address, mail_fails):
        assert "a link to choose a new password is on its way to them" in page
        assert not re.search(r"/account/reset/[^/\"]+/[^/\"]+/", page), "no link in the page"
    student.refresh_from_db()
    assert student.check_password(PASSWORD), "the student's password is untouched"


def test_the_teacher_pages_answer_never_says_whether_a_username_is_among_their_students(
    client_for, owner, other_teacher, student, other_student, prompt, smtp, run_worker
):
    """Remove, ask, readmit, ask again: the answers must not link a username to "Student N"."""
    from chat.course.enrollment import readmit_student, remove_student

    for user in (student, other_student):
        user.email = f"{user.username}@example.org"
        user.save()
    Prompt.objects.create(owner=other_teacher, name="Other course").enrollments.create(student=other_student)
    teacher = client_for(owner)
    own = _ask_as_teacher(teacher, student.username)
    run_worker()
    assert [m["To"] for m in smtp.messages] == [student.email]
    enrollment = prompt.enrollments.get(student=student)
    remove_student(enrollment)
    assert _ask_as_teacher(teacher, student.username) == own
    readmit_student(enrollment)
    assert _ask_as_teacher(teacher, student.username) == own
    assert _ask_as_teacher(teacher, other_student.username) == own, "another teacher's student"
    assert _ask_as_teacher(teacher, "no-such-user") == own
    run_worker()
    assert [m["To"] for m in smtp.messages] == [student.email] * 2, "mailed only while the student was enrolled"


def test_platform_staff_and_superuser_accounts_are_never_reset_through_the_teacher_page(
    client_for, owner, student, prompt, smtp, run_worker
):
    """An LTI learner has no password of their own; giving them one would hand the account to
    whoever holds the link. Staff and superusers are reset only by a superuser."""
    lti_learner = User.objects.create_user("lti-learner", email="learner@example.org", role=Role.STUDENT)
    assert not lti_learner.has_usable_password()
    staff_student = User.objects.create_user(
        "staff-student", password=PASSWORD, email="staff@example.org", role=Role.STUDENT, is_staff=True
    )
    for user in (lti_learner, staff_student):
        prompt.enrollments.create(student=user)
    student.email = "sam@example.org"
    student.save()
    teacher = client_for(owner)
    answer = _ask_as_teacher(teacher, student.username)
    assert _ask_as_teacher(teacher, lti_learner.username) == answer
    assert _ask_as_teacher(teacher, staff_student.username) == answer
    run_worker()
    assert [m["To"] for m in smtp.messages] == ["sam@example.org"]
    lti_learner.refresh_from_db()
    assert not lti_learner.has_usable_password()


def _admin_action(client, *users: User):
    return client.post(
        "/admin/accounts/user/",
        {"action": "make_reset_links", "_selected_action": [u.pk for u in users]},
        follow=True,
    ).content.decode()


def test_make_reset_links_needs_the_change_permission_and_shows_links_only_to_superusers(
    client_for, student, other_student, owner, admin_user, smtp
):
    student.email = "sam@example.org"
    student.save()
    viewer = client_for(staff_with("view_user"))
    assert "sent to" not in _admin_action(viewer, student)
    assert smtp.messages == [], "view-only staff cannot have links made"

    changer = staff_with("view_user", "change_user")
    page = _admin_action(client_for(changer), student, other_student, owner, admin_user)
    assert re.search(rf"{student.username}: sent to s…@example.org<", page, re.I)
    assert re.search(rf"{other_student.username}: {other_student.username} has no email address", page, re.I)
    assert not re.search(r"/account/reset/[^/\"]+/[^/\"]+/", page), "no link for anyone but a superuser"
    assert re.search(rf"{admin_user.username}: Only a superuser can reset the password of a staff", page, re.I)
    assert [m["To"] for m in smtp.messages] == ["sam@example.org"]

    superuser_page = _admin_action(client_for(admin_user), other_student)
    assert re.search(
        r"has no email address, so the link could not be mailed\. http://testserver/account/reset/", superuser_page
    )


def test_staff_who_may_change_users_cannot_redirect_their_mail_or_set_their_password(client_for, student, admin_user):
    """Changing a user's address sends their reset links elsewhere; setting a password takes the account."""
    student.email = "sam@example.org"
    student.save()
    staff = client_for(staff_with("view_user", "change_user"))
    form = {
        "username": student.username, "email": "staff@evil.example", "is_superuser": "on", "is_staff": "on",
        "is_active": "on", "role": student.role, "first_name": "Sam", "last_name": "",
        "last_login_0": "", "last_login_1": "", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
    }  # fmt: skip
    assert staff.post(f"/admin/accounts/user/{student.pk}/change/", form).status_code == 302
    student.refresh_from_db()
    assert (student.email, student.first_name, student.is_superuser) == ("sam@example.org", "Sam", False)
    password_form = {"password1": "taken-over-123!", "password2": "taken-over-123!", "usable_password": "true"}
    assert staff.post(f"/admin/accounts/user/{student.pk}/password/", password_form).status_code == 403
    change_page = staff.get(f"/admin/accounts/user/{student.pk}/change/").content.decode()
    assert 'name="_save"' in change_page and "../password/" not in change_page, "no button to a refused page"
    student.refresh_from_db()
    assert student.check_password(PASSWORD)
    superuser = client_for(admin_user)
    assert "../password/" in superuser.get(f"/admin/accounts/user/{student.pk}/change/").content.decode()
    assert superuser.post(f"/admin/accounts/user/{student.pk}/change/", form).status_code == 302
    student.refresh_from_db()
    assert student.email == "staff@evil.example", "a superuser may"


def test_the_join_page_tells_a_new_student_why_to_add_an_address(client, prompt, smtp, settings):
    page = client.get(f"/join/{prompt.join_code}/").content.decode()
    assert "Add one on your profile page afterwards" in page
    settings.EMAIL_HOST = ""
    assert "Add one on your profile page" not in client.get(f"/join/{prompt.join_code}/").content.decode()
