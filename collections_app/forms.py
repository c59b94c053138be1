from django import forms
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.picker import TeacherPickerField
from collections_app.models import Collection
from collections_app.writes import check_collection, may_change_co_owners
from kernel.forms import WriteRulesForm
from rag.providers import available_models
from rag.providers.languages import MODEL_LANGUAGES, model_languages


def embedding_choices(current: str) -> list[tuple[str, str]]:
    """The embedding models that exist: the offline one, the model server's embedders, and the
    collection's own; each says whether it knows every language or English only."""
    names = [settings.EMBEDDING_MODEL, "local:all-MiniLM-L6-v2"]
    for model in available_models().of("ollama"):
        base = model.lower().split(":", 1)[0]
        if base in MODEL_LANGUAGES or model.lower() in MODEL_LANGUAGES or "embed" in base:
            names.append(f"ollama:{model.removesuffix(':latest')}")
    if current:
        names.append(current)
    unique = list(dict.fromkeys(names))
    english_only, multilingual = _("English only"), _("multilingual")
    return [(name, f"{name} — {english_only if model_languages(name) else multilingual}") for name in unique]


class CollectionForm(WriteRulesForm):
    """The settings form of the pages. Its rules are `collections_app.writes`' (as in the API and admin)."""

    check = staticmethod(check_collection)

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
            "embedding_model": gettext_lazy("Embedding model"),
        }
        help_texts = {"language": gettext_lazy("The language of the documents; used for stemming and stop words.")}

    def __init__(self, *args, actor, **kwargs):
        super().__init__(*args, **kwargs)
        self._actor = actor
        if self.instance.pk and not may_change_co_owners(actor, self.instance):
            # Shown, so co-owners know who else edits; only the owner changes it (the rule is in writes.py).
            self.fields["co_owners"].disabled = True
            self.fields["co_owners"].help_text = _("Only the collection's owner can change its co-owners.")
        current = self.instance.embedding_model if self.instance.pk else settings.EMBEDDING_MODEL
        self.fields["embedding_model"].widget = forms.Select(choices=embedding_choices(current))
        help_text = _("A multilingual model suits every language; an English-only one suits English collections only.")
        if self.instance.pk and self.instance.files.exists():
            reindexing = _(
                "Changing it (or the language) re-indexes every file; search is incomplete until that finishes."
            )
            help_text = f"{help_text} {reindexing}"
        self.fields["embedding_model"].help_text = help_text

    def actor(self):
        return self._actor
