"""The one write path of a collection's settings: create and update with every rule they obey.

The collection form, the REST API and the Django admin all call `create_collection` /
`update_collection` (or `check_collection` from a form's `clean`), so a change refused in one of
them is refused in the others with the same sentence.

Rules:
- a name of 1-200 characters; a supported language; an embedding model some provider knows;
- in the forms (the pages and the admin: `check_form`), an embedding model that knows the
  collection's language whenever the model server has one that does (`model_for_language`): a pair
  chosen so that they do not fit is refused with a sentence naming the model to choose, and the
  page's script offers that model as the language changes (static/js/language-offer.js). The API
  takes the pair a program sends, as it always has (the collection's pages then say the model does
  not know the language: `search.language_warning`);
- co-owners are active teachers (named by username or address), and only the owner (or a
  superuser) changes who they are, or invites someone without an account (`COLLECTION_INVITATIONS`);
- a new language or embedding model re-indexes the collection's files (`files.reindex_for_changes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts import invitations
from accounts.models import User, teachers_named
from collections_app import files
from collections_app.models import LANGUAGE_CHOICES_SHOWN, Collection, CollectionInvitation
from kernel.errors import Forbidden, InvalidInput
from kernel.formats import number
from kernel.records import check_fits, save_values
from rag.languages import LANGUAGES
from rag.providers.languages import knows_language, suggest_model
from rag.providers.registry import UnknownModel, get_embedding_model, is_available

CO_OWN = gettext_lazy("own or co-own a collection")
# The fields a write may set; anything else in a change set is a programming error.
FIELDS = ("name", "description", "language", "embedding_model", "co_owners", "owner")


@dataclass
class CollectionWrite:
    """What a write did: the collection, and the files queued again for a new language or model."""

    collection: Collection
    changed: set[str] = field(default_factory=set)
    requeued: list = field(default_factory=list)


def check_collection(
    actor: User, collection: Collection | None, changes: dict[str, Any], *, fit_language: bool = False
) -> dict[str, Any]:
    """Validate `changes` (field -> new value) made by `actor`; the cleaned values.

    Raises InvalidInput (naming the field) or Forbidden with a sentence the user can act on.
    `co_owners` is a list of User objects or usernames; `owner` may only be set by a superuser.
    `fit_language`: also refuse a language and embedding model that do not fit (the forms' rule).
    """
    unknown = set(changes) - set(FIELDS)
    if unknown:
        raise ValueError(f"Not a collection setting: {sorted(unknown)}")
    if collection is None:  # a new collection: the defaults for what was left out
        defaults = {"language": "english", "embedding_model": settings.EMBEDDING_MODEL}
        changes = {**defaults, **{k: v for k, v in changes.items() if v not in (None, "") or k not in defaults}}
    cleaned: dict[str, Any] = {}
    if "name" in changes or collection is None:
        cleaned["name"] = _clean_name(changes.get("name", ""))
    if "description" in changes:
        cleaned["description"] = (changes["description"] or "").strip()
    if "language" in changes:
        cleaned["language"] = _clean_language(changes["language"])
    if "embedding_model" in changes:
        cleaned["embedding_model"] = _clean_embedding_model(changes["embedding_model"])
    if fit_language:
        _check_language_fit(collection, cleaned)
    owner = collection.owner if collection is not None else actor
    if "owner" in changes and changes["owner"] is not None and changes["owner"] != owner:
        if not actor.is_superuser:
            raise Forbidden(_("Only an administrator can give a collection to another teacher."))
        owner = cleaned["owner"] = teachers_named([changes["owner"]], field="owner", may=str(CO_OWN))[0]
    if "co_owners" in changes and changes["co_owners"] is not None:
        current = set(collection.co_owners.values_list("pk", flat=True)) if collection is not None else set()
        named = teachers_named(changes["co_owners"], field="co_owners", may=str(CO_OWN), current=frozenset(current))
        co_owners = [u for u in named if u.pk != owner.pk]
        if {u.pk for u in co_owners} != current and not may_change_co_owners(actor, collection):
            raise Forbidden(_("Only the collection's owner can change its co-owners."))
        cleaned["co_owners"] = co_owners
    check_fits(Collection, cleaned)
    return cleaned


def create_collection(actor: User, changes: dict[str, Any]) -> Collection:
    """A new collection owned by `actor` (a teacher), after `check_collection`."""
    cleaned = check_collection(actor, None, changes)
    co_owners = cleaned.pop("co_owners", [])
    cleaned.setdefault("owner", actor)
    with transaction.atomic():
        collection = Collection.objects.create(**cleaned)
        collection.co_owners.set(co_owners)
    return collection


def update_collection(actor: User, collection: Collection, changes: dict[str, Any]) -> CollectionWrite:
    """Apply `changes` after `check_collection`; re-index the files when the index settings changed."""
    cleaned = check_collection(actor, collection, changes)
    co_owners = cleaned.pop("co_owners", None)
    # Compared with the stored row: a ModelForm (page, admin) has already copied its values onto
    # `collection` by the time it is valid.
    stored = Collection.objects.filter(pk=collection.pk).values(*cleaned).first() or {}
    changed = {name for name, value in cleaned.items() if stored.get(name) != _pk(value)}
    with transaction.atomic():
        save_values(collection, cleaned)
        if co_owners is not None:
            before = set(collection.co_owners.values_list("pk", flat=True))
            if before != {u.pk for u in co_owners}:
                changed.add("co_owners")
                collection.co_owners.set(co_owners)
    requeued = files.reindex_for_changes(collection, changed)
    return CollectionWrite(collection, changed, requeued)


def _pk(value: Any) -> Any:
    return value.pk if isinstance(value, User) else value


def may_change_co_owners(actor: User, collection: Collection | None) -> bool:
    return collection is None or actor.is_superuser or collection.owner_id == actor.pk


COLLECTION_INVITATIONS = invitations.CoTeaching(
    model=CollectionInvitation,
    field="collection",
    relation="co_owners",
    may_change=may_change_co_owners,
    not_allowed=gettext_lazy("Only the collection's owner can change its co-owners."),
    already_owner=gettext_lazy("You own this collection already, so there is nothing to accept."),
)


def _clean_name(value: str) -> str:
    name = (value or "").strip()
    if not name:
        raise InvalidInput(_("Give the collection a name."), field="name")
    if len(name) > 200:
        sentence = _("The name is %(length)s characters long; keep it to 200.") % {"length": number(len(name))}
        raise InvalidInput(sentence, field="name")
    return name


def _clean_language(value: str) -> str:
    language = (value or "").strip().lower()
    if language not in LANGUAGES:
        sentence = _("'%(value)s' is not a supported language; choose one of: %(languages)s.") % {
            "value": value,
            "languages": ", ".join(LANGUAGES),
        }
        raise InvalidInput(sentence, field="language")
    return language


def model_for_language(language: str, model: str) -> str | None:
    """An embedding model the model server has that knows `language`, when `model` does not; None
    when `model` knows it, or when the server has no model that does (the collection then relies
    mostly on keyword search, and its pages say so: `collections_app.search.language_warning`)."""
    return None if knows_language(model, language) else fitting_model(language)


def fitting_model(language: str) -> str | None:
    """The best embedding model the model server has for `language` among the multilingual ones we
    know (`rag.providers.languages.SUGGESTED`), by the name a collection stores; None when it has none."""
    name = suggest_model(language, is_available)  # a bare name: a model of the Ollama-protocol server
    return f"ollama:{name}" if name else None


def language_name(language: str) -> str:
    """The language as the reader's language writes it ("suomi" → "Finnish" in English)."""
    return str(dict(LANGUAGE_CHOICES_SHOWN).get(language, language))


def check_form(actor: User, collection: Collection | None, changes: dict[str, Any]) -> dict[str, Any]:
    """The rules of the collection forms (the pages and the admin): `check_collection`'s, and a
    language and embedding model that fit."""
    return check_collection(actor, collection, changes, fit_language=True)


def _check_language_fit(collection: Collection | None, cleaned: dict[str, Any]) -> None:
    """A new or changed pair of language and embedding model fits, when the server makes that
    possible: search by meaning in a language its model does not know ranks passages almost at random.
    A pair stored before stays editable (a rename does not ask for a new model)."""
    stored: dict[str, str] = {}
    if collection is not None:  # the stored row: a ModelForm may have copied its values onto `collection`
        row = Collection.objects.filter(pk=collection.pk).values_list("language", "embedding_model").first()
        stored_language, stored_model = row or (collection.language, collection.embedding_model)
        stored = {"language": stored_language, "embedding_model": stored_model}
    language = cleaned.get("language", stored.get("language", "english"))
    model = cleaned.get("embedding_model", stored.get("embedding_model", settings.EMBEDDING_MODEL))
    if stored.get("language") == language and stored.get("embedding_model") == model:
        return
    better = model_for_language(language, model)
    if better is None:
        return
    sentence = _(
        "The model for search by meaning “%(model)s” does not know %(language)s. Choose “%(better)s”, which the "
        "model server has and which knows %(language)s, so that questions find passages by what they mean."
    )
    raise InvalidInput(
        sentence % {"model": model, "language": language_name(language), "better": better}, field="embedding_model"
    )


def _clean_embedding_model(value: str) -> str:
    name = (value or "").strip()
    if not name:
        raise InvalidInput(_("Choose an embedding model."), field="embedding_model")
    try:
        get_embedding_model(name)  # raises for a name no provider knows; contacts no model server
    except UnknownModel as exc:
        raise InvalidInput(str(exc), field="embedding_model") from exc
    return name
