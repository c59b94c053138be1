from django import forms

from accounts.models import User
from collections_app.models import Collection
from rag.providers.registry import UnknownModel, get_embedding_model


class CollectionForm(forms.ModelForm):
    co_owners = forms.ModelMultipleChoiceField(
        queryset=User.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Other teachers who may change this collection and its files.",
    )

    class Meta:
        model = Collection
        fields = ["name", "description", "language", "embedding_model", "co_owners"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}
        help_texts = {"language": "The language of the documents; used for stemming and stop words."}

    def __init__(self, *args, owner, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["co_owners"].queryset = User.objects.filter(role="teacher", is_active=True).exclude(pk=owner.pk)
        if self.instance.pk and self.instance.files.exists():
            self.fields[
                "embedding_model"
            ].help_text = (
                "Changing it (or the language) re-indexes every file; search is incomplete until that finishes."
            )

    def clean_embedding_model(self):
        name = self.cleaned_data["embedding_model"].strip()
        try:
            get_embedding_model(name)
        except UnknownModel as exc:
            raise forms.ValidationError(str(exc)) from exc
        return name
