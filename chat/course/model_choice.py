"""Which model answers a chat: the student's choice among the prompt's models.

A prompt offers its own `chat_model`, or a list of models (`Prompt.student_models`, kept by
chat/course/writes.py: each on a configured server, no duplicates, the prompt's own model among them).
A chat keeps the model its student chose (`ChatSession.model`); a message may name another, which
then becomes the chat's model from that message on.

The one check, for the websocket and the REST API alike (both start turns through
`chat.turn.agent.start_turn`), against the prompt as it is when the message arrives:
- a message naming a model the prompt does not offer (or no longer offers) is refused, and nothing
  is stored: an explicit choice is never silently swapped for another model;
- a message naming none goes to the chat's model; when the teacher has taken that model off the
  list since, the chat falls back to the prompt's own model (the student did not ask for anything
  this time, and every answer shows which model wrote it).
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from chat.models import ChatSession, Prompt
from kernel.errors import InvalidInput


class ModelNotOffered(InvalidInput):
    code = "model_not_offered"

    def __init__(self, message: str):
        super().__init__(message, field="model")


def model_choices(prompt: Prompt) -> list[str]:
    """The models students of `prompt` may choose between, the prompt's own model always among them."""
    listed = [name for name in prompt.student_models if isinstance(name, str)]
    return listed if prompt.chat_model in listed else [prompt.chat_model, *listed]


def offers_choice(prompt: Prompt) -> bool:
    return len(model_choices(prompt)) > 1


def current_model(session: ChatSession) -> str:
    """The model the chat's next message goes to when it names none (for the page's select)."""
    choices = model_choices(session.prompt)
    return session.model if session.model in choices else session.prompt.chat_model


def choose_model(session: ChatSession, requested: str | None) -> str:
    """The model that answers the chat's next message; raises ModelNotOffered (naming the choices)
    when `requested` is not one of the prompt's models now. The caller keeps the answer as the
    chat's model (`stored_choice`) once the message is accepted."""
    choices = model_choices(session.prompt)
    name = (requested or "").strip()
    if not name:
        return current_model(session)
    if name in choices:
        return name
    offered = ", ".join(choices)
    if name == session.model:  # the page still showed it: the teacher took it off the list meanwhile
        raise ModelNotOffered(
            _("The model “%(name)s” is no longer offered here. Choose one of: %(choices)s, and send again.")
            % {"name": name, "choices": offered}
        )
    raise ModelNotOffered(
        _("“%(name)s” is not one of this assistant's models. Choose one of: %(choices)s.")
        % {"name": name, "choices": offered}
    )


def stored_choice(session: ChatSession, name: str) -> str:
    """What the chat keeps as its model once a message to `name` is accepted: `name`, or empty while
    the chat never chose and `name` is the prompt's own (it then follows the prompt's model when the
    teacher changes it)."""
    return name if (session.model or name != session.prompt.chat_model) else ""
