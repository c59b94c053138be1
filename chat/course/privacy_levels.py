"""What a student has agreed to about who reads their chats, and when they must be asked again.

A prompt's privacy level (`chat_visibility`: none < pseudonymous < named) says what its teachers
read of the chats started under it. A student confirms the level on joining: the join page refuses
without it, and so does `POST /prompts/join` when told `privacy_confirmed: false`; a program that
sends the code alone joins told the level now, as through a learning platform
(`chat.course.enrollment.join_prompt`). When a teacher raises the level, each enrolled student must
acknowledge the change before their next chat starts under it: until then a new chat (on the page,
over the API) is refused with `PrivacyUnconfirmed` (`access.rules.check_may_start_chat`), and every
chat page shows what changed. An older chat goes on: it keeps the level it started under, the one
the student was told. Lowering asks nobody: less is read than the student agreed to.

Each enrollment keeps two things (chat/models/prompts.py):
- `privacy_confirmed_level` / `privacy_confirmed_at`: the record of the student's last confirmation;
- `privacy_accepted_level`: the highest level their next chat may start under without asking. It is
  the confirmed level, lowered whenever the prompt's level is lowered (`follow_lowered_level`, from
  the prompt's one write path): a student who confirmed "named", then saw the level drop to "none"
  on every chat page, is asked again when it rises, even back to "named".
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import STUDENT_SENTENCES, ChatVisibility, Enrollment, Prompt
from kernel.errors import Conflict, Forbidden

# From least to most read by teachers.
LEVELS = (ChatVisibility.NONE, ChatVisibility.PSEUDONYMOUS, ChatVisibility.NAMED)


def rank(level: str) -> int:
    """How much teachers read at `level` (an unknown or empty level: less than any)."""
    return LEVELS.index(level) if level in LEVELS else -1


class PrivacyUnconfirmed(Forbidden):
    """The prompt's level was raised after the student last agreed to one: they must read and
    acknowledge the change before they write to the prompt again."""

    code = "privacy_unconfirmed"


@dataclass(frozen=True)
class LevelChange:
    """A raise the student has not acknowledged yet: from the level they accepted to the prompt's."""

    before: str
    now: str

    @property
    def before_sentence(self) -> str:
        return str(STUDENT_SENTENCES[self.before]) if self.before in STUDENT_SENTENCES else ""

    @property
    def now_sentence(self) -> str:
        return str(STUDENT_SENTENCES[self.now])


def pending_change(enrollment: Enrollment | None, prompt: Prompt) -> LevelChange | None:
    """The raise `enrollment`'s student must acknowledge before writing to `prompt`, if any."""
    if enrollment is None or rank(prompt.chat_visibility) <= rank(enrollment.privacy_accepted_level):
        return None
    return LevelChange(before=enrollment.privacy_accepted_level, now=prompt.chat_visibility)


def check_confirmed(enrollment: Enrollment | None, prompt: Prompt) -> None:
    """Refuse the student's next chat while a raise of the level is unacknowledged."""
    change = pending_change(enrollment, prompt)
    if change is not None:
        raise PrivacyUnconfirmed(
            _(
                "Your teacher has changed what they can see of your chats: %(now)s Confirm that you have "
                "read this before you chat on; the chat page asks you when you open it again."
            )
            % {"now": change.now_sentence}
        )


def level_to_confirm(prompt: Prompt, seen: str | None) -> str:
    """The level a student confirms who read the notice at level `seen` (None: the prompt's level
    now). Refused when the prompt's level has risen above what they read since (a teacher saved
    while the student was reading): they read it again."""
    current = prompt.chat_visibility
    if seen is not None and rank(current) > rank(seen):
        raise Conflict(
            _("What teachers can see changed while you were reading: %(now)s Read the notice again and confirm it.")
            % {"now": STUDENT_SENTENCES[current]}
        )
    return current


def record_confirmation(enrollment: Enrollment, level: str) -> Enrollment:
    """The student confirmed the notice at `level` (the prompt's level now, `level_to_confirm`)."""
    enrollment.privacy_confirmed_level = level
    enrollment.privacy_confirmed_at = timezone.now()
    enrollment.privacy_accepted_level = level
    enrollment.save(update_fields=["privacy_confirmed_level", "privacy_confirmed_at", "privacy_accepted_level"])
    return enrollment


def acknowledge(enrollment: Enrollment, seen: str | None) -> Enrollment:
    """The student acknowledges the prompt's current level (after a raise, or again at any time)."""
    return record_confirmation(enrollment, level_to_confirm(enrollment.prompt, seen))


def follow_lowered_level(prompt: Prompt, before: str) -> int:
    """After the prompt's level went down from `before`: no student has accepted more than the new
    level any more (each chat page showed them the lower one), so a later raise asks them again.
    Returns how many enrollments changed."""
    now = prompt.chat_visibility
    if rank(now) >= rank(before):
        return 0
    higher = [level for level in LEVELS if rank(level) > rank(now)]
    return Enrollment.objects.filter(prompt=prompt, privacy_accepted_level__in=higher).update(
        privacy_accepted_level=now
    )
