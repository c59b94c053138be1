"""The chat page in a real browser at a phone's and a laptop's width: streamed answers render
safely, failures offer a retry, citations open their passage."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow, record_texts, seen_texts
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

SETUP = """
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
teacher = User.objects.create_user("tarja{suffix}", password="tarja-pass-123", role=Role.TEACHER)
student = User.objects.create_user("sami{suffix}", password="samin-salasana-42", role=Role.STUDENT)
prompt = Prompt.objects.create(owner=teacher, name="Stats helper", chat_model="qwen3:8b")
Enrollment.objects.create(student=student, prompt=prompt)
"""

MATERIAL = """
from chat.models import Prompt
from collections_app.models import Collection
from accounts.models import User
from rag.index import CollectionIndex, IndexedChunk
from rag.providers import get_embedding_model
teacher = User.objects.get(username="tarja{suffix}")
collection = Collection.objects.create(
    name="Statistics 101", owner=teacher, language="english", embedding_model="ollama:snowflake-arctic-embed2"
)
text = "Selection bias arises when the sample is not representative of the population."
vector = get_embedding_model(collection.embedding_model).embed_batch([text])[0]
CollectionIndex.for_collection(collection).replace_file(
    1, [IndexedChunk(1, 0, text, "lecture-3.pdf", 4, 4, "Sampling > Bias", vector)]
)
prompt = Prompt.objects.get(name="Stats helper", owner=teacher)
prompt.curation_enabled = False
prompt.save()
prompt.collections.add(collection)
"""

ANSWER = (
    "The **mean** is $\\bar{x} = \\frac{1}{n}\\sum x_i$.\n\n| n | mean |\n|---|---|\n| 3 | 2.0 |\n\n"
    "<img src=x onerror=\"document.title='pwned'\"> Done."
)


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_a_student_chats_and_retries_a_failed_answer(live_app, new_page, journey, ollama, width):
    live_app.manage("shell", "-c", SETUP.format(suffix=width))
    page = new_page(width, 844 if width < 800 else 900)
    log_in(page, live_app, f"sami{width}", "samin-salasana-42")
    page.get_by_role("link", name="Stats helper").click()
    expect(page.get_by_test_id("model-status")).to_contain_text("connected")
    no_overflow(page)
    if width < 800:
        page.get_by_test_id("chats-drawer").click()  # the chat list is behind it on a phone
    page.get_by_role("link", name="New chat").click()
    no_overflow(page)

    # A streamed answer with Markdown, a table and math; the HTML the model wrote is not run.
    ollama.script(Reply(content=ANSWER, delay=0.01))
    page.get_by_label("Your question").fill("What is the mean?")
    page.get_by_role("button", name="Send").click()
    conversation = page.get_by_test_id("conversation")
    expect(conversation.locator(".msg.user")).to_have_text("What is the mean?")
    expect(conversation.locator("table")).to_be_visible()
    expect(conversation.locator("math")).to_have_count(1)
    expect(conversation.locator("strong", has_text="mean")).to_be_visible()
    assert conversation.locator("img").count() == 0 and page.title() != "pwned"
    expect(page.locator(".session-list li.current a")).to_have_text("What is the mean?")
    journey.look(page, "chat-answer")

    # The model fails mid-answer: the student sees why and retries.
    ollama.script(Reply(content="This answer will break off", fail_after=2, error="model crashed"))
    page.get_by_label("Your question").fill("And the median?")
    page.get_by_role("button", name="Send").click()
    expect(conversation.locator(".msg.failed .error")).to_contain_text("could not answer this time")
    ollama.script(Reply(content="The median is the middle value."))
    page.get_by_role("button", name="Retry").click()
    expect(conversation.locator(".msg.assistant").last).to_contain_text("The median is the middle value.")
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    journey.look(page, "chat-retried", a11y=False)

    # With course material: the search shows while it runs, then its results; [1] opens the passage.
    live_app.manage("shell", "-c", MATERIAL.format(suffix=width))
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "selection bias"}}], delay=0.3),
        Reply(content="It is a sample that does not represent the population [1]. See also [7].", delay=0.01),
    )
    record_texts(page, "conversation")
    page.get_by_label("Your question").fill("What is selection bias?")
    page.get_by_role("button", name="Send").click()
    expect(conversation.get_by_text("Searched: selection bias")).to_be_visible()
    assert any("Searching: selection bias" in text for text in seen_texts(page))
    last = conversation.locator(".msg.assistant").last
    expect(last).to_contain_text("represent the population")
    expect(last.locator(".cite-missing")).to_have_text("[7]")  # no passage 7: not a citation
    last.locator("a.cite", has_text="[1]").click()
    source = last.locator(".citations details").first
    expect(source).to_have_attribute("open", "")
    expect(source).to_contain_text("lecture-3.pdf, p. 4, Sampling > Bias")
    expect(source).to_contain_text("Selection bias arises")
    journey.look(page, "chat-citation")

    # After a reload the whole chat is there, from the database.
    page.reload()
    expect(conversation.locator(".msg.user")).to_have_count(3)
    expect(conversation.locator("table")).to_be_visible()
    no_overflow(page)
