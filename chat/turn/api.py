"""REST endpoints for chats: start one, send a message (the answer streams or comes whole), stop, retry, export."""

from __future__ import annotations

from typing import Literal

import pydantic
from asgiref.sync import sync_to_async
from django.http import HttpResponse, StreamingHttpResponse
from django.utils.translation import gettext as _
from ninja import Field, Router, Schema, Status

from access.rules import (
    get_prompt_for_edit,
    get_session_for_delete,
    get_session_for_read,
    require_login,
)
from chat.insight import export
from chat.models import ChatSession
from chat.serializers import message_dict, session_dict
from chat.turn.agent import fail_orphaned_replies, new_session, stop_turn
from chat.turn.attachments import Attachment, check_size, read_attachment
from chat.turn.events import ListSink, sse_frame
from chat.turn.runner import run_turn_async, start_turn_for, stream_turn
from kernel.errors import Forbidden, InvalidInput

router = Router(tags=["chats"])


# --- Chats -----------------------------------------------------------------------------------------
class ChatIn(Schema):
    prompt_id: int


class MessageIn(Schema):
    content: str
    model: str | None = Field(
        None,
        description="One of the chat's `model_choices` to answer with, from this message on; left out: the chat's.",
    )


class MessageOut(Schema):
    id: int
    role: str
    content: str
    html: str = Field(description="The answer as sanitised HTML (Markdown, tables, MathML, citation links).")
    status: str
    error: str
    mode: str = Field(
        description="'model', 'extractive' when no language model was connected, or 'teacher' (the teacher's answer)."
    )
    answered_by: str | None = Field(
        None,
        description="An answer's author: 'assistant', or 'teacher' for the teacher's own answer to the "
        "question, served without a model request (`POST /chats/{id}/regenerate` asks the assistant "
        "instead); null for a question.",
    )
    guard: str | None = Field(
        None,
        description="What a guard did to an answer: 'rewritten' or 'withheld' (tutor mode's leak guard), "
        "'flagged' or 'flagged_output' (the safety check); null: nothing.",
    )
    model: str
    tool_calls: list[dict]
    tool_results: list[dict]
    citations: list[dict]
    token_usage: dict
    attachment: dict | None = Field(None, description="A question's attached file: {name, pages, chars}.")
    created: str


class ChatOut(Schema):
    id: int
    prompt_id: int
    prompt_name: str
    user: str
    title: str
    model: str = Field(description="The model the chat's next message goes to unless the message names another.")
    model_choices: list[str] = Field(description="The models a message may name: the prompt's models for students.")
    created: str
    updated: str


class ChatDetailOut(ChatOut):
    messages: list[MessageOut]


@router.post("/chats", tags=["chats"], response={201: ChatOut})
def create_chat(request, data: ChatIn):
    """Start a chat with a prompt you joined (or your own)."""
    return Status(201, session_dict(new_session(request.user, data.prompt_id), request.user))


@router.get("/chats", tags=["chats"], response=list[ChatOut])
def list_chats(request, prompt_id: int | None = None):
    """Your chats; for teachers, also their students' chats on their prompts."""
    require_login(request.user)
    sessions = ChatSession.objects.readable_by(request.user).select_related("prompt", "user")
    if prompt_id is not None:
        # Through the prompt's own key: Django answers an id no key can be with no rows there (5.0),
        # where `prompt_id=` would send it to the database (SQLite refuses it as a parameter).
        sessions = sessions.filter(prompt__pk=prompt_id)
    return [session_dict(s, request.user) for s in sessions]


@router.get("/chats/{int:chat_id}", tags=["chats"], response=ChatDetailOut)
def get_chat(request, chat_id: int):
    """A chat with its messages, each answer's searches, results and citations."""
    session = get_session_for_read(request.user, chat_id)
    fail_orphaned_replies(session)
    return session_dict(session, request.user, with_messages=True)


_MESSAGE_BODY = {
    "required": True,
    "content": {
        "application/json": {"schema": MessageIn.model_json_schema()},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "model": {"type": "string", "description": "One of the chat's `model_choices`."},
                    "attachment": {"type": "string", "format": "binary", "description": "Text, Markdown, HTML or PDF."},
                },
            }
        },
    },
}


def _message_input(request) -> tuple[str, Attachment | None, str | None]:
    """The question, its attachment and the model chosen for it (JSON `{content, model?}`, or
    multipart `content` + optional `model` and `attachment` file)."""
    if request.content_type == "multipart/form-data":
        content, model = request.POST.get("content", ""), request.POST.get("model") or None
        upload = request.FILES.get("attachment")
        if upload is None:
            return content, None, model
        check_size(upload.name or "attachment", upload.size or 0)  # before its bytes are read
        return content, read_attachment(upload.name, upload.read()), model
    try:
        data = MessageIn.model_validate_json(request.body or b"{}")
    except pydantic.ValidationError:
        raise InvalidInput(_('Send {"content": "your question"} as JSON, or a multipart form with "content".'))
    return data.content, None, data.model


@router.post(
    "/chats/{int:chat_id}/messages",
    tags=["chats"],
    response={200: MessageOut, 400: dict, 413: dict, 409: dict, 415: dict, 429: dict},
    openapi_extra={"requestBody": _MESSAGE_BODY, "responses": {200: {"content": {"text/event-stream": {}}}}},
)
async def post_message(request, chat_id: int):
    """Ask a question, optionally with an attached file whose text the model reads with it (never
    added to any collection). Returns the finished answer, or with `Accept: text/event-stream`
    the same events as the websocket (`token`, `tool_call`, `tool_result`, `message_done`, `error`)."""
    content, attachment, model = await sync_to_async(_message_input)(request)
    turn = await sync_to_async(start_turn_for)(request.user, chat_id, content, attachment=attachment, model=model)
    return await _answer(request, turn)


@router.post("/chats/{int:chat_id}/stop", tags=["chats"], response={202: dict, 409: dict})
def stop_answer(request, chat_id: int):
    """Stop the answer being written: it ends with `message_done` whose status is `stopped`,
    keeping its text so far; the next message can be sent at once. 409 when nothing is running."""
    stop_turn(request.user, chat_id)
    return Status(202, {"detail": _("Stopping the answer.")})


@router.get("/chats/{int:chat_id}/export", tags=["chats"], response={200: None})
def export_chat(request, chat_id: int, format: Literal["md"] = "md"):
    """Your chat as Markdown, citations resolved to file, page and section."""
    session = get_session_for_read(request.user, chat_id)
    if session.user_id != request.user.pk:
        raise Forbidden(_("Only the chat's student can download it; teachers export a prompt's chats."))
    response = HttpResponse(export.chat_markdown(session), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export.export_filename(session)}"'
    return response


@router.delete("/chats/{int:chat_id}", tags=["chats"], response={204: None})
def delete_chat(request, chat_id: int):
    """Delete your own chat with all its messages (gone from the teachers' view too)."""
    get_session_for_delete(request.user, chat_id).delete()
    return Status(204, None)


@router.get("/prompts/{int:prompt_id}/chats", tags=["prompts"], response=list[ChatOut])
def prompt_chats(request, prompt_id: int):
    """Students' chats on a prompt you teach, as far as its privacy level lets teachers read them."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    sessions = ChatSession.objects.readable_by(request.user).filter(prompt=prompt).exclude(user=request.user)
    return [session_dict(s, request.user) for s in sessions.select_related("prompt", "user")]


@router.get("/prompts/{int:prompt_id}/chats/export.jsonl", tags=["prompts"], response={200: None})
def export_prompt_chats(request, prompt_id: int):
    """The same chats as JSON Lines, one chat per line, for a teacher's own analysis."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    response = StreamingHttpResponse(
        export.prompt_chats_jsonl(prompt, request.user), content_type="application/jsonl; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="currechat-prompt-{prompt.pk}-chats.jsonl"'
    return response


@router.post("/chats/{int:chat_id}/regenerate", tags=["chats"], response={200: MessageOut, 409: dict, 429: dict})
async def regenerate_answer(request, chat_id: int):
    """Answer the last question again, whatever its answer was (that answer stays in the chat)."""
    turn = await sync_to_async(start_turn_for)(request.user, chat_id, None, regenerate=True)
    return await _answer(request, turn)


@router.post("/chats/{int:chat_id}/retry", tags=["chats"], response={200: MessageOut, 409: dict, 429: dict})
async def retry_message(request, chat_id: int):
    """Answer the last question again after a failed answer."""
    turn = await sync_to_async(start_turn_for)(request.user, chat_id, None, retry=True)
    return await _answer(request, turn)


async def _answer(request, turn):
    if "text/event-stream" in request.headers.get("Accept", ""):

        async def frames():
            async for event in stream_turn(turn):
                yield sse_frame(event)

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingHttpResponse(frames(), content_type="text/event-stream", headers=headers)
    reply = await run_turn_async(turn, ListSink())
    return message_dict(reply)
