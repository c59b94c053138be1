"""The one write path of a prompt's settings: create and update with every rule they obey.

The prompt form, the REST API and the Django admin all call `create_prompt` / `update_prompt` (or
`check_prompt` from a form's `clean`), so a change refused in one of them is refused in the others
with the same sentence.

Rules:
- a name of 1-200 characters;
- a chat model that a chat provider serves and, while the model server answers, one it has (while it
  is down any name is kept: answers quote the material until the model is there);
- collections the acting teacher may use themselves; collections already attached stay attachable
  (another teacher of the prompt may have attached them).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet

from accounts.models import User
from accounts.permissions import Forbidden
from chat.models import Prompt
from collections_app.models import Collection
from currechat.errors import InvalidInput
from currechat.health import get_health
from rag.providers.registry import UnknownModel, get_chat_model

FIELDS = ("name", "description", "system_prompt", "chat_model", "collections", "curation_enabled", "active", "owner")
_PLAIN = ("description", "system_prompt")
_FLAGS = ("curation_enabled", "active")


def check_prompt(actor: User, prompt: Prompt | None, changes: dict[str, Any]) -> dict[str, Any]:
    """Validate `changes` (field -> new value) made by `actor`; the cleaned values.

    `collections` is a list of Collection objects or ids. Raises InvalidInput (naming the field) or
    Forbidden with a sentence the user can act on.
    """
    unknown = set(changes) - set(FIELDS)
    if unknown:
        raise ValueError(f"Not a prompt setting: {sorted(unknown)}")
    cleaned: dict[str, Any] = {}
    if "name" in changes or prompt is None:
        cleaned["name"] = _clean_name(changes.get("name", ""))
    for name in _PLAIN:
        if name in changes:
            cleaned[name] = (changes[name] or "").strip()
    for name in _FLAGS:
        if name in changes and changes[name] is not None:
            cleaned[name] = bool(changes[name])
    if "chat_model" in changes or prompt is None:
        cleaned["chat_model"] = _clean_chat_model(changes.get("chat_model"), prompt)
    if changes.get("owner") is not None and (prompt is None or changes["owner"] != prompt.owner):
        if not actor.is_superuser:
            raise Forbidden("Only an administrator can give a prompt to another teacher.")
        owner = changes["owner"]
        if not (owner.is_teacher and owner.is_active):
            raise InvalidInput(f"{owner.username} is not an active teacher.", field="owner")
        cleaned["owner"] = owner
    if changes.get("collections") is not None:
        cleaned["collections"] = _clean_collections(actor, prompt, changes["collections"])
    return cleaned


def create_prompt(actor: User, changes: dict[str, Any]) -> Prompt:
    """A new prompt owned by `actor` (a teacher), after `check_prompt`."""
    cleaned = check_prompt(actor, None, changes)
    collections = cleaned.pop("collections", [])
    cleaned.setdefault("owner", actor)
    with transaction.atomic():
        prompt = Prompt.objects.create(**cleaned)
        prompt.collections.set(collections)
    return prompt


def update_prompt(actor: User, prompt: Prompt, changes: dict[str, Any]) -> Prompt:
    """Apply `changes` after `check_prompt`."""
    cleaned = check_prompt(actor, prompt, changes)
    collections = cleaned.pop("collections", None)
    with transaction.atomic():
        for name, value in cleaned.items():
            setattr(prompt, name, value)
        prompt.save()
        if collections is not None:
            prompt.collections.set(collections)
    return prompt


def _clean_name(value: str) -> str:
    name = (value or "").strip()
    if not name:
        raise InvalidInput("Give the prompt a name.", field="name")
    if len(name) > 200:
        raise InvalidInput(f"The name is {len(name)} characters long; keep it to 200.", field="name")
    return name


def _clean_chat_model(value: str | None, prompt: Prompt | None) -> str:
    name = (value or "").strip() or settings.CHAT_MODEL
    # Compared with the stored row (a ModelForm has already copied its value onto `prompt`).
    stored = Prompt.objects.filter(pk=prompt.pk).values_list("chat_model", flat=True).first() if prompt else None
    if name == stored:
        return name  # unchanged: a prompt stays editable while its model is away
    try:
        get_chat_model(name)  # a name no chat provider serves; contacts no server
    except UnknownModel as exc:
        raise InvalidInput(str(exc), field="chat_model") from exc
    health = get_health()
    if health.model_server.ok and not health.has_model(name):
        choices = ", ".join(health.available_models) or "none"
        raise InvalidInput(f"The model server has no model “{name}”. Choose one of: {choices}.", field="chat_model")
    return name


def attachable_collections(actor: User, prompt: Prompt | None) -> QuerySet[Collection]:
    """Collections `actor` may connect to `prompt`: those they may use, and those already connected."""
    usable = Q(pk__in=Collection.objects.editable_by(actor).values("pk"))
    if prompt is not None and prompt.pk:
        usable |= Q(pk__in=prompt.collections.values("pk"))
    return Collection.objects.filter(usable)


def _clean_collections(actor: User, prompt: Prompt | None, values: list) -> list[Collection]:
    ids = sorted({v.pk if isinstance(v, Collection) else int(v) for v in values})
    found = list(attachable_collections(actor, prompt).filter(pk__in=ids))
    missing = sorted(set(ids) - {c.pk for c in found})
    if missing:
        raise InvalidInput(
            f"You cannot connect collection(s) {missing}: they don't exist or aren't yours.", field="collections"
        )
    return found
