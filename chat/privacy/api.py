"""The privacy notice over the REST API: read it (`GET /prompts/{id}/privacy`) and confirm a raised
level (`POST /prompts/{id}/privacy/confirm`). Joining with the confirmation is `POST /prompts/join`
(chat/course/api.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Router, Schema

from access.rules import enrollment_of, get_enrollment_for_acknowledge, get_prompt_for_privacy
from chat.course import privacy_levels as levels
from chat.models import Prompt
from chat.privacy.notice import notice

router = Router(tags=["privacy"])

_LEVEL = Literal["none", "pseudonymous", "named"]


class NoticeSectionOut(Schema):
    key: Literal["operator", "stored", "readers", "retention", "attachments", "models"]
    heading: str
    paragraphs: list[str]


class NoticeLevelOut(Schema):
    level: _LEVEL
    title: str
    detail: str
    current: bool


class LevelChangeOut(Schema):
    before: str = Field(description="The level the student accepted until now.")
    now: _LEVEL


class PrivacyOut(Schema):
    prompt_id: int
    level: _LEVEL
    level_sentence: str
    levels: list[NoticeLevelOut]
    sections: list[NoticeSectionOut]
    confirmed_level: str | None = Field(description="The level you last confirmed (students only).")
    confirmed_at: datetime | None
    change: LevelChangeOut | None = Field(
        description="A raise you have not acknowledged: until you do (`POST …/privacy/confirm`), new chats and "
        "messages in this prompt are refused (403, `code`: `privacy_unconfirmed`)."
    )


class PrivacyConfirmIn(Schema):
    level: _LEVEL = Field(description="The level of the notice you read (the prompt's `level`).")


def _privacy(prompt: Prompt, own) -> dict:
    shown = notice(prompt)
    change = levels.pending_change(own, prompt)
    return {
        "prompt_id": prompt.pk,
        "level": shown.level,
        "level_sentence": shown.level_sentence,
        "levels": [vars(level) for level in shown.levels],
        "sections": [vars(section) | {"paragraphs": list(section.paragraphs)} for section in shown.sections],
        "confirmed_level": (own.privacy_confirmed_level or None) if own else None,
        "confirmed_at": own.privacy_confirmed_at if own else None,
        "change": vars(change) if change else None,
    }


@router.get("/prompts/{int:prompt_id}/privacy", response=PrivacyOut)
def get_privacy(request, prompt_id: int):
    """The prompt's privacy notice as its page shows it, for its teachers and enrolled students."""
    prompt = get_prompt_for_privacy(request.user, prompt_id)
    return _privacy(prompt, enrollment_of(request.user, prompt))


@router.post("/prompts/{int:prompt_id}/privacy/confirm", response=PrivacyOut)
def confirm_privacy(request, prompt_id: int, data: PrivacyConfirmIn):
    """A student confirms the notice at the prompt's current level (after a raise, before their next
    chat); a level lower than the prompt's now is refused (409): read the notice again."""
    own = get_enrollment_for_acknowledge(request.user, prompt_id)
    levels.acknowledge(own, data.level)
    return _privacy(own.prompt, own)
