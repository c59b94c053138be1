"""Budgets on the roster page: each student's use this week, flagged near or over, and the
teachers' reset / own budget / own exemption, through the same write the API makes."""

from __future__ import annotations

import pytest

from chat.course.allowances import allowance
from chat.metering.usage import UsageMeter
from chat.models import Enrollment


def spend(user, prompt, tokens: int) -> None:
    UsageMeter(user.pk, prompt.pk)(tokens, 0, "qwen3:8b")


def roster_page(client, prompt) -> str:
    response = client.get(f"/prompts/{prompt.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def number_of(prompt, student) -> int:
    return Enrollment.objects.get(prompt=prompt, student=student).number


def test_the_roster_shows_each_students_week_and_flags_near_and_over(prompt, student, client_for, owner):
    prompt.weekly_token_budget = 1000
    prompt.save()
    spend(student, prompt, 790)
    page = roster_page(client_for(owner), prompt)
    assert "790 of 1,000 tokens (79%)" in page and 'data-testid="budget-flag"' not in page
    spend(student, prompt, 10)
    page = roster_page(client_for(owner), prompt)
    assert "800 of 1,000 tokens (80%)" in page and "near the budget" in page
    spend(student, prompt, 300)
    page = roster_page(client_for(owner), prompt)
    assert "1,100 of 1,000 tokens (110%)" in page and "over the budget" in page


def test_a_co_teacher_resets_and_raises_a_budget_from_the_roster(prompt, student, co_owner, client_for):
    prompt.weekly_token_budget = 1000
    prompt.save()
    prompt.co_teachers.add(co_owner)
    spend(student, prompt, 1200)
    client = client_for(co_owner)
    url = f"/prompts/{prompt.pk}/students/{number_of(prompt, student)}/budget/"

    response = client.post(url, {"action": "reset"}, follow=True)
    assert "can use their whole weekly budget again" in response.content.decode()
    assert allowance(student.pk, prompt).used == 0

    response = client.post(url, {"action": "set", "weekly_token_budget": "5 000"}, follow=True)
    assert "weekly budget changed" in response.content.decode()
    assert allowance(student.pk, prompt).budget == 5000
    assert "0 of 5,000 tokens (0%)" in response.content.decode()

    response = client.post(url, {"action": "set", "weekly_token_budget": "lots"}, follow=True)
    assert "as a whole number of tokens" in response.content.decode()
    assert allowance(student.pk, prompt).budget == 5000

    client.post(url, {"action": "set", "weekly_token_budget": ""})
    assert allowance(student.pk, prompt).budget == 1000, "empty: the prompt's budget again"


@pytest.mark.parametrize("who", ["student", "other_teacher", "other_student"])
def test_only_the_prompts_teachers_change_a_budget_from_the_page(request, prompt, student, client_for, who):
    spend(student, prompt, 300)
    client = client_for(request.getfixturevalue(who))
    url = f"/prompts/{prompt.pk}/students/{number_of(prompt, student)}/budget/"
    assert client.post(url, {"action": "reset"}).status_code in {403, 404}
    assert client.post(url, {"action": "set", "weekly_token_budget": "99999"}).status_code in {403, 404}
    assert client.post(f"/prompts/{prompt.pk}/budget/exempt/", {"exempt": "1"}).status_code in {403, 404}
    standing = allowance(student.pk, prompt)
    assert standing.used == 300 and standing.budget == prompt.weekly_token_budget


def test_a_just_removed_co_teacher_can_no_longer_reset_from_the_page(prompt, student, co_owner, client_for):
    prompt.co_teachers.add(co_owner)
    spend(student, prompt, 300)
    client = client_for(co_owner)
    assert "Use this week" in roster_page(client, prompt)
    prompt.co_teachers.remove(co_owner)
    url = f"/prompts/{prompt.pk}/students/{number_of(prompt, student)}/budget/"
    assert client.post(url, {"action": "reset"}).status_code in {403, 404}
    assert allowance(student.pk, prompt).used == 300


def test_a_teacher_exempts_themselves_from_the_page(prompt, owner, client_for):
    prompt.weekly_token_budget = 100
    prompt.save()
    spend(owner, prompt, 150)
    client = client_for(owner)
    assert allowance(owner.pk, prompt).exhausted
    page = client.post(f"/prompts/{prompt.pk}/budget/exempt/", {"exempt": "1"}, follow=True).content.decode()
    assert "no longer applies to your own chats" in page and "Apply it to me again" in page
    assert allowance(owner.pk, prompt).exhausted is None
    client.post(f"/prompts/{prompt.pk}/budget/exempt/", {"exempt": "0"})
    assert allowance(owner.pk, prompt).exhausted
