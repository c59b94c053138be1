"""Whether a change of a prompt changed what its answers depend on: its instructions, model,
curation, source policy or collections. The prompt's one writer (chat/course/writes.update_prompt)
takes `answer_settings` before a change and calls `after_change` after it; when they differ, it
sends `answers_changed`, to which the answer checks listen (chat/checks/auto.py, connected in
ChatConfig.ready) to run again. A signal, because the checks play prompts through the chat turn and
sit above the course room, which must not import them.
"""

from __future__ import annotations

from django.dispatch import Signal

from chat.models import Prompt

# The source policy too: "no search" changes every answer as much as a change of collections does.
WATCHED = ("system_prompt", "chat_model", "curation_enabled", "source_policy")

# Sent with `prompt` and `actor` (who changed it), inside the writer's transaction.
answers_changed = Signal()


def answer_settings(prompt_id: int | None) -> tuple:
    """What the answers depend on, as the database has it now."""
    if prompt_id is None:
        return ()
    values = Prompt.objects.filter(pk=prompt_id).values_list(*WATCHED).first()
    collections = sorted(
        Prompt.collections.through.objects.filter(prompt_id=prompt_id).values_list("collection_id", flat=True)
    )
    return (values, tuple(collections))


def after_change(prompt: Prompt, before: tuple, actor) -> None:
    """Tell the listeners when what the prompt's answers depend on changed since `before`."""
    if answer_settings(prompt.pk) != before:
        answers_changed.send(sender=Prompt, prompt=prompt, actor=actor)
