"""REST endpoints for prompts, joining them, and chatting with them."""

from __future__ import annotations

from dataclasses import asdict
from datetime import date, datetime
from typing import Literal

import pydantic
from asgiref.sync import sync_to_async
from django.http import HttpResponse, StreamingHttpResponse
from django.utils.translation import gettext as _
from ninja import Field, Query, Router, Schema, Status

from accounts.models import User
from accounts.permissions import (
    Forbidden,
    get_answer_for_feedback,
    get_prompt_for_edit,
    get_prompt_for_owner,
    get_session_for_delete,
    get_session_for_read,
    require_login,
    require_teacher,
)
from chat import enrollment, export, feedback, insight, insight_csv, roster, usage, writes
from chat.agent import fail_orphaned_replies, new_session, stop_turn
from chat.attachments import Attachment, check_size, read_attachment
from chat.events import ListSink, sse_frame
from chat.models import ChatSession, EnrollmentStatus, Prompt
from chat.runner import run_turn_async, start_turn_for, stream_turn
from chat.serializers import message_dict, session_dict
from currechat.errors import InvalidInput
from currechat.ratelimit import client_address, join_by_address, limit_failures

router = Router(tags=["prompts"])


_STUDENT_MODELS = (
    "Models students may choose between in the chat, each on a configured server (`openai:` names for the "
    "OpenAI-compatible one); the prompt's own `model` is always among them. Empty: students get `model`."
)


# Lengths, models and collections are checked by chat.writes (as for the pages and the admin), so
# every channel refuses a bad value with the same sentence.
class PromptIn(Schema):
    name: str
    description: str = ""
    system_prompt: str = ""
    model: str | None = None
    temperature: float | None = None
    student_models: list[str] = Field(default_factory=list, description=_STUDENT_MODELS)
    collection_ids: list[int] = Field(default_factory=list)
    co_teacher_ids: list[int] = Field(default_factory=list, description="User ids of teachers who co-teach it.")
    curation_enabled: bool = True
    active: bool = True
    opens_at: datetime | None = None
    closes_at: datetime | None = None
    source_policy: Literal["material_only", "material_first", "no_search"] = "material_first"
    student_instructions: str = ""
    example_questions: list[str] = Field(default_factory=list)
    chat_visibility: Literal["none", "pseudonymous", "named"] = "pseudonymous"
    retention_days: int | None = None
    weekly_token_budget: int | None = None


class PromptPatch(Schema):
    """Properties left out are unchanged; `opens_at`, `closes_at`, `temperature`, `retention_days`
    and `weekly_token_budget` may be set to null to clear them."""

    name: str | None = None
    description: str | None = None
    system_prompt: str | None = None
    model: str | None = None
    temperature: float | None = None
    student_models: list[str] | None = Field(None, description=_STUDENT_MODELS)
    collection_ids: list[int] | None = None
    co_teacher_ids: list[int] | None = None
    curation_enabled: bool | None = None
    active: bool | None = None
    opens_at: datetime | None = None
    closes_at: datetime | None = None
    source_policy: Literal["material_only", "material_first", "no_search"] | None = None
    student_instructions: str | None = None
    example_questions: list[str] | None = None
    chat_visibility: Literal["none", "pseudonymous", "named"] | None = None
    retention_days: int | None = None
    weekly_token_budget: int | None = None


class PromptOut(Schema):
    id: int
    name: str
    description: str
    system_prompt: str
    model: str = Field(alias="chat_model")
    temperature: float | None
    student_models: list[str] = Field(description=_STUDENT_MODELS)
    collection_ids: list[int]
    unavailable_collection_ids: list[int] = Field(
        description="Connected collections none of the prompt's teachers may use any more: not searched."
    )
    owner: str = Field(alias="owner.username")
    co_teacher_ids: list[int]
    curation_enabled: bool
    active: bool
    opens_at: datetime | None
    closes_at: datetime | None
    state: Literal["draft", "open", "closed", "off"]
    source_policy: str
    student_instructions: str
    example_questions: list[str]
    chat_visibility: str
    retention_days: int | None
    weekly_token_budget: int | None
    join_code: str
    join_url: str
    student_count: int
    created: datetime

    @staticmethod
    def resolve_collection_ids(prompt: Prompt) -> list[int]:
        return sorted(c.id for c in prompt.collections.all())

    @staticmethod
    def resolve_unavailable_collection_ids(prompt: Prompt) -> list[int]:
        return sorted(prompt.unavailable_collections().values_list("pk", flat=True))

    @staticmethod
    def resolve_co_teacher_ids(prompt: Prompt) -> list[int]:
        return sorted(u.pk for u in prompt.co_teachers.all())

    @staticmethod
    def resolve_state(prompt: Prompt) -> str:
        return prompt.state()

    @staticmethod
    def resolve_join_url(prompt: Prompt, context) -> str:
        return context["request"].build_absolute_uri(f"/join/{prompt.join_code}/")

    @staticmethod
    def resolve_student_count(prompt: Prompt) -> int:
        return prompt.enrollments.filter(status=EnrollmentStatus.ENROLLED).count()


class StudentOut(Schema):
    id: int = Field(description="The student's number within the prompt ('Student N'); not a user id.")
    label: str
    status: Literal["enrolled", "removed", "blocked"]
    joined: datetime
    last_active: datetime | None
    chats: int
    messages: int
    tokens_this_week: int
    budget: int | None
    blocked: bool


class JoinCodeOut(Schema):
    join_code: str
    join_url: str


class JoinIn(Schema):
    code: str = Field(min_length=1, max_length=32)


class JoinedOut(Schema):
    id: int
    name: str
    description: str


# API property -> model field, for the write functions.
_RENAMED = {"model": "chat_model", "collection_ids": "collections", "co_teacher_ids": "co_teachers"}
# Properties whose null means "clear it" in a PATCH (for the others, null means "leave it").
_NULLABLE = {"opens_at", "closes_at", "temperature", "retention_days", "weekly_token_budget"}


def _changes(data: Schema, *, partial: bool) -> dict:
    sent = data.dict(exclude_unset=partial)
    changes = {
        _RENAMED.get(name, name): value
        for name, value in sent.items()
        if value is not None or not partial or name in _NULLABLE
    }
    if changes.get("co_teachers") is not None:
        changes["co_teachers"] = list(User.objects.filter(pk__in=changes["co_teachers"]))
    return changes


@router.get("/prompts", response=list[PromptOut])
def list_prompts(request):
    """The prompts you teach (own or co-teach)."""
    require_teacher(request.user)
    return Prompt.objects.editable_by(request.user).select_related("owner").prefetch_related("collections")


@router.post("/prompts", response={201: PromptOut})
def create_prompt(request, data: PromptIn):
    require_teacher(request.user)
    changes = _changes(data, partial=False)
    if "weekly_token_budget" not in data.model_fields_set:
        del changes["weekly_token_budget"]  # the deployment's default (CHAT_WEEKLY_TOKEN_BUDGET)
    return Status(201, writes.create_prompt(request.user, changes))


@router.get("/prompts/{int:prompt_id}", response=PromptOut)
def get_prompt(request, prompt_id: int):
    return get_prompt_for_edit(request.user, prompt_id)


@router.patch("/prompts/{int:prompt_id}", response=PromptOut)
def update_prompt(request, prompt_id: int, data: PromptPatch):
    """Owner and co-teachers; only the owner changes `co_teacher_ids`."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    return writes.update_prompt(request.user, prompt, _changes(data, partial=True))


@router.delete("/prompts/{int:prompt_id}", response={204: None})
def delete_prompt(request, prompt_id: int):
    """The owner only."""
    get_prompt_for_owner(request.user, prompt_id).delete()
    return Status(204, None)


@router.post("/prompts/{int:prompt_id}/duplicate", response={201: PromptOut})
def duplicate_prompt(request, prompt_id: int):
    """A copy: settings and collections, a new join code, no students, owned by you."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    return Status(201, writes.duplicate_prompt(request.user, prompt))


@router.post("/prompts/{int:prompt_id}/join-code", response=JoinCodeOut)
def rotate_join_code(request, prompt_id: int):
    """A new join code; the old code and link stop working at once."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    code = enrollment.rotate_join_code(prompt)
    return {"join_code": code, "join_url": request.build_absolute_uri(f"/join/{code}/")}


@router.get("/prompts/{int:prompt_id}/students", response=list[StudentOut])
def list_students(request, prompt_id: int):
    """The prompt's students (enrolled first, then removed and blocked), named only when the
    prompt's chat visibility is `named` and every chat the student has in it was started `named`."""
    return roster.roster(get_prompt_for_edit(request.user, prompt_id))


@router.delete("/prompts/{int:prompt_id}/students/{int:student_id}", response={204: None})
def remove_student(request, prompt_id: int, student_id: int, block: bool = False):
    """Remove a student at once (their open chats stop too); `?block=true` keeps them from joining again."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    enrollment.remove_student(roster.enrollment_by_number(prompt, student_id), block=block)
    return Status(204, None)


@router.post("/prompts/{int:prompt_id}/students/{int:student_id}/readmit", response=StudentOut)
def readmit_student(request, prompt_id: int, student_id: int):
    """Enroll a removed or blocked student again."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    enrollment.readmit_student(roster.enrollment_by_number(prompt, student_id))
    return next(row for row in roster.roster(prompt) if row.id == student_id)


@router.post("/prompts/join", response=JoinedOut)
def join(request, data: JoinIn):
    # Unknown codes count against the caller's address: guessing codes gets a 429.
    prompt = limit_failures(
        join_by_address(), client_address(request), lambda: enrollment.join_prompt(request.user, data.code)
    )
    return {"id": prompt.id, "name": prompt.name, "description": prompt.description}


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
    mode: str = Field(description="'model', or 'extractive' when no language model was connected.")
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
        sessions = sessions.filter(prompt_id=prompt_id)
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


# --- Teacher insight: statistics, material gaps, feedback (chat/insight.py, chat/feedback.py) ------
class DayOut(Schema):
    date: date
    messages: int
    tokens: int
    searches: int


class SourceOut(Schema):
    file_id: int
    file_name: str
    section: str
    citations: int


class StatsOut(Schema):
    days: int
    enrolled: int
    active_7d: int
    active_30d: int
    chats: int
    messages: int = Field(description="Students' questions and the answers to them.")
    tokens: int
    by_day: list[DayOut]
    searches_per_answer: float | None
    nothing_relevant_share: float | None = Field(description="Share of answers with a search that found nothing.")
    top_sources: list[SourceOut]
    curation_drop_rate: float | None = Field(description="Share of found passages that curation left out.")
    feedback: dict[str, int]


class GapOut(Schema):
    id: int
    query: str
    count: int
    first_asked: datetime
    last_asked: datetime
    example: str | None = Field(description="A student's question; null when the chat's privacy level hides it.")
    handled: bool
    handled_at: datetime | None
    search_url: str | None = Field(description="'Try a search' with the query, in a collection you may search.")


class FeedbackIn(Schema):
    rating: Literal["up", "down"]
    comment: str | None = Field(None, description="Left out: the earlier comment stays; empty: removed.")


class FeedbackOut(Schema):
    message_id: int
    rating: str
    comment: str
    updated: datetime


@router.get("/prompts/{int:prompt_id}/stats", tags=["insight"], response=StatsOut)
def prompt_stats(request, prompt_id: int, days: int = Query(30, ge=1, le=insight.MAX_DAYS)):
    """Statistics of the students' chats over the last `days` days (today included): counts only, no chat text."""
    return insight.statistics(get_prompt_for_edit(request.user, prompt_id), days)


@router.get("/prompts/{int:prompt_id}/gaps", tags=["insight"], response=list[GapOut])
def prompt_gaps(request, prompt_id: int):
    """Searches that found nothing relevant, grouped by their stemmed words; open gaps first."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    search = insight_csv.search_page(request.user, prompt)
    return [_gap_out(row, search) for row in insight.gaps(prompt)]


@router.post("/prompts/{int:prompt_id}/gaps/{int:gap_id}/handled", tags=["insight"], response=GapOut)
def gap_handled(request, prompt_id: int, gap_id: int, handled: bool = True):
    """Mark a gap handled (`?handled=false` opens it again); it opens again when asked after this."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    row = insight.mark_gap_handled(prompt, gap_id, handled=handled)
    return _gap_out(row, insight_csv.search_page(request.user, prompt))


def _gap_out(row, search_page: str | None) -> dict:
    return {**asdict(row), "search_url": insight_csv.search_url(search_page, row.query)}


@router.get("/prompts/{int:prompt_id}/export.csv", tags=["insight"], response={200: None})
def export_insight_csv(request, prompt_id: int, what: Literal["stats", "gaps", "feedback"] = "stats", days: int = 30):
    """Statistics per day, the gaps, or the feedback as CSV (UTF-8, for spreadsheets)."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    if not 1 <= days <= insight.MAX_DAYS:
        raise InvalidInput(_("days must be between 1 and %(most)s.") % {"most": insight.MAX_DAYS}, field="days")
    response = HttpResponse(insight_csv.export(prompt, what, days), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="currechat-prompt-{prompt.pk}-{what}.csv"'
    return response


@router.post("/messages/{int:message_id}/feedback", tags=["chats"], response=FeedbackOut)
def give_feedback(request, message_id: int, data: FeedbackIn):
    """Rate an answer in your own chat (again, to change it); the comment is optional."""
    message = get_answer_for_feedback(request.user, message_id)
    stored = feedback.give_feedback(message, data.rating, data.comment)
    return {"message_id": message.pk, "rating": stored.rating, "comment": stored.comment, "updated": stored.updated}


# --- Token budgets (chat/usage.py) ---------------------------------------------------------------------
class PromptUsageOut(Schema):
    prompt_id: int
    used: int
    budget: int | None = Field(description="Your weekly tokens in this prompt; null: no limit.")
    exempt: bool
    warning: bool = Field(description="True from 90% of a limit on.")
    exhausted: bool = Field(description="True when a limit is used up: messages are refused until the reset.")
    share: float | None = Field(description="The larger share used of your limits (0 to 1); null: no limit.")
    text: str = Field(description="The chat's usage line, e.g. 'You have used 45% of this week's allowance.'")


class TotalUsageOut(Schema):
    used: int
    budget: int | None


class UsageOut(Schema):
    week_resets_at: datetime
    prompts: list[PromptUsageOut]
    total: TotalUsageOut


class BudgetIn(Schema):
    reset: bool = Field(False, description="Forget what the student used this week in this prompt.")
    weekly_token_budget: int | None = Field(
        None, ge=0, description="The student's own weekly budget; null: the prompt's budget again."
    )


class ExemptIn(Schema):
    exempt: bool


@router.get("/me/usage", tags=["usage"], response=UsageOut)
def my_usage(request, prompt_id: int | None = None):
    """Your tokens this week in each prompt you joined or teach (`?prompt_id=` for one) and in total."""
    require_login(request.user)
    prompts = Prompt.objects.visible_to(request.user).order_by("name", "id")
    if prompt_id is not None:
        prompts = prompts.filter(pk=prompt_id)
    return usage.usage_for(request.user, list(prompts))


@router.post("/prompts/{int:prompt_id}/students/{int:student_id}/budget", response=StudentOut)
def student_budget(request, prompt_id: int, student_id: int, data: BudgetIn):
    """Teachers reset one student's week (`{reset: true}`) or give them a budget of their own
    (`{weekly_token_budget: n}`; null goes back to the prompt's); both may be sent together."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    student = roster.enrollment_by_number(prompt, student_id).student_id
    budget = data.weekly_token_budget if "weekly_token_budget" in data.model_fields_set else usage.KEEP
    usage.change_student_budget(prompt, student, reset=data.reset, weekly_token_budget=budget)
    return next(row for row in roster.roster(prompt) if row.id == student_id)


@router.post("/prompts/{int:prompt_id}/budget/exempt", response=PromptUsageOut)
def exempt_myself(request, prompt_id: int, data: ExemptIn):
    """Teachers of the prompt (owner, co-teachers) switch its budgets off or on for themselves."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    usage.set_exempt(request.user.pk, prompt, data.exempt)
    return usage.usage_for(request.user, [prompt])["prompts"][0]
