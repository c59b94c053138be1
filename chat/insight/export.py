"""Chats as files: one chat as Markdown for its student, a prompt's chats as JSON Lines for its
teachers (only the chats their privacy level lets teachers read, under the label students were told)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import ChatSession, Message, MessageRole, MessageStatus, Prompt
from chat.serializers import student_label
from kernel.formats import moment


def _where(passage: dict) -> str:
    parts = [passage.get("file_name") or "a file"]
    page, page_end = passage.get("page"), passage.get("page_end")
    if page is not None:
        parts.append(f"p. {page}" if page_end in (None, page) else f"pp. {page}–{page_end}")
    if passage.get("section"):
        parts.append(passage["section"])
    return ", ".join(parts)


def _quote(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _answer_markdown(message: Message) -> list[str]:
    lines = [message.content.strip() or "_({})_".format(_("no text"))]
    if message.status == MessageStatus.STOPPED:
        lines.append("\n_({})_".format(_("You stopped this answer.")))
    elif message.status == MessageStatus.FAILED:
        lines.append("\n_({})_".format(_("No answer: %(error)s") % {"error": message.error}))
    if message.citations:
        lines.append("\n{}\n".format(_("Sources:")))
        lines += [f"- [{c['n']}] {_where(c)}: “{_quote(c.get('text', ''))}”" for c in message.citations]
    return lines


def chat_markdown(session: ChatSession) -> str:
    """The chat as its student reads it, citations resolved to file, page and section; a document for
    people, so its times are written as the student's language writes them (kernel/formats.py)."""
    out = [
        f"# {session}",
        "",
        _("%(prompt)s · started %(started)s · exported %(exported)s")
        % {"prompt": session.prompt.name, "started": moment(session.created), "exported": moment(timezone.now())},
    ]
    for message in session.messages.all():
        when = moment(message.created)
        if message.role == MessageRole.USER:
            out += ["", "## " + _("You (%(when)s)") % {"when": when}, "", message.content.strip()]
            if message.attachment_name:
                out += ["", "_{}_".format(_("Attached: %(name)s") % {"name": message.attachment_name})]
        else:
            out += ["", "## " + _("Assistant (%(when)s)") % {"when": when}, "", *_answer_markdown(message)]
    return "\n".join(out) + "\n"


def export_filename(session: ChatSession) -> str:
    slug = "".join(ch if ch.isalnum() else "-" for ch in str(session).lower()).strip("-")[:50] or "chat"
    return f"currechat-{session.pk}-{slug}.md"


def prompt_chats_jsonl(prompt: Prompt, viewer) -> Iterator[str]:
    """One JSON line per chat a teacher may read: labelled as its student was told, with the
    questions, answers, their status, searches and citations. Times are ISO 8601 in every interface
    language: the lines are read by programs, not people."""
    sessions = ChatSession.objects.readable_by(viewer).filter(prompt=prompt).exclude(user=viewer)
    for session in sessions.select_related("user", "prompt").prefetch_related("messages"):
        record = {
            "chat_id": session.pk,
            "student": student_label(session, viewer),
            "visibility": session.visibility,
            "title": str(session),
            "created": session.created.isoformat(),
            "messages": [
                {
                    "role": m.role,
                    "content": m.content,
                    "status": m.status,
                    "created": m.created.isoformat(),
                    "searches": [r.get("query") for r in m.tool_results],
                    "citations": [{"n": c["n"], "source": _where(c)} for c in m.citations],
                }
                for m in session.messages.all()
            ],
        }
        yield json.dumps(record, ensure_ascii=False) + "\n"
