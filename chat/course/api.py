"""REST endpoints for running a course: prompts, joining them, their students and token budgets."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

from ninja import Field, Router, Schema, Status

from access.rules import (
    get_prompt_for_edit,
    get_prompt_for_owner,
    require_login,
    require_teacher,
)
from accounts.models import User
from chat.course import allowances, enrollment, roster, writes
from chat.models import EnrollmentStatus, Prompt
from kernel.ratelimit import client_address, join_by_address, limit_failures
from kernel.schemas import schema_from_dataclass

router = Router(tags=["prompts"])


_TUTOR_MODE = (
    "'guide': the assistant gives hints, questions and explanations, never a full solution, and every answer passes "
    "the leak guard; 'off': it answers as its instructions say."
)
_PROTECTED = (
    "Answer keys, worked solutions or hidden instructions the assistant reads in guide mode to guide students. "
    "Never shown to students, never indexed; teachers only ever see it."
)

_STUDENT_MODELS = (
    "Models students may choose between in the chat, each on a configured server (`openai:` names for the "
    "OpenAI-compatible one); the prompt's own `model` is always among them. Empty: students get `model`."
)


# Lengths, models and collections are checked by chat.course.writes (as for the pages and the admin), so
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
    tutor_mode: Literal["off", "guide"] = Field("off", description=_TUTOR_MODE)
    protected_material: str = Field("", description=_PROTECTED)


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
    tutor_mode: Literal["off", "guide"] | None = Field(None, description=_TUTOR_MODE)
    protected_material: str | None = Field(None, description=_PROTECTED)


class PromptOut(Schema):
    """A prompt as its teachers see it (owner, co-teachers, administrators): its students never get
    this shape (they get `JoinedOut`, and the chat's own fields), so `protected_material` stays here."""

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
    tutor_mode: str = Field(description=_TUTOR_MODE)
    protected_material: str = Field(description=_PROTECTED)
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


if TYPE_CHECKING:
    StudentOut = Schema
else:  # the roster's row as the API shows it
    StudentOut = schema_from_dataclass("StudentOut", roster.RosterRow, status=Literal["enrolled", "removed", "blocked"])


class JoinCodeOut(Schema):
    join_code: str
    join_url: str


_LEVEL = Literal["none", "pseudonymous", "named"]


class JoinIn(Schema):
    code: str = Field(min_length=1, max_length=32)
    privacy_confirmed: bool | None = Field(
        None,
        description="True once the student has read the prompt's privacy notice (the page `/join/{code}/privacy/`, "
        "or `GET /prompts/{id}/privacy`): the enrollment records the level confirmed and when. False is refused "
        "(400, `field`: `privacy_confirmed`). Left out (programs written before the notice existed): the student "
        "joins told the level now, as through a learning platform, and nothing is recorded as confirmed.",
    )
    privacy_level: _LEVEL | None = Field(
        None,
        description="The privacy level of the notice the student read; when the prompt's level is higher now, the "
        "join is refused (409) so that they read it again. Left out: the level now.",
    )


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
    """Join with a code. With `privacy_confirmed` the enrollment records the student's confirmation of
    the prompt's privacy notice (the level and when); `{code}` alone joins as the API always has."""
    require_login(request.user)

    def attempt() -> Prompt:
        return enrollment.join_prompt(
            request.user, data.code, confirmed=data.privacy_confirmed, seen_level=data.privacy_level
        )

    # Unknown codes count against the caller's address: guessing codes gets a 429.
    prompt = limit_failures(join_by_address(), client_address(request), attempt)
    return {"id": prompt.id, "name": prompt.name, "description": prompt.description}


# --- Token budgets (chat/metering/usage.py) ---------------------------------------------------------------------
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
    return allowances.usage_for(request.user, list(prompts))


@router.post("/prompts/{int:prompt_id}/students/{int:student_id}/budget", response=StudentOut)
def student_budget(request, prompt_id: int, student_id: int, data: BudgetIn):
    """Teachers reset one student's week (`{reset: true}`) or give them a budget of their own
    (`{weekly_token_budget: n}`; null goes back to the prompt's); both may be sent together."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    student = roster.enrollment_by_number(prompt, student_id).student_id
    budget = data.weekly_token_budget if "weekly_token_budget" in data.model_fields_set else allowances.KEEP
    allowances.change_student_budget(prompt, student, reset=data.reset, weekly_token_budget=budget)
    return next(row for row in roster.roster(prompt) if row.id == student_id)


@router.post("/prompts/{int:prompt_id}/budget/exempt", response=PromptUsageOut)
def exempt_myself(request, prompt_id: int, data: ExemptIn):
    """Teachers of the prompt (owner, co-teachers) switch its budgets off or on for themselves."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    allowances.set_exempt(request.user.pk, prompt, data.exempt)
    return allowances.usage_for(request.user, [prompt])["prompts"][0]
