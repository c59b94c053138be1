"""Plain words on teacher and student pages (issue 29 item 8): no model ids, "VLM", "stemming",
"fused score" or setting names outside a "Details" element, in English and Finnish."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import ChatSession, Feedback, Message, MessageRole
from collections_app.models import Collection
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call
from tests.fixtures_ingest import text_pdf

# What a teacher or student should never have to read outside "Details": technical names of
# models and methods (also as the Finnish translation writes them), model ids, and the
# administrator's setting names (CAPITALS_WITH_UNDERSCORES).
WORDS = re.compile(
    r"\bVLM\b|stemm|\bfused\b|\bRRF\b|reciprocal rank|embedding model|\bembeddings\b|\bvector\b"
    r"|qwen|llama|snowflake|arctic|minilm|bge-m3|nomic-embed|ollama|upotusmalli|upotukset|vektori",
    re.IGNORECASE,
)
SETTING = re.compile(r"\b[A-Z][A-Z0-9]+_[A-Z0-9_]{2,}\b")


class _Shown(HTMLParser):
    """The text a person reads without opening a "Details" element: no scripts or styles, nothing
    inside <details> (its summary included), and not the options of a model picker, whose job is
    to name the models (`MODEL_PICKERS`). Attribute values people read count as text."""

    SKIPPED = {"details", "script", "style", "template"}
    READ_ATTRS = ("aria-label", "data-confirm", "placeholder", "title", "alt")
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.stack: list[tuple[str, bool]] = []  # open elements: tag, and whether it hides its content

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        hidden = self.hiding() or tag in self.SKIPPED or (tag, attrs.get("id")) in MODEL_PICKERS
        if not hidden:
            self.parts.extend(attrs[name] or "" for name in self.READ_ATTRS if attrs.get(name))
        if tag not in self.VOID:
            self.stack.append((tag, hidden))

    def handle_endtag(self, tag):
        # An element left open (<li>, <p>) closes with its parent, as in a browser.
        if any(open_tag == tag for open_tag, _ in self.stack):
            while self.stack.pop()[0] != tag:
                pass

    def handle_data(self, data):
        if not self.hiding():
            self.parts.append(data)

    def hiding(self) -> bool:
        return any(hidden for _, hidden in self.stack)


# The pickers that name models (a chat model, the models students may choose between, a student's
# choice in the chat): a model's name is what is chosen there.
MODEL_PICKERS = {("select", "id_chat_model"), ("div", "id_student_models"), ("select", "composer-model")}


def shown_outside_details(html: str) -> str:
    parser = _Shown()
    parser.feed(html)
    return re.sub(r"\s+", " ", " ".join(parser.parts))


def banned_in(text: str) -> list[str]:
    """Each banned word or setting name in `text`, with a little of the text before it."""
    found = sorted([*WORDS.finditer(text), *SETTING.finditer(text)], key=lambda m: m.start())
    return [f"…{text[max(0, m.start() - 40) : m.start()]}[{m.group(0)}]" for m in found]


def test_the_check_reads_what_a_person_reads():
    """The check itself can fail: it sees words outside "Details", and only those."""
    page = (
        '<p title="Uses qwen3:8b">Search <b>by meaning</b></p><details><summary>Details</summary><p>local:'
        "all-MiniLM-L6-v2<details>VLM</details> RRF</p></details><li>fused score<script>'CHAT_MODEL'</script>"
        '<select id="id_chat_model"><option>llama3.2:3b</option></select><p>Set EMBED_ALLOWED_ORIGINS'
    )
    shown = shown_outside_details(page)
    assert [word.split("[")[1] for word in banned_in(shown)] == ["qwen]", "fused]", "EMBED_ALLOWED_ORIGINS]"]


@pytest.fixture
def seeded(fast_collection, ingest_upload, client_for, owner, student, ollama):
    """A course as a teacher and a student meet it: a collection with a Markdown file and a PDF
    read by the fast method, one in a language its model does not know (stored before the form
    offered the right model), a prompt whose students choose between two models, and a student's
    chat whose answer searched and cited."""
    from chat.models import Enrollment, Prompt

    notes = ingest_upload(fast_collection, b"# Sampling\n\nSelection bias arises when a sample is skewed.\n", "n.md")
    pdf = ingest_upload(fast_collection, text_pdf(["The mean is the average of the values."]), "mean.pdf", "fast")
    finnish = Collection.objects.create(name="Tilastotiede", language="finnish", owner=owner)  # the default: MiniLM
    prompt = Prompt.objects.create(
        owner=owner, name="Stats helper", chat_model="qwen3:8b", student_models=["qwen3:8b", "qwen3-vl:8b"],
        curation_enabled=False,
    )  # fmt: skip
    prompt.collections.add(fast_collection)
    Enrollment.objects.create(student=student, prompt=prompt)
    chat = ChatSession.objects.create(prompt=prompt, user=student)
    ollama.script(Reply(tool_calls=[search_call("selection bias")]), Reply(content="Bias skews a sample [1]."))
    response = client_for(student).post(
        f"/api/v1/chats/{chat.pk}/messages", {"content": "What is bias?"}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    answer = Message.objects.filter(session=chat, role=MessageRole.ASSISTANT).get()
    Feedback.objects.create(message=answer, prompt=prompt, rating="up", comment="Clear.")
    return {
        "prompt": prompt,
        "collection": fast_collection,
        "finnish": finnish,
        "notes": notes,
        "pdf": pdf,
        "chat": chat,
    }


def _teacher_pages(w) -> list[str]:
    c, p, fi = w["collection"], w["prompt"], w["finnish"]
    return [
        "/",
        reverse("collection_create"),
        reverse("collection_detail", args=[c.pk]),
        reverse("collection_settings", args=[c.pk]),
        reverse("collection_search", args=[c.pk]) + "?q=selection+bias&curate=on",
        reverse("collection_checks", args=[c.pk]),
        reverse("collection_detail", args=[fi.pk]),
        reverse("collection_settings", args=[fi.pk]),
        reverse("collection_search", args=[fi.pk]) + "?q=otos",
        reverse("file_detail", args=[w["notes"].pk]),
        reverse("file_detail", args=[w["pdf"].pk]),
        reverse("source_page", args=[w["pdf"].pk, 1]),
        reverse("source_context", args=[w["notes"].pk, 0]),
        reverse("prompt_create"),
        reverse("prompt_detail", args=[p.pk]),
        reverse("prompt_insight", args=[p.pk]),
        reverse("chat_home", args=[p.pk]),
        reverse("chat_session", args=[p.pk, w["chat"].pk]),
        reverse("account"),
        reverse("profile"),
        reverse("start_reset"),
    ]


def _student_pages(w) -> list[str]:
    c, p = w["collection"], w["prompt"]
    return [
        "/",
        f"/join/{p.join_code}/",
        reverse("chat_home", args=[p.pk]),
        reverse("chat_new", args=[p.pk]),
        reverse("chat_session", args=[p.pk, w["chat"].pk]),
        reverse("collection_search", args=[c.pk]) + "?q=selection+bias",
        reverse("source_context", args=[w["notes"].pk, 0]),
        reverse("account"),
        reverse("profile"),
    ]


@pytest.mark.parametrize("language", ["en", "fi"])
@pytest.mark.parametrize("who", ["owner", "student"])
def test_teacher_and_student_pages_use_plain_words(request, seeded, language, who):
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(request.getfixturevalue(who))
    paths = _teacher_pages(seeded) if who == "owner" else _student_pages(seeded)
    found = {}
    for path in paths:
        response = client.get(path, follow=True)  # a student's chat page opens their latest chat
        assert response.status_code == 200, (path, response.status_code)
        if words := banned_in(shown_outside_details(response.content.decode())):
            found[path] = words
    assert not found, "\n".join(f"{path}: {words}" for path, words in found.items())


def test_a_refused_language_and_model_pair_names_the_model_behind_details(client_for, owner, ollama):
    """Without JavaScript the server refuses the pair; the sentence naming the models is the
    field's, shown open under "Details"."""
    form = {"name": "Kurssi", "description": "", "language": "finnish", "embedding_model": "local:all-MiniLM-L6-v2"}
    page = client_for(owner).post(reverse("collection_create"), form).content.decode()
    assert "Choose “ollama:snowflake-arctic-embed2”" in page
    assert banned_in(shown_outside_details(page)) == []
