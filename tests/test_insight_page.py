"""The teacher's statistics page: figures, the chart with its table, gaps with their actions."""

from __future__ import annotations

import re
from urllib.parse import quote

from chat.insight import stats as insight
from tests.test_insight import course  # noqa: F401  (the scripted chats, as a fixture)
from tests.test_security import other_hosts


def test_the_prompt_page_links_to_its_statistics(client_for, owner, prompt):
    page = client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()
    assert f'href="/prompts/{prompt.pk}/insight/"' in page


def test_the_statistics_page_shows_figures_chart_table_and_gaps(client_for, owner, course):  # noqa: F811
    page = client_for(owner).get(f"/prompts/{course.pk}/insight/?days=7").content.decode()
    assert re.search(r'data-testid="messages">9<', page)
    assert re.search(r'data-testid="nothing-share">60%<', page)
    assert page.count('<rect class="bar"') == 7, "one bar per day of the period"
    assert page.count('<tr><th scope="row">') == 2, "the table lists the two days with messages"
    assert "plant photosynthesis" in page and "/search/?q=plant+photosynthesis" in page
    assert "lecture-3.pdf" in page
    # The chart is the app's own SVG: nothing from elsewhere. (Not a search for "cdn" in the page: a
    # random CSRF token or nonce spells it now and then.)
    assert other_hosts(page) == []


def test_an_unknown_period_falls_back_to_30_days(client_for, owner, course):  # noqa: F811
    page = client_for(owner).get(f"/prompts/{course.pk}/insight/?days=abc").content.decode()
    assert page.count('<rect class="bar"') == 30


def test_marking_a_gap_handled_from_the_page(client_for, owner, course):  # noqa: F811
    gap = insight.gaps(course)[0]
    client = client_for(owner)
    response = client.post(f"/prompts/{course.pk}/insight/gaps/{gap.id}/handled/", {"handled": "1"})
    assert response.status_code == 302 and response["Location"].endswith("/insight/#gaps")
    assert next(g for g in insight.gaps(course) if g.id == gap.id).handled
    page = client.get(response["Location"]).content.decode()
    assert "marked handled" in page and "Open again" in page


def test_a_gap_becomes_a_test_question_of_the_collection(client_for, owner, course):  # noqa: F811
    client = client_for(owner)
    page = client.get(f"/prompts/{course.pk}/insight/").content.decode()
    collection = course.collections.first()
    link = re.search(rf'href="(/collections/{collection.pk}/checks/\?question=[^"]+)" data-testid="gap-to-check"', page)
    assert link, "each gap offers to become a test question"
    gap = insight.gaps(course)[0]
    assert any(f"question={quote(text, safe='/')}" in page for text in (gap.query, gap.example or gap.query))
    assert client.get(link.group(1).replace("&amp;", "&")).status_code == 200
