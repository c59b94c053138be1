"""A turn under way, as every part of the answering loop reads it: its chat, question and reply,
its lock and Stop, its meter; and the two ways a turn is stopped from outside. Its own module, below
the loop's parts (agent, answering, moderation), so that each of them can name it."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.utils import translation

from chat.metering.usage import UsageMeter
from chat.models import ChatSession, Message, TeacherAnswer
from chat.turn.limits import StopSignal, TurnLock
from kernel import draining


class TurnStopped(Exception):  # noqa: N818 — a control-flow signal, not an error
    """The student pressed Stop: the turn ends here, keeping what it has written."""


class TurnAbandoned(Exception):  # noqa: N818 — a control-flow signal, not an error
    """The web process is shutting down and waited long enough (kernel/draining.py): the turn
    ends here as a crash would have ended it, keeping what it has written."""


@dataclass
class Turn:
    session: ChatSession
    question: Message
    reply: Message
    lock: TurnLock
    model: str  # the chat model that answers: the student's choice (chat/course/model_choice.py)
    # Every model call made for the student, curation too, against the estimate set aside at the start.
    meter: UsageMeter
    stop: StopSignal = field(init=False)
    # The student's language when they asked: the turn runs in a pool thread, which has none of
    # its own, and what it stores and sends (errors, an answer without a model) is read in it.
    language: str = field(default_factory=lambda: translation.get_language() or settings.LANGUAGE_CODE)
    # The teacher's own answer to this question, served instead of any model (chat/insight/answers.py).
    teacher_answer: TeacherAnswer | None = None

    def __post_init__(self) -> None:
        self.stop = StopSignal(self.session.id)
        self.stop.watch_here()

    def check_stop(self) -> None:
        if draining.abandoned():
            raise TurnAbandoned
        if self.stop.requested():
            raise TurnStopped
