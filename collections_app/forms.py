from django import forms
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.picker import TeacherPickerField
from collections_app.models import Collection
from collections_app.writes import check_form, fitting_model, may_change_co_owners
from kernel.forms import WriteRulesForm
from rag.languages import LANGUAGES
from rag.providers import available_models
from rag.providers.languages import MODEL_LANGUAGES, model_languages


def embedding_choices(current: str) -> list[tuple[str, str]]:
    """The embedding models that exist: the offline one, the model server's embedders, and the
    collection's own; each says whether it knows every language or English only. Their names are
    shown only behind the form's "Details" (form_fields.html, `in_details`)."""
    names = [settings.EMBEDDING_MODEL, "local:all-MiniLM-L6-v2"]
    for model in available_models().of("ollama"):
        base = model.lower().split(":", 1)[0]
        if base in MODEL_LANGUAGES or model.lower() in MODEL_LANGUAGES or "embed" in base:
            names.append(f"ollama:{model.removesuffix(':latest')}")
    if current:
        names.append(current)
    unique = list(dict.fromkeys(names))
    english_only, multilingual = _("knows English only"), _("knows every language")
    return [(name, f"{name} — {english_only if model_languages(name) else multilingual}") for name in unique]


def language_offers(choices: list[tuple[str, str]]) -> dict:
    """What the form's script needs to offer the right model as the language changes: the
    languages each offered model knows (None: every one), and for each language the model to
    offer when the chosen one does not know it (`writes.model_for_language`, the rule the server
    holds the form to)."""
    knows = {}
    for name, _label in choices:
        languages = model_languages(name)
        knows[name] = None if languages is None else sorted(languages)
    return {"knows": knows, "suggest": {language: fitting_model(language) for language in LANGUAGES}}


class CollectionForm(WriteRulesForm):
    """The settings form of the pages. Its rules are `collections_app.writes`' (as in the API and admin)."""

    check = staticmethod(check_form)

    co_owners = TeacherPickerField(
        required=False,
        label=gettext_lazy("Co-owners"),
        help_text=gettext_lazy("Other teachers who may change this collection and its files."),
    )

    class Meta:
        model = Collection
        fields = ["name", "description", "language", "embedding_model", "co_owners"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}
        labels = {
            "name": gettext_lazy("Name"),
            "description": gettext_lazy("Description"),
            "language": gettext_lazy("Language"),
            "embedding_model": gettext_lazy("Model for search by meaning"),
        }
        help_texts = {
            "language": gettext_lazy(
                "The language of your files: search also finds the other forms of a word (house, houses) as "
                "this language makes them."
            )
        }

    def __init__(self, *args, actor, **kwargs):
        super().__init__(*args, **kwargs)
        self._actor = actor
        if self.instance.pk and not may_change_co_owners(actor, self.instance):
            # Shown, so co-owners know who else edits; only the owner changes it (the rule is in writes.py).
            self.fields["co_owners"].disabled = True
            self.fields["co_owners"].help_text = _("Only the collection's owner can change its co-owners.")
        current = self.instance.embedding_model if self.instance.pk else settings.EMBEDDING_MODEL
        choices = embedding_choices(current)
        self.fields["embedding_model"].widget = forms.Select(choices=choices)
        # Which model exactly is for the curious: the language decides, and the page's script
        # changes the model when the language needs another (static/js/language-offer.js).
        self.fields["embedding_model"].in_details = True  # type: ignore[attr-defined]
        self.language_offers = language_offers(choices)
        help_text = _(
            "It finds passages by what they mean, not only by their words. One that knows every language suits "
            "any collection; one that knows English only suits English collections only."
        )
        if self.instance.pk and self.instance.files.exists():
            reindexing = _(
                "Changing it (or the language) re-indexes every file; search is incomplete until that finishes."
            )
            help_text = f"{help_text} {reindexing}"
        self.fields["embedding_model"].help_text = help_text

    def actor(self):
        return self._actor
