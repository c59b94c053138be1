"""The teachers' own answers to frequent questions: the one write path, the lookup a chat turn
makes before it asks any model, and expiry when cited material changes.

A student's question matches an answer when both have the same key: the wording case folded,
diacritics, punctuation and extra whitespace removed (`question_key`) — seed 001's exact-key
cache. A match is answered with the teacher's text and sources, marked as the teacher's, with no
model request and nothing taken from any budget (chat/turn/agent.start_turn); the student may
still ask the assistant (the chat's "regenerate" runs the normal turn).

An answer cites passages or whole files of the prompt's collections. When one of those files is
read again, corrected or deleted, the answer expires (`expire_citing`, connected in chat/apps.py
to the collections app's signals) and is served no more; the teacher sees why on the insight page
and in the API (`expired: true`) and saves it again to serve it.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import Prompt, TeacherAnswer, TeacherAnswerFile
from collections_app.models import FileStatus, SourceFile
from kernel.compiled import Compiled
from kernel.errors import Conflict, InvalidInput, NotFound
from kernel.formats import number
from kernel.rendering import render_markdown
from rag.index import ChunkStore
from rag.text import compare_form

MAX_QUESTION_CHARS = 500
MAX_ANSWER_CHARS = 20_000
MAX_SOURCES = 20
_WORDS = re.compile(r"[^\W_]+")


def question_key(text: str) -> str:
    """ "When is the EXAM??", "  when is the exam " and "Whén is the exam" are one key; words in
    every alphabet are kept, in order (rag's `compare_form`)."""
    return " ".join(_WORDS.findall(compare_form(text)))[:MAX_QUESTION_CHARS]


def answer_for(prompt_id: int, text: str) -> TeacherAnswer | None:
    """The teacher's answer a student's question gets, if any (one indexed query)."""
    key = question_key(text)
    if not key:
        return None
    return _SERVED.first(prompt_id, key)


# Asked on every question: its SQL is compiled once (kernel/compiled.py), the row read afresh. One
# row at most (unique per prompt and key): no ordering to sort by.
_SERVED = Compiled(
    lambda prompt, key: TeacherAnswer.objects.filter(prompt_id=prompt, key=key, expired_at__isnull=True).order_by()[:1],
    int,
    str,
)


def note_served(answer: TeacherAnswer) -> None:
    TeacherAnswer.objects.filter(pk=answer.pk).update(served=F("served") + 1)


# --- The one write path (API, page) -----------------------------------------------------------------


def save_answer(
    prompt: Prompt,
    author,
    *,
    question: str,
    answer: str,
    sources: list[dict[str, Any]] | None = None,
    instance: TeacherAnswer | None = None,
) -> TeacherAnswer:
    """Create (or, with `instance`, change) a teacher's answer; saving an expired one serves it
    again. `sources` are `{file_id, chunk_id?}` of files in the prompt's collections (None: keep
    those it has). The caller has checked that `author` teaches the prompt."""
    question = " ".join((question or "").split())
    answer = (answer or "").strip()
    key = question_key(question)
    if not key:
        raise InvalidInput(_("Write the question this answer is for."), field="question")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(
            _("The question has %(length)s characters; the most is %(most)s.")
            % {"length": number(len(question)), "most": number(MAX_QUESTION_CHARS)},
            field="question",
        )
    if not answer:
        raise InvalidInput(_("Write the answer students should get."), field="answer")
    if len(answer) > MAX_ANSWER_CHARS:
        raise InvalidInput(
            _("The answer has %(length)s characters; the most is %(most)s.")
            % {"length": number(len(answer)), "most": number(MAX_ANSWER_CHARS)},
            field="answer",
        )
    row = instance or TeacherAnswer(prompt=prompt)
    if sources is not None or instance is None:
        row.sources = resolve_sources(prompt, sources or [])
    row.question, row.key, row.answer, row.author = question, key, answer, author
    row.expired_at, row.expired_because = None, ""
    try:
        with transaction.atomic():
            row.save()
            row.cited_files.all().delete()
            files = {s["file_id"]: s["file_name"] for s in row.sources}
            TeacherAnswerFile.objects.bulk_create(
                [TeacherAnswerFile(answer=row, file_id=f, file_name=name[:255]) for f, name in files.items()]
            )
    except IntegrityError as exc:
        raise Conflict(
            _("There is already an answer to “%(question)s”; change that one instead.") % {"question": question}
        ) from exc
    return row


def resolve_sources(prompt: Prompt, wanted: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cited passages as the chat shows them, numbered [1], [2]…: a passage read from the index
    (`chunk_id`) or a whole file (its name only). Only ready files of the prompt's usable collections."""
    if len(wanted) > MAX_SOURCES:
        raise InvalidInput(_("Cite at most %(most)s sources.") % {"most": MAX_SOURCES}, field="sources")
    ids = [_file_id(item) for item in wanted]
    files = {
        f.pk: f
        for f in SourceFile.objects.filter(
            pk__in=ids, status=FileStatus.READY, collection__in=prompt.usable_collections()
        )
    }
    views = []
    for n, (item, file_id) in enumerate(zip(wanted, ids, strict=True), start=1):
        source = files.get(file_id)
        if source is None:
            raise InvalidInput(
                _("File %(id)s is not a ready file of this prompt's collections.") % {"id": file_id}, field="sources"
            )
        view = _file_view(n, source)
        chunk_id = str(item.get("chunk_id") or "")
        if chunk_id:
            position = chunk_id.rsplit(":", 1)[-1]
            store = ChunkStore(source.collection_id)
            chunk = None
            if position.isdigit() and chunk_id == store.key(file_id, int(position)):
                chunk = store.file_chunk(file_id, int(position))
            if chunk is None:
                raise InvalidInput(
                    _("A cited passage is no longer in the index; search for it again."), field="sources"
                )
            view |= {
                "chunk_id": chunk_id,
                "page": chunk.page_start,
                "page_end": chunk.page_end,
                "section": chunk.heading_path,
                "text": chunk.text,
                "html": render_markdown(chunk.text),
            }
        views.append(view)
    return views


def _file_id(item: dict[str, Any]) -> int:
    try:
        return int(item["file_id"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(_("Each source needs the number of a file (file_id)."), field="sources") from exc


def _file_view(n: int, source) -> dict[str, Any]:
    """A whole file as a cited passage (the shape of chat.turn.events.PassageView)."""
    return {
        "n": n,
        "chunk_id": "",
        "collection_id": source.collection_id,
        "file_id": source.pk,
        "file_name": source.original_name,
        "page": None,
        "page_end": None,
        "section": "",
        "text": "",
        "score": 0.0,
        "curation_score": None,
        "html": "",
    }


def get_answer(prompt: Prompt, answer_id: int) -> TeacherAnswer:
    row = TeacherAnswer.objects.filter(prompt=prompt, pk=answer_id).first()
    if row is None:
        raise NotFound(_("There is no such answer in this prompt."))
    return row


def delete_answer(row: TeacherAnswer) -> None:
    row.delete()


# --- Expiry -------------------------------------------------------------------------------------------


def expire_citing(file_id: int, because: str) -> int:
    """Stop serving every answer that cites file `file_id`; `because` is what the teacher reads.
    Returns how many answers expired now."""
    citing = TeacherAnswerFile.objects.filter(file_id=file_id).values("answer_id")
    return TeacherAnswer.objects.filter(pk__in=citing, expired_at__isnull=True).update(
        expired_at=timezone.now(), expired_because=because[:300]
    )


def on_file_changed(sender, *, file_id: int, file_name: str, **kwargs) -> None:
    expire_citing(file_id, _("“%(name)s”, which it cites, was read again or corrected.") % {"name": file_name})


def on_file_deleted(sender, instance, **kwargs) -> None:
    expire_citing(instance.pk, _("“%(name)s”, which it cites, was deleted.") % {"name": instance.original_name})
