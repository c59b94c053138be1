from django import forms

from chat.models import Prompt
from collections_app.models import Collection
from currechat.health import get_health


class PromptForm(forms.ModelForm):
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

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collections"].queryset = Collection.objects.editable_by(user)
        health = get_health()
        if health.model_server.ok:
            names = ", ".join(health.available_models) or "none"
            self.fields["chat_model"].help_text = f"Models on the server: {names}."
        else:
            self.fields[
                "chat_model"
            ].help_text = "No model server is connected; until one is, students get answers quoted from the material."

    def clean_chat_model(self):
        name = self.cleaned_data["chat_model"].strip()
        health = get_health()
        if health.model_server.ok and not health.has_model(name):
            raise forms.ValidationError(
                f"The model server has no model “{name}”. Choose one of: {', '.join(health.available_models)}."
            )
        return name
