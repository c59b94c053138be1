"""The safety check of a chat turn (seed 000): the student's message is checked before any model
reads it, and, with MODERATION_OUTPUT, the finished answer after it.

A flagged message gets a caring answer the deployment configures (MODERATION_MESSAGE), with the
university's help contacts (MODERATION_HELP_CONTACTS) when it touches on self-harm, instead of a
model turn. Every call is metered to the student's budget, as the model's own. When the check
cannot be reached, MODERATION_WHEN_DOWN decides: "allow" (the message goes on to the model, and the
teachers' statistics count it) or "refuse" (the student is told to try again later). Teachers see
counts (chat/insight/safety.py); the flagged message stays in the chat, which they read only at the
level the student was told.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils.translation import gettext as _

from chat.insight import safety
from chat.metering.tokens import estimate_tokens
from chat.models import AnswerMode, Guarded
from chat.turn import streamsave
from chat.turn.answering import Progress, TurnFailed, as_model_reads, emit_text
from chat.turn.events import EventSink
from kernel.errors import ProviderError
from rag.providers.moderation import Verdict, get_moderation_model

if TYPE_CHECKING:
    from chat.turn.state import Turn

log = logging.getLogger(__name__)


def caring_answer(verdict: Verdict) -> str:
    """What the student reads instead of an answer to a flagged message."""
    message = settings.MODERATION_MESSAGE or _(
        "I can't help with this message here. If something is weighing on you, you don't have to deal with "
        "it alone: please reach out to someone you trust or to the university's support services."
    )
    if verdict.self_harm and settings.MODERATION_HELP_CONTACTS:
        message += "\n\n" + _("You can get help now: %(contacts)s") % {"contacts": settings.MODERATION_HELP_CONTACTS}
    return message


def _check(turn: Turn, text: str) -> Verdict | None:
    """The verdict on `text`, metered; None when the check is off, or down and the policy allows."""
    checker = get_moderation_model()
    if checker is None:
        return None
    try:
        verdict = checker.moderate(text)
    except ProviderError as exc:
        log.warning("The safety check could not judge chat turn %s: %s", turn.reply.id, exc)
        safety.count(turn.reply, "moderation_down")
        if settings.MODERATION_WHEN_DOWN == "refuse":
            sentence = _(
                "The assistant cannot check messages right now, so it cannot answer. Try again in a few minutes."
            )
            raise TurnFailed(sentence, code="moderation_unavailable") from exc
        return None
    # An endpoint that does not count tokens is charged what the text would cost a model to read.
    turn.meter(verdict.prompt_tokens or estimate_tokens(text), verdict.completion_tokens, f"moderation:{checker.name}")
    return verdict


def screen_question(turn: Turn, progress: Progress, sink: EventSink) -> bool:
    """Check the student's message; True when it was flagged and answered here."""
    verdict = _check(turn, as_model_reads(turn.question))
    if verdict is None or not verdict.flagged:
        return False
    log.info("Chat turn %s: the message was flagged (%s)", turn.reply.id, ", ".join(verdict.categories))
    reply = turn.reply
    reply.mode, reply.model, reply.guard = AnswerMode.MODEL, "", Guarded.FLAGGED
    safety.count(reply, "flagged_input")
    emit_text(reply, progress, caring_answer(verdict), sink)
    return True


def screen_answer(turn: Turn, progress: Progress, sink: EventSink) -> None:
    """With MODERATION_OUTPUT, check the finished answer; a flagged one is taken back and replaced."""
    if not settings.MODERATION_OUTPUT or not progress.text.strip():
        return
    verdict = _check(turn, progress.text)
    if verdict is None or not verdict.flagged:
        return
    reply = turn.reply
    log.info("Chat turn %s: the answer was flagged (%s)", reply.id, ", ".join(verdict.categories))
    progress.text = ""
    sink.emit({"type": "retract", "message_id": reply.id, "text": ""})
    if reply.pk is not None:
        streamsave.note(reply, "")
    reply.guard = Guarded.FLAGGED_OUTPUT
    safety.count(reply, "flagged_output")
    emit_text(reply, progress, caring_answer(verdict), sink)
