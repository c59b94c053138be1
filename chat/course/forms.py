from typing import cast

from django import forms
from django.conf import settings
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.picker import TeacherPickerField
from chat.course.writes import MAX_EXAMPLE_QUESTIONS, attachable_collections, check_prompt
from chat.models import Prompt
from collections_app.models import Collection
from kernel.formats import schedule_hint
from kernel.forms import WriteRulesForm
from rag.providers import Listing, available_models, is_available
from rag.providers.languages import looks_like_embedder


class ModelsField(forms.MultipleChoiceField):
    """Ticks among the models offered; the names are checked by `chat.course.writes` (exists on a server,
    none twice), so the page refuses a model with the same sentence as the API and the admin."""

    def validate(self, value):
        pass


def _when_field(label, help_text) -> forms.DateTimeField:
    """A schedule's optional moment, typed as the page's language writes a date and time, in the
    reader's time zone (kernel/zones.py): a browser's date-time picker follows the browser's locale
    (mm/dd/yyyy AM/PM on a Finnish page)."""
    widget = forms.DateTimeInput(attrs={"autocomplete": "off", "class": "when"})
    return forms.DateTimeField(required=False, localize=True, widget=widget, label=label, help_text=help_text)


class PromptForm(WriteRulesForm):
    """The prompt form of the pages. Its rules are `chat.course.writes`' (as in the API and the admin)."""

    check = staticmethod(check_prompt)

    collections = forms.ModelMultipleChoiceField(
        queryset=Collection.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Collections"),
        help_text=gettext_lazy("The assistant searches these collections when it needs the course material."),
    )
    co_teachers = TeacherPickerField(
        required=False,
        label=gettext_lazy("Co-teachers"),
        help_text=gettext_lazy("Teachers who edit this prompt and see its students. Only you, its owner, change this."),
    )
    example_questions = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label=gettext_lazy("Example questions"),
        help_text=format_lazy(
            gettext_lazy("One per line, at most {count}: shown as clickable starters in an empty chat."),
            count=MAX_EXAMPLE_QUESTIONS,
        ),
    )
    student_models = ModelsField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Models students may choose between"),
        help_text=gettext_lazy(
            "Students pick one of these for each chat, above the message box; the chat model is always one of "
            "them. None ticked: students get the chat model."
        ),
    )
    opens_at = _when_field(
        gettext_lazy("Opens at"),
        gettext_lazy("Students can chat from then on. Empty: as soon as it is switched on."),
    )
    closes_at = _when_field(
        gettext_lazy("Closes at"),
        gettext_lazy("Students can no longer send messages from then on; their chats stay readable."),
    )

    protected_files = forms.FileField(
        required=False,
        label=gettext_lazy("Add a protected file"),
        help_text=gettext_lazy(
            "A .txt, .md or .pdf file (an answer key, worked solutions): its text is added to the protected "
            "material above. It is never added to a collection, so no search finds it."
        ),
        widget=forms.ClearableFileInput(attrs={"accept": ".txt,.md,.markdown,.pdf"}),
    )

    class Meta:
        model = Prompt
        fields = [
            "name", "description", "system_prompt", "student_instructions", "example_questions", "chat_model",
            "temperature", "student_models", "collections", "source_policy", "curation_enabled", "active", "opens_at",
            "closes_at", "co_teachers", "chat_visibility", "retention_days", "weekly_token_budget", "tutor_mode",
            "protected_material", "protected_files",
        ]  # fmt: skip
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "system_prompt": forms.Textarea(attrs={"rows": 8}),
            "student_instructions": forms.Textarea(attrs={"rows": 2}),
            # A choice among the chat models the servers have (`chat_model_choices`); the name is still
            # checked by chat.course.writes, so a name no server has is refused with its sentence.
            "chat_model": forms.Select,
            "source_policy": forms.RadioSelect,
            "chat_visibility": forms.RadioSelect,
            "tutor_mode": forms.RadioSelect,
            "protected_material": forms.Textarea(attrs={"rows": 6}),
        }
        labels = {
            "name": gettext_lazy("Name"),
            "description": gettext_lazy("Description"),
            "system_prompt": gettext_lazy("System prompt"),
            "student_instructions": gettext_lazy("Student instructions"),
            "chat_model": gettext_lazy("Chat model"),
            "temperature": gettext_lazy("How varied the answers are"),
            "source_policy": gettext_lazy("How the assistant uses the material"),
            "curation_enabled": gettext_lazy("Check what a search finds before answering"),
            "chat_visibility": gettext_lazy("What teachers see of students' chats"),
            "active": gettext_lazy("Switched on"),
            "retention_days": gettext_lazy("Retention days"),
            "weekly_token_budget": gettext_lazy("Weekly token budget"),
            "tutor_mode": gettext_lazy("Tutor mode"),
            "protected_material": gettext_lazy("Protected material (never shown to students)"),
        }
        help_texts = {
            "system_prompt": gettext_lazy("How the assistant should behave, e.g. its role, tone and what to focus on."),
            "chat_visibility": gettext_lazy(
                "Students are told this when they join and above every chat. A change applies to chats started "
                "after it; a raise is shown to each student, who confirms it before their next chat."
            ),
            "retention_days": gettext_lazy("Chats older than this are deleted. Empty: the site's default."),
            # Plain words for teachers (issue 46): no "LLM", no "temperature 0-2".
            "temperature": gettext_lazy(
                "From 0 (the same careful wording each time) to 2 (freer, more varied wording). Empty: the model's "
                "usual setting."
            ),
            "curation_enabled": gettext_lazy(
                "The assistant reads each passage a search finds and sets aside those that do not answer the "
                "question: fewer off-topic sources, a little slower."
            ),
            "weekly_token_budget": gettext_lazy("Tokens each student may use per week. Empty: no limit."),
            "tutor_mode": gettext_lazy(
                "In guide mode every answer is checked as it streams: text that gives the protected material or "
                "these instructions away never reaches students, who get a hint instead."
            ),
            "protected_material": gettext_lazy(
                "Answer keys, worked solutions or hidden instructions. The assistant reads them in guide mode to "
                "guide students; students never see them."
            ),
        }

    def __init__(self, *args, actor, **kwargs):
        super().__init__(*args, **kwargs)
        self._actor = actor
        for name in ("source_policy", "chat_visibility", "tutor_mode"):  # left out of a post: the default
            self.fields[name].required = False
        cast(forms.ModelMultipleChoiceField, self.fields["collections"]).queryset = attachable_collections(
            actor, self.instance
        )
        for name in ("opens_at", "closes_at"):
            self.fields[name].help_text = f"{self.fields[name].help_text} {schedule_hint()}"
        if self.instance.pk:
            self.initial["example_questions"] = "\n".join(self.instance.example_questions)
            if not self.instance.is_owned_by(actor):
                self.fields["co_teachers"].disabled = True
                self.fields["co_teachers"].help_text = _("Only the prompt's owner changes its co-teachers.")
        listing = available_models()
        cast(ModelsField, self.fields["student_models"]).choices = _student_model_choices(listing, self.instance)
        stored = self.instance.chat_model if self.instance.pk else settings.CHAT_MODEL
        posted = self.data.get("chat_model", "") if self.is_bound else ""
        cast(forms.Select, self.fields["chat_model"].widget).choices = chat_model_choices(listing, [posted, stored])
        if listing.reachable("ollama"):  # "the model server": OLLAMA_HOST
            self.fields["chat_model"].help_text = _(
                "The language model that writes the answers: one of the chat models the model server has."
            )
        else:
            self.fields["chat_model"].help_text = _(
                "No model server is connected; until one is, students get answers quoted from the material."
            )

    def actor(self):
        return self._actor

    def changes(self) -> dict:
        """As the write functions take them: an added protected file as (name, bytes)."""
        changes = super().changes()
        upload = changes.pop("protected_files", None)
        if upload:
            upload.seek(0)  # read once by `clean`'s check, once by the write
            changes["protected_files"] = [(upload.name, upload.read())]
        return changes


def chat_model_choices(listing: Listing, kept: list[str]) -> list[tuple[str, str]]:
    """The chat models the servers have (their embedders left out), and the models in `kept` (the
    prompt's stored one, a posted one) even when no server has them now, marked so: saving the form
    keeps what was stored, and a refused name is shown as it was sent."""
    names = [name for name in listing.names() if not looks_like_embedder(name)]
    away = [name for name in dict.fromkeys(kept) if name and name not in names]
    marked = _("%(name)s (not available now)")
    return [(name, name) for name in names] + [(name, marked % {"name": name}) for name in away]


def _student_model_choices(listing: Listing, prompt: Prompt) -> list[tuple[str, str]]:
    """The chat models the servers have, and those the prompt lists or uses (marked when a server
    lacks them, so the teacher sees why students cannot use them and can untick them)."""
    names = [name for name in listing.names() if not looks_like_embedder(name)]
    kept = [*(prompt.student_models if prompt.pk else []), prompt.chat_model if prompt.pk else ""]
    names += [name for name in kept if name and name not in names]
    away = set() if not listing.reachable("ollama") else {name for name in names if not is_available(name)}
    return [(name, _("%(name)s (not on the server now)") % {"name": name} if name in away else name) for name in names]
