from django import forms

from accounts.permissions import Forbidden
from chat.models import Prompt
from chat.writes import attachable_collections, check_prompt
from collections_app.models import Collection
from currechat.errors import InvalidInput
from currechat.health import get_health


class PromptForm(forms.ModelForm):
    """The prompt form of the pages. Its rules are `chat.writes`' (as in the API and the admin)."""

    collections = forms.ModelMultipleChoiceField(
        queryset=Collection.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The assistant searches these collections when it needs the course material.",
    )

    class Meta:
        model = Prompt
        fields = ["name", "description", "system_prompt", "chat_model", "collections", "curation_enabled", "active"]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "system_prompt": forms.Textarea(attrs={"rows": 8}),
            # Suggests the models the server has (templates/model_options.html) while allowing any name.
            "chat_model": forms.TextInput(attrs={"list": "model-options", "autocomplete": "off"}),
        }
        labels = {"chat_model": "Chat model"}
        help_texts = {"system_prompt": "How the assistant should behave, e.g. its role, tone and what to focus on."}

    def __init__(self, *args, actor, **kwargs):
        super().__init__(*args, **kwargs)
        self.actor = actor
        self.fields["collections"].queryset = attachable_collections(actor, self.instance)
        health = get_health()
        if health.model_server.ok:
            names = ", ".join(health.available_models) or "none"
            self.fields["chat_model"].help_text = f"Models on the server: {names}."
        else:
            self.fields[
                "chat_model"
            ].help_text = "No model server is connected; until one is, students get answers quoted from the material."

    def changes(self) -> dict:
        """The submitted settings, in the shape the write functions take."""
        return {name: self.cleaned_data[name] for name in self.fields if name in self.cleaned_data}

    def clean(self):
        cleaned = super().clean()
        if not self.errors:
            try:
                check_prompt(self.actor, self.instance if self.instance.pk else None, self.changes())
            except (InvalidInput, Forbidden) as exc:
                self.add_error(getattr(exc, "field", None), str(exc))
        return cleaned
