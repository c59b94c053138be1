"""The one write path of a prompt's settings: create and update with every rule they obey.

The prompt form, the REST API and the Django admin all call `create_prompt` / `update_prompt` (or
`check_prompt` from a form's `clean`), so a change refused in one of them is refused in the others
with the same sentence.

Rules:
- a name of 1-200 characters;
- a chat model that a chat provider serves and, while the model server answers, one it has (while it
  is down any name is kept: answers quote the material until the model is there);
- collections the acting teacher may use themselves; collections already attached stay attachable
  (another teacher of the prompt may have attached them);
- co-teachers are active teachers other than the owner; only the owner (or an administrator)
  changes them or invites someone without an account (`PROMPT_INVITATIONS`);
- models students may choose between (`student_models`): each passes the chat model's check (models
  already listed stay listed while the server is away), none twice, and the prompt's own model is
  always one of them (put first when the list leaves it out, also when the chat model changes);
- tutor mode is "off" or "guide"; protected material (typed, or the text of .txt/.md/.pdf files
  appended to it) fits TUTOR_PROTECTED_MAX_TOKENS and is never indexed (chat/course/protected.py);
- a privacy level (`chat_visibility`) raised is acknowledged by each student before their next chat;
  one lowered lowers what every student has accepted (chat.privacy.levels.follow_lowered_level).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts import invitations
from accounts.models import User, teachers_named
from chat.course import answer_changes as answer_checks
from chat.course import privacy_levels as levels
from chat.course import protected
from chat.models import ChatVisibility, Prompt, PromptInvitation, SourcePolicy
from collections_app.models import Collection
from kernel.errors import Forbidden, InvalidInput
from kernel.formats import number
from kernel.records import check_fits, save_values
from rag.providers.registry import UnknownModel, available_models, get_chat_model, is_available

FIELDS = (
    "name", "description", "system_prompt", "chat_model", "collections", "curation_enabled", "active", "owner",
    "co_teachers", "opens_at", "closes_at", "source_policy", "student_instructions", "example_questions",
    "chat_visibility", "retention_days", "weekly_token_budget", "temperature", "student_models", "tutor_mode",
    "protected_material",
)  # fmt: skip
# Not a field: files whose text is appended to `protected_material` ([(name, bytes)], chat/course/protected.py).
FILES = "protected_files"
_PLAIN = ("description", "system_prompt", "student_instructions")
_FLAGS = ("curation_enabled", "active")
_CHOICES = {"source_policy": SourcePolicy, "chat_visibility": ChatVisibility}
# Optional whole numbers: (smallest, sentence naming the field)
_COUNTS = {
    "retention_days": (1, gettext_lazy("Keep chats for at least 1 day, or leave it empty.")),
    "weekly_token_budget": (0, gettext_lazy("A weekly token budget is 0 or more tokens, or empty for no limit.")),
}
MAX_EXAMPLE_QUESTIONS = 6
NOT_OWNER = gettext_lazy("Only the prompt's owner can change its co-teachers.")


def check_prompt(actor: User, prompt: Prompt | None, changes: dict[str, Any]) -> dict[str, Any]:
    """Validate `changes` (field -> new value) made by `actor`; the cleaned values.

    `collections` is a list of Collection objects or ids. Raises InvalidInput (naming the field) or
    Forbidden with a sentence the user can act on.
    """
    unknown = set(changes) - {*FIELDS, FILES}
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
    if "student_models" in changes or "chat_model" in cleaned:
        cleaned["student_models"] = _clean_student_models(changes, cleaned, prompt)
    if changes.get("owner") is not None and (prompt is None or changes["owner"] != prompt.owner):
        if not actor.is_superuser:
            raise Forbidden(_("Only an administrator can give a prompt to another teacher."))
        owner = changes["owner"]
        if not (owner.is_teacher and owner.is_active):
            raise InvalidInput(_("%(name)s is not an active teacher.") % {"name": owner.username}, field="owner")
        cleaned["owner"] = owner
    if changes.get("collections") is not None:
        cleaned["collections"] = _clean_collections(actor, prompt, changes["collections"])
    cleaned.update(_clean_course_settings(prompt, changes))
    cleaned.update(_clean_tutor(prompt, changes))
    if changes.get("co_teachers") is not None:
        cleaned["co_teachers"] = _clean_co_teachers(actor, prompt, changes["co_teachers"], cleaned.get("owner"))
    check_fits(Prompt, cleaned)
    return cleaned


def _clean_course_settings(prompt: Prompt | None, changes: dict[str, Any]) -> dict[str, Any]:
    """Schedule, policy, guidance, privacy and limits."""
    cleaned: dict[str, Any] = {}
    for name, choices in _CHOICES.items():
        if changes.get(name) not in (None, ""):  # left out: the model's default
            if changes[name] not in choices.values:
                allowed = ", ".join(choices.values)
                refusal = _("'%(value)s' is not a valid %(name)s; choose one of: %(allowed)s.")
                raise InvalidInput(refusal % {"value": changes[name], "name": name, "allowed": allowed}, field=name)
            cleaned[name] = changes[name]
    for name, (smallest, too_small) in _COUNTS.items():
        if name in changes:
            value = changes[name]
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < smallest):
                raise InvalidInput(str(too_small), field=name)
            cleaned[name] = value
    if "temperature" in changes:
        value = changes["temperature"]
        if value is not None and not (isinstance(value, int | float) and 0 <= value <= 2):
            sentence = _("The temperature is a number from 0 to 2, or empty for the model's default.")
            raise InvalidInput(sentence, field="temperature")
        cleaned["temperature"] = None if value is None else float(value)
    if "example_questions" in changes:
        cleaned["example_questions"] = _clean_examples(changes["example_questions"])
    for name in ("opens_at", "closes_at"):
        if name in changes:
            cleaned[name] = changes[name]
    opens = cleaned.get("opens_at", prompt.opens_at if prompt else None)
    closes = cleaned.get("closes_at", prompt.closes_at if prompt else None)
    if opens is not None and closes is not None and closes <= opens:
        raise InvalidInput(_("The closing time must be after the opening time."), field="closes_at")
    return cleaned


def _clean_tutor(prompt: Prompt | None, changes: dict[str, Any]) -> dict[str, Any]:
    """Tutor mode, and the protected material with the text of the files added to it."""
    cleaned: dict[str, Any] = {}
    if changes.get("tutor_mode") not in (None, ""):
        cleaned["tutor_mode"] = protected.clean_tutor_mode(changes["tutor_mode"])
    files = changes.get(FILES) or []
    if "protected_material" in changes or files:
        text = changes.get("protected_material", _stored(prompt, "protected_material"))
        cleaned["protected_material"] = protected.clean_material(text, files)
    return cleaned


def _clean_examples(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # the form's textarea: one question per line
        value = value.splitlines()
    questions = [" ".join(str(q).split()) for q in value]
    questions = [q for q in questions if q]
    if len(questions) > MAX_EXAMPLE_QUESTIONS:
        sentence = _("Give at most %(most)s example questions; there are %(count)s.")
        counts = {"most": MAX_EXAMPLE_QUESTIONS, "count": len(questions)}
        raise InvalidInput(sentence % counts, field="example_questions")
    too_long = [q for q in questions if len(q) > 300]
    if too_long:
        raise InvalidInput(_("Keep each example question under 300 characters."), field="example_questions")
    return questions


def _clean_co_teachers(actor: User, prompt: Prompt | None, values: list, new_owner: User | None) -> list[User]:
    """Active teachers other than the owner; only the owner (or an administrator) changes them."""
    current = set(prompt.co_teachers.values_list("pk", flat=True)) if prompt else set()
    users = teachers_named(values, field="co_teachers", may=_("teach a prompt"), current=frozenset(current))
    owner_id = new_owner.pk if new_owner else (prompt.owner_id if prompt else actor.pk)
    users = [u for u in users if u.pk != owner_id]
    if {u.pk for u in users} != current and prompt is not None and not prompt.is_owned_by(actor):
        raise Forbidden(str(NOT_OWNER))
    return users


PROMPT_INVITATIONS = invitations.CoTeaching(
    model=PromptInvitation,
    field="prompt",
    relation="co_teachers",
    may_change=lambda actor, prompt: prompt.is_owned_by(actor),
    not_allowed=NOT_OWNER,
    already_owner=gettext_lazy("You own this prompt already, so there is nothing to accept."),
)


def create_prompt(actor: User, changes: dict[str, Any]) -> Prompt:
    """A new prompt owned by `actor` (a teacher), after `check_prompt`."""
    cleaned = check_prompt(actor, None, changes)
    collections = cleaned.pop("collections", [])
    co_teachers = cleaned.pop("co_teachers", [])
    cleaned.setdefault("owner", actor)
    with transaction.atomic():
        prompt = Prompt.objects.create(**cleaned)
        prompt.collections.set(collections)
        prompt.co_teachers.set(co_teachers)
    return prompt


def update_prompt(actor: User, prompt: Prompt, changes: dict[str, Any]) -> Prompt:
    """Apply `changes` after `check_prompt`."""
    cleaned = check_prompt(actor, prompt, changes)
    collections = cleaned.pop("collections", None)
    co_teachers = cleaned.pop("co_teachers", None)
    level_before = _stored(prompt, "chat_visibility")
    answers_before = answer_checks.answer_settings(prompt.pk)
    with transaction.atomic():
        save_values(prompt, cleaned)
        # A raise is asked of each student at their next chat (chat.privacy.levels); a lowering is
        # remembered, so that a raise after it is asked again.
        levels.follow_lowered_level(prompt, level_before)
        if collections is not None:
            prompt.collections.set(collections)
        if co_teachers is not None:
            prompt.co_teachers.set(co_teachers)
        # Instructions, model, collections, curation or source policy changed: its answer checks run again.
        answer_checks.after_change(prompt, answers_before, actor)
    return prompt


def duplicate_prompt(actor: User, prompt: Prompt) -> Prompt:
    """A copy with the same settings and collections, a new join code, no students and no chats;
    owned by `actor` (co-teachers are not copied: the copy is the actor's to share)."""
    settings_fields = [f for f in FIELDS if f not in ("owner", "co_teachers", "collections", "name")]
    changes = {name: getattr(prompt, name) for name in settings_fields}
    changes["name"] = (_("%(name)s (copy)") % {"name": prompt.name})[:200]
    changes["collections"] = list(prompt.usable_collections().filter(pk__in=attachable_collections(actor, None)))
    return create_prompt(actor, changes)


def _clean_name(value: str) -> str:
    name = (value or "").strip()
    if not name:
        raise InvalidInput(_("Give the prompt a name."), field="name")
    if len(name) > 200:
        sentence = _("The name is %(length)s characters long; keep it to 200.") % {"length": number(len(name))}
        raise InvalidInput(sentence, field="name")
    return name


def _stored(prompt: Prompt | None, field: str) -> Any:
    """The field as the database has it (a ModelForm may have copied its new value onto `prompt`)."""
    return Prompt.objects.filter(pk=prompt.pk).values_list(field, flat=True).first() if prompt else None


def _clean_chat_model(value: str | None, prompt: Prompt | None) -> str:
    name = (value or "").strip() or settings.CHAT_MODEL
    if name == _stored(prompt, "chat_model"):
        return name  # unchanged: a prompt stays editable while its model is away
    _check_model_exists(name, field="chat_model")
    return name


def _check_model_exists(name: str, *, field: str) -> None:
    """A chat provider serves the name and, while the model server answers, it has the model."""
    try:
        get_chat_model(name)  # a name no chat provider serves; contacts no server
    except UnknownModel as exc:
        raise InvalidInput(str(exc), field=field) from exc
    listing = available_models()
    if listing.reachable("ollama") and not is_available(name):  # "the model server": OLLAMA_HOST
        choices = ", ".join(listing.names()) or _("none")
        sentence = _("The model server has no model “%(name)s”. Choose one of: %(choices)s.")
        raise InvalidInput(sentence % {"name": name, "choices": choices}, field=field)


def _clean_student_models(changes: dict[str, Any], cleaned: dict[str, Any], prompt: Prompt | None) -> list[str]:
    """The models students may choose between; [] when they get the prompt's model only."""
    stored = _stored(prompt, "student_models") or []
    value = changes.get("student_models", stored)
    if value is None:  # the admin's empty JSON field
        value = []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        sentence = _('List the models by name, e.g. ["qwen3:8b", "openai:Qwen/Qwen3-8B"].')
        raise InvalidInput(sentence, field="student_models")
    names = [v.strip() for v in value if v.strip()]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        sentence = _("“%(name)s” is listed twice; list each model once.") % {"name": twice[0]}
        raise InvalidInput(sentence, field="student_models")
    for name in names:
        if name not in stored:  # models already listed stay, like an unchanged chat model
            _check_model_exists(name, field="student_models")
    chat_model = cleaned.get("chat_model") or _stored(prompt, "chat_model") or settings.CHAT_MODEL
    if names and chat_model not in names:
        names.insert(0, chat_model)  # students can always choose the prompt's own model
    return names


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
        sentence = _("You cannot connect collection(s) %(ids)s: they don't exist or aren't yours.")
        raise InvalidInput(sentence % {"ids": missing}, field="collections")
    return found
