"""A teacher adds three answer checks (one from a material gap), runs them, sees one fail with its
unsupported sentence marked, then tries a draft instruction side by side and applies it, on a phone
(390 px) and a laptop (1366 px). Daphne and the RQ worker run as real processes; the test model
server answers as scripted."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

SETUP = """
from django.utils import timezone
from accounts.models import Role, User
from chat.models import MaterialGap, Prompt
from collections_app.models import Collection
teacher = User.objects.create_user({name!r}, password="answers-pass-4567", role=Role.TEACHER)
collection = Collection.objects.create(name="Statistics {name}", owner=teacher, language="english",
                                       embedding_model="ollama:snowflake-arctic-embed2")
prompt = Prompt.objects.create(owner=teacher, name="Stats helper {name}", chat_model="qwen3:8b",
                               system_prompt="Be kind.", curation_enabled=False)
prompt.collections.add(collection)
# The course file, ingested here by the real pipeline (the upload page has its own journeys).
from django.core.files.uploadedfile import SimpleUploadedFile
from collections_app.files import add_file
from collections_app.lifecycle import run_ingest
source = add_file(collection, SimpleUploadedFile("statistics.md", {course!r}.encode()), teacher)
run_ingest(source.pk, source.attempt)
now = timezone.now()
MaterialGap.objects.create(prompt=prompt, key="park", query="where can I park", count=3, first_asked=now,
                           last_asked=now)
"""

COURSE = """# Statistics 101

## Exam

The final exam is on 12 December in hall B. Bring a calculator and your student card.

## Grading

The course is graded on a scale from 0 to 5. Weekly exercises give up to 20 percent of the grade.
"""

INVENTED = "Students who fail may retake it online during the summer holidays."


def search(query: str) -> Reply:
    return Reply(tool_calls=[{"name": "document_search", "arguments": {"query": query}}])


def answers(grading: str) -> list[Reply]:
    return [
        search("parking"), Reply(content="The course material does not cover this."),
        search("exam date"), Reply(content="The final exam is on 12 December in hall B [1]."),
        search("grading"), Reply(content=grading),
    ]  # fmt: skip


@pytest.mark.parametrize("width", [390, 1366])
def test_teacher_checks_answers_and_applies_a_draft(live_app, new_page, journey, ollama, width):
    name = f"checker{width}"  # the live app is shared: other journeys have their own teachers
    live_app.manage("shell", "-c", SETUP.format(name=name, course=COURSE))
    page = new_page(width=width)
    log_in(page, live_app, name, "answers-pass-4567")
    page.get_by_role("link", name=f"Stats helper {name}").first.click()
    no_overflow(page)
    page.get_by_test_id("answer-checks-link").click()
    journey.look(page, f"answer-checks-empty-{width}")

    # One from the material gap, two by hand.
    page.get_by_test_id("offer-gap").get_by_role("button", name="Make an answer check").click()
    expect(page.locator(".messages")).to_contain_text("Answer check added")
    for question, fact in (("When is the exam?", "12 December"), ("How is the course graded?", "0 to 5")):
        page.get_by_label("Question", exact=True).fill(question)
        page.get_by_label("Facts the answer must contain (one per line; separate other wordings with |)").fill(fact)
        page.get_by_label("File the answer must cite (optional)").select_option(label="statistics.md")
        page.get_by_test_id("add-answer-check").click()
        expect(page.locator(".messages")).to_contain_text("Answer check added.")
    rows = page.get_by_test_id("answer-check-row")
    expect(rows).to_have_count(3)

    ollama.script(*answers(f"The course is graded on a scale from 0 to 5 [1]. {INVENTED} [1]"))
    page.get_by_test_id("run-answer-checks").click()
    expect(page.get_by_test_id("live-run")).to_contain_text("2 of 3 passed", timeout=60_000)
    failing = page.locator(".ac-row.failing")
    expect(failing).to_have_count(1)
    expect(rows.first).to_contain_text("How is the course graded?")  # the failing check first
    expect(failing).to_contain_text("Only 50% of the answer's sentences are supported")
    journey.look(page, f"answer-checks-run-{width}")

    failing.get_by_role("link", name="See the answer").click()
    expect(page.get_by_test_id("unsupported")).to_have_text(INVENTED)
    journey.look(page, f"answer-check-detail-{width}")
    page.get_by_role("link", name="← Answer checks").click()

    # A draft instruction, side by side; applied with one click.
    ollama.script(*answers("The course is graded on a scale from 0 to 5 [1]."))
    page.get_by_label("Instructions").fill("Only say what the material says.")
    page.get_by_test_id("try-draft").click()
    expect(page.get_by_test_id("draft-run")).to_contain_text("Draft: 3 of 3 passed", timeout=60_000)
    expect(page.get_by_test_id("draft-result")).to_have_count(3)
    journey.look(page, f"answer-checks-draft-{width}")
    ollama.script(*answers("The course is graded on a scale from 0 to 5 [1]."))  # the run the change starts
    page.get_by_test_id("apply-draft").click()
    expect(page.locator(".messages")).to_contain_text("The draft is now the live assistant")
    expect(page.get_by_test_id("live-run")).to_contain_text("3 of 3 passed", timeout=60_000)
    journey.look(page, f"answer-checks-applied-{width}")
