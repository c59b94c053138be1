from django import forms

from chat.models import Prompt
from collections_app.models import Collection


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
        }
        labels = {"chat_model": "Chat model"}
        help_texts = {"system_prompt": "How the assistant should behave, e.g. its role, tone and what to focus on."}

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["collections"].queryset = Collection.objects.editable_by(user)
