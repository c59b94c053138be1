"""Chat sessions and messages as plain dicts: one shape for the API, the pages and `message_done`."""

from __future__ import annotations

from typing import Any

from chat.course import roster
from chat.course.model_choice import current_model, model_choices
from chat.models import AnswerMode, ChatSession, Enrollment, Message, MessageRole
from kernel.rendering import render_markdown


def cite_anchor(message_id: int, n: int) -> str:
    return f"#cite-{message_id}-{n}"


def answer_html(message: Message) -> str:
    """The assistant's answer as sanitised HTML, [n] linked to this message's cited passages."""
    cited = {c["n"] for c in message.citations}
    return render_markdown(message.content, cite=lambda n: cite_anchor(message.id, n) if n in cited else None)


def with_html(view: dict[str, Any]) -> dict[str, Any]:
    """A stored passage view (chat.turn.events.PassageView) with its `html`, rendered now if it was
    stored without one."""
    if isinstance(view, dict) and "html" not in view and isinstance(view.get("text"), str):
        return view | {"html": render_markdown(view["text"])}
    return view


def _result_with_html(record: Any) -> Any:
    if isinstance(record, dict) and isinstance(record.get("passages"), list):
        return record | {"passages": [with_html(p) for p in record["passages"]]}
    return record


def message_dict(message: Message) -> dict[str, Any]:
    is_answer = message.role == MessageRole.ASSISTANT
    return {
        "id": message.id,
        "role": message.role,
        "content": message.content,
        # Only answers are rendered; a student's own text is shown as text, never as HTML.
        "html": answer_html(message) if is_answer else "",
        "status": message.status,
        "error": message.error,
        "mode": message.mode,
        # What a guard did to an answer (tutor mode's leak guard, the safety check); null: nothing.
        "guard": message.guard or None,
        # Who wrote an answer: the assistant, or its teacher (served without a model request).
        "answered_by": ("teacher" if message.mode == AnswerMode.TEACHER else "assistant") if is_answer else None,
        "model": message.model,
        "tool_calls": message.tool_calls,
        "tool_results": [_result_with_html(r) for r in message.tool_results],
        "citations": [with_html(c) for c in message.citations],
        "token_usage": message.token_usage,
        # The file attached to a question: its name and size only (its text stays with the chat).
        "attachment": (
            {"name": message.attachment_name, "pages": message.attachment_pages, "chars": len(message.attachment_text)}
            if message.attachment_name
            else None
        ),
        "created": message.created.isoformat(),
    }


def student_label(session: ChatSession, viewer) -> str:
    """Who wrote the chat, as `viewer` may know it: themselves by name; a teacher by the level the
    student was told of when the chat started ("Student 7" unless it was "named")."""
    if viewer is not None and viewer.pk == session.user_id:
        return session.user.display_name
    number = (
        Enrollment.objects.filter(prompt_id=session.prompt_id, student_id=session.user_id)
        .values_list("number", flat=True)
        .first()
    )
    return roster.known_as(session.user, number, session.visibility)


def session_dict(session: ChatSession, viewer=None, *, with_messages: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": session.id,
        "prompt_id": session.prompt_id,
        "prompt_name": session.prompt.name,
        "user": student_label(session, viewer),
        "title": str(session),
        "model": current_model(session),
        "model_choices": model_choices(session.prompt),
        "visibility": session.visibility,
        "created": session.created.isoformat(),
        "updated": session.updated.isoformat(),
    }
    if with_messages:
        data["messages"] = [message_dict(m) for m in session.messages.all()]
    return data
