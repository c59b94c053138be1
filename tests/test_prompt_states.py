"""A prompt's state reads the same everywhere: one not open yet says when it opens and invites no
question, the chat shows no green "available" to a student who cannot write, and the teacher's
home shows each prompt's real state and counts students as the roster does."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from accounts.models import Role, User
from chat.models import Enrollment, EnrollmentStatus, Prompt

# The join page's box that confirms the privacy notice (joining is refused without it).
CONFIRMED = {"privacy_confirmed": "1"}


def test_joining_a_prompt_not_open_yet_says_when_it_opens(prompt, other_student, client_for):
    prompt.opens_at = timezone.now() + timedelta(days=3)
    prompt.save()
    client = client_for(other_student)
    page = client.post(f"/join/{prompt.join_code}/", CONFIRMED, follow=True).content.decode()
    assert f"You joined “{prompt.name}”. This assistant opens on" in page
    assert "Ask your first question" not in page
    assert 'data-testid="model-status"' not in page and "The assistant is available" not in page
    assert 'data-testid="prompt-closed"' in page and 'id="composer"' not in page


def test_joining_by_link_a_prompt_not_open_yet_says_when_it_opens(prompt, client_for):
    prompt.opens_at = timezone.now() + timedelta(days=3)
    prompt.save()
    newcomer = User.objects.create_user("uusi-opiskelija", password="x", role=Role.STUDENT)
    page = client_for(newcomer).post(f"/join/{prompt.join_code}/", CONFIRMED, follow=True).content.decode()
    assert "This assistant opens on" in page and "Ask your first question" not in page


def test_joining_an_open_prompt_invites_the_first_question(prompt, other_student, client_for):
    page = client_for(other_student).post(f"/join/{prompt.join_code}/", CONFIRMED, follow=True).content.decode()
    assert f"You joined “{prompt.name}”. Ask your first question below." in page
    assert "The assistant is available" in page


def test_a_teacher_previewing_a_prompt_not_open_yet_still_sees_the_model(prompt, owner, client_for):
    prompt.opens_at = timezone.now() + timedelta(days=3)
    prompt.save()
    page = client_for(owner).get(f"/prompts/{prompt.pk}/chat/").content.decode()
    assert 'data-testid="model-status"' in page and 'data-testid="preview-band"' in page


def test_the_teachers_home_shows_each_prompts_real_state_and_enrolled_students(
    prompt, owner, student, other_student, client_for
):
    now = timezone.now()
    Prompt.objects.create(owner=owner, name="Later course", opens_at=now + timedelta(days=2))
    Prompt.objects.create(owner=owner, name="Old course", closes_at=now - timedelta(days=2))
    Prompt.objects.create(owner=owner, name="Paused course", active=False)
    third = User.objects.create_user("third-student", password="x", role=Role.STUDENT)
    Enrollment.objects.create(student=other_student, prompt=prompt, status=EnrollmentStatus.REMOVED)
    Enrollment.objects.create(student=third, prompt=prompt, status=EnrollmentStatus.BLOCKED)

    response = client_for(owner).get("/")
    rows = {p.name: p for p in response.context["prompts"]}
    assert rows["Stats helper"].n_students == 1, "removed and blocked students are not counted"
    rows_html = {name: next(r for r in response.content.decode().split("<tr>") if f">{name}<" in r) for name in rows}
    assert "state-open" in rows_html["Stats helper"] and ">Open<" in rows_html["Stats helper"]
    assert "state-draft" in rows_html["Later course"] and "Not open yet" in rows_html["Later course"]
    assert "opens " in rows_html["Later course"]
    assert "state-closed" in rows_html["Old course"] and ">Closed<" in rows_html["Old course"]
    assert "state-off" in rows_html["Paused course"] and "Switched off" in rows_html["Paused course"]
    # The roster counts the same students (removed and blocked ones are listed, not counted).
    assert "Students (1)" in client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()


def test_a_visitor_with_only_a_join_code_signs_up_from_the_login_page(prompt, client):
    login = client.get("/login/").content.decode()
    assert 'data-testid="join-code-box"' in login and 'action="/join/code/"' in login
    response = client.get("/join/code/", {"code": f" {prompt.join_code.lower()} "})
    assert response.status_code == 302 and response["Location"] == f"/join/{prompt.join_code.lower()}/"
    page = client.get(response["Location"]).content.decode()
    assert prompt.name in page and "Create account and join" in page
    joined = client.post(
        response["Location"],
        {"username": "koodilla-tullut", "password1": "koodin-salasana-42", "password2": "koodin-salasana-42"}
        | CONFIRMED,
        follow=True,
    )
    assert f"You joined “{prompt.name}”" in joined.content.decode()
    assert Enrollment.objects.filter(prompt=prompt, student__username="koodilla-tullut").exists()


def test_an_empty_join_code_on_the_login_page_is_asked_for_again(client):
    page = client.get("/join/code/", {"code": " / "}, follow=True).content.decode()
    assert "Enter the join code your teacher gave you." in page
