from typing import cast

from django import forms

from accounts.models import active_teachers
from accounts.permissions import Forbidden
from collections_app.models import Collection
from collections_app.writes import check_collection
from currechat.errors import InvalidInput


class CollectionForm(forms.ModelForm):
    """The settings form of the pages. Its rules are `collections_app.writes`' (as in the API and admin)."""

    co_owners = forms.ModelMultipleChoiceField(
        queryset=active_teachers(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Other teachers who may change this collection and its files.",
    )

    class Meta:
        model = Collection
        fields = ["name", "description", "language", "embedding_model", "co_owners"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}
        help_texts = {"language": "The language of the documents; used for stemming and stop words."}

    def __init__(self, *args, actor, **kwargs):
        super().__init__(*args, **kwargs)
        self.actor = actor
        owner = self.instance.owner if self.instance.pk else actor
        co_owners = cast(forms.ModelMultipleChoiceField, self.fields["co_owners"])
        co_owners.queryset = active_teachers().exclude(pk=owner.pk)
        if self.instance.pk and not (actor.is_superuser or self.instance.owner_id == actor.pk):
            # Shown, so co-owners know who else edits; only the owner changes it (the rule is in writes.py).
            self.fields["co_owners"].disabled = True
            self.fields["co_owners"].help_text = "Only the collection's owner can change its co-owners."
        if not co_owners.queryset.exists():
            del self.fields["co_owners"]  # no other teacher to choose: no empty section
        if self.instance.pk and self.instance.files.exists():
            self.fields[
                "embedding_model"
            ].help_text = (
                "Changing it (or the language) re-indexes every file; search is incomplete until that finishes."
            )

    def changes(self) -> dict:
        """The submitted settings, in the shape the write functions take."""
        return {name: self.cleaned_data[name] for name in self.fields if name in self.cleaned_data}

    def clean(self):
        cleaned = super().clean()
        if not self.errors:
            try:
                check_collection(self.actor, self.instance if self.instance.pk else None, self.changes())
            except (InvalidInput, Forbidden) as exc:
                self.add_error(getattr(exc, "field", None), str(exc))
        return cleaned
