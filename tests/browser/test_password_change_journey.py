"""A password change while a chat page is open (issue 38, item 5): the change ends every open
socket of the account's sessions, the page's own included, since the browser that changed it has a
new session. The page reconnects with the browser's cookie as it is now and sends the question
again, once; another browser signed in as the same student is signed out at its next question."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

SETUP = """
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
teacher = User.objects.create_user("pirkko", password="pirkon-salasana-7", role=Role.TEACHER)
student = User.objects.create_user("pekka", password="pekan-salasana-42", role=Role.STUDENT)
prompt = Prompt.objects.create(owner=teacher, name="Password journey", chat_model="qwen3:8b", curation_enabled=False)
Enrollment.objects.create(student=student, prompt=prompt)
"""
STORED = """
from chat.models import Message
print(Message.objects.filter(session__user__username="pekka", role="user", content={text!r}).count())
"""
# Every text the composer's note and the connection line show, however briefly.
WATCH = """() => {
    window.__shown = [];
    for (const id of ["composer-note", "connection-status"]) {
        const node = document.getElementById(id);
        new MutationObserver(() => window.__shown.push(node.textContent))
            .observe(node, {childList: true, subtree: true, characterData: true});
    }
}"""


def ask(page, text: str) -> None:
    page.get_by_label("Your question").fill(text)
    page.get_by_role("button", name="Send").click()


def test_the_page_of_the_browser_that_changed_the_password_reconnects_and_asks_again(live_app, new_page, ollama):
    live_app.manage("shell", "-c", SETUP)
    chat = new_page()
    log_in(chat, live_app, "pekka", "pekan-salasana-42")
    chat.get_by_role("link", name="Password journey").click()
    no_overflow(chat)
    chat.get_by_role("link", name="New chat").click()
    no_overflow(chat)
    ollama.script(Reply(content="The mean is the average."))
    ask(chat, "What is the mean?")
    conversation = chat.get_by_test_id("conversation")
    expect(conversation.locator(".msg.assistant")).to_contain_text("The mean is the average.")

    # Another computer, signed in as the same student, has the same chat open.
    other = new_page()
    log_in(other, live_app, "pekka", "pekan-salasana-42")
    other.goto(chat.url)
    no_overflow(other)
    expect(other.get_by_test_id("conversation").locator(".msg.assistant")).to_have_count(1)

    # A second tab of the first browser changes the password; the chat tab stays open.
    profile = chat.context.new_page()
    profile.goto(live_app.url + "/account/profile/")
    no_overflow(profile)
    profile.get_by_label("Old password").fill("pekan-salasana-42")
    profile.get_by_label("New password", exact=True).fill("a-brand-new-staple-2026")
    profile.get_by_label("New password confirmation").fill("a-brand-new-staple-2026")
    profile.get_by_role("button", name="Change password").click()
    expect(profile.get_by_text("Your password was changed.")).to_be_visible()
    no_overflow(profile)

    # The chat tab's question is answered, once, and it never says the student was signed out.
    chat.evaluate(WATCH)
    calls = len(ollama.chat_requests())
    ollama.script(Reply(content="The median is the middle value."))
    ask(chat, "And the median?")
    expect(conversation.locator(".msg.assistant").last).to_contain_text("The median is the middle value.")
    expect(conversation.locator(".msg.user")).to_have_text(["What is the mean?", "And the median?"])
    assert not [text for text in chat.evaluate("() => window.__shown") if "signed out" in text]
    assert len(ollama.chat_requests()) == calls + 1
    assert live_app.manage("shell", "-c", STORED.format(text="And the median?")).split()[-1] == "1"
    expect(chat.get_by_label("Your question")).to_have_value("")

    # The other computer's question is refused: it is signed out, and nothing was asked or stored.
    ask(other, "Still signed in?")
    expect(other.locator("#composer-note")).to_have_text("You were signed out. Log in again to continue.")
    expect(other.locator("#connection-status")).to_have_text("You may not open this chat any more.")
    assert len(ollama.chat_requests()) == calls + 1
    assert live_app.manage("shell", "-c", STORED.format(text="Still signed in?")).split()[-1] == "0"
