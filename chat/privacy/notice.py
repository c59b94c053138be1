"""A prompt's privacy notice in plain words, written from its real settings each time it is read.

Nothing here is a template a teacher fills in: what is stored, who reads what at the prompt's level,
how long chats are kept (`chat.insight.retention.retention_days`), where attached files go
(`CHAT_ATTACHMENT_*`), which model servers receive the student's words (the prompt's models, its
collections' embedders and the curation model, named by the kind of server, never by model id) and
who runs the service (`PRIVACY_OPERATOR`, `PRIVACY_CONTACT`, `PRIVACY_DATA_LOCATION`; an unset one
says so in a sentence). The page (templates/prompts/privacy.html) and `GET /prompts/{id}/privacy`
both show `notice(prompt)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from chat.course.model_choice import model_choices
from chat.course.privacy_levels import LEVELS
from chat.insight.retention import retention_days
from chat.models import STUDENT_SENTENCES, Prompt, SourcePolicy
from rag.providers.registry import split_name

# What each level means, shown with all three so a student sees where this prompt stands.
LEVEL_TITLES = {
    "none": gettext_lazy("Statistics only"),
    "pseudonymous": gettext_lazy("Chats under a number"),
    "named": gettext_lazy("Chats under your name"),
}
LEVEL_DETAILS = {
    "none": gettext_lazy(
        "Teachers see how much the assistant is used, which material its answers cited and the search words "
        "that found nothing; never what you write, nor your comments on answers."
    ),
    "pseudonymous": gettext_lazy(
        "Teachers can read your chats and your ratings and comments on answers, labelled “Student N”. "
        "No page shows them which student has which number."
    ),
    "named": gettext_lazy("Teachers can read your chats and your ratings and comments on answers, under your name."),
}


@dataclass(frozen=True)
class Section:
    key: str  # a stable name: the page's anchor and the API's
    heading: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class Level:
    level: str
    title: str
    detail: str
    current: bool


@dataclass(frozen=True)
class Notice:
    prompt_id: int
    prompt_name: str
    level: str
    level_sentence: str
    levels: tuple[Level, ...]
    sections: tuple[Section, ...]


def notice(prompt: Prompt) -> Notice:
    """The notice of `prompt` as it is set now, in the active language."""
    sections = (
        Section("operator", _("Who runs this service"), _operator(prompt)),
        Section("stored", _("What is stored"), _stored()),
        Section("readers", _("Who reads what"), _readers(prompt)),
        Section("retention", _("How long your chats are kept"), _retention(prompt)),
        Section("attachments", _("Files you attach"), _attachments()),
        Section("models", _("Which model servers receive your words"), _models(prompt)),
    )
    levels = tuple(
        Level(level, str(LEVEL_TITLES[level]), str(LEVEL_DETAILS[level]), level == prompt.chat_visibility)
        for level in LEVELS
    )
    return Notice(
        prompt_id=prompt.pk,
        prompt_name=prompt.name,
        level=prompt.chat_visibility,
        level_sentence=str(STUDENT_SENTENCES[prompt.chat_visibility]),
        levels=levels,
        sections=sections,
    )


def _setting(name: str) -> str:
    # A value may end in a full stop of its own; the sentence gives one.
    return " ".join(str(getattr(settings, name, "") or "").split()).rstrip(".")


def _operator(prompt: Prompt) -> tuple[str, ...]:
    operator, contact, location = (
        _setting(n) for n in ("PRIVACY_OPERATOR", "PRIVACY_CONTACT", "PRIVACY_DATA_LOCATION")
    )
    teacher = prompt.owner.display_name
    return (
        _("This CurreChat service is run by %(operator)s.") % {"operator": operator}
        if operator
        else _("The administrator of this service has not filled in who runs it."),
        _("Questions about your data, or a request to see or delete it: %(contact)s.") % {"contact": contact}
        if contact
        else _("The administrator has not filled in whom to contact about your data; ask your teacher."),
        _("Where your data is stored: %(location)s.") % {"location": location}
        if location
        else _("The administrator has not filled in where the data is stored."),
        _("This assistant, “%(name)s”, was set up by %(teacher)s, who chose the settings this page describes.")
        % {"name": prompt.name, "teacher": teacher},
    )


def _stored() -> tuple[str, ...]:
    return (
        _("Your account: your user name, and your name and email address if you gave them."),
        _(
            "Your place in this assistant: when you joined, when you last used it, your number “Student N”, "
            "and which privacy level you confirmed and when."
        ),
        _(
            "Your chats: your questions, the assistant's answers, the searches it ran in the course material "
            "and what they found, and the ratings and comments you give answers."
        ),
        _(
            "How much you use it: how much text your questions and the answers come to each week, for the "
            "weekly allowance."
        ),
        _(
            "Counts without your name: how many questions were asked each day, which parts of the material "
            "answers cited, and the search words that found nothing in the material."
        ),
    )


def _readers(prompt: Prompt) -> tuple[str, ...]:
    return (
        _("At this assistant's level: %(sentence)s") % {"sentence": STUDENT_SENTENCES[prompt.chat_visibility]},
        _("“Teachers” are the assistant's owner and its co-teachers. Other students never see your chats."),
        _(
            "A chat keeps the level it was started under. When a teacher raises the level, you are told in the "
            "chat and asked to confirm before your next chat; a lower level needs no confirmation."
        ),
        _("The service's administrators can read everything stored here, your chats included, whatever the level."),
    )


def _retention(prompt: Prompt) -> tuple[str, ...]:
    days = retention_days(prompt)
    kept = (
        ngettext(
            "Your chats are deleted %(days)s day after their last message.",
            "Your chats are deleted %(days)s days after their last message.",
            days,
        )
        % {"days": days}
        if days
        else _("Your chats are kept until you delete them: neither this assistant nor the service deletes them.")
    )
    return (
        kept,
        _("You can delete any of your chats on the chat page at any time; it is then gone for your teachers too."),
        _(
            "The counts without your name stay after your chats are deleted. Your place in the assistant is "
            "kept until the assistant is deleted."
        ),
    )


def _attachments() -> tuple[str, ...]:
    size = _("%(mb)s MB") % {"mb": f"{settings.CHAT_ATTACHMENT_MAX_BYTES / (1024 * 1024):.0f}"}
    return (
        _("You may attach a text, Markdown, HTML or PDF file to a question (up to %(size)s and %(pages)s pages).")
        % {"size": size, "pages": settings.CHAT_ATTACHMENT_MAX_PAGES},
        _("The service reads the text out of the file on its own computer and does not keep the file itself."),
        _(
            "The text is stored with your question, kept as long as that chat, and sent with your question "
            "to the language model (below)."
        ),
        _(
            "It is never added to the course material, and other students never see it. Teachers who may read "
            "the chat see the file's name and size, not its text."
        ),
    )


def _server(model_name: str) -> str:
    """Where a model runs, in words: the kind of server, not the model's id or the server's address."""
    kind, _model = split_name(model_name)
    if kind == "local":
        return _("this service's own computer (no other server)")
    if kind == "openai":
        return _(
            "an OpenAI-compatible model server the administrator connected, which may be run by another organisation"
        )
    return _("the model server the administrator connected to this service")


def _servers(model_names) -> str:
    places = list(dict.fromkeys(_server(name) for name in model_names))
    if len(places) == 1:
        return places[0]
    return _("%(first)s and %(rest)s") % {"first": "; ".join(places[:-1]), "rest": places[-1]}


def _models(prompt: Prompt) -> tuple[str, ...]:
    choices = model_choices(prompt)
    if len(choices) == 1:
        chat = _(
            "Your questions, the text of files you attach and the chat so far are sent to one language model, "
            "which writes the answers. It runs on %(servers)s."
        )
    else:
        chat = ngettext(
            "Your questions, the text of files you attach and the chat so far are sent to the language model "
            "that writes the answers; you may choose between %(count)s models. They run on %(servers)s.",
            "Your questions, the text of files you attach and the chat so far are sent to the language model "
            "that writes the answers; you may choose between %(count)s models. They run on %(servers)s.",
            len(choices),
        )
    lines = [chat % {"servers": _servers(choices), "count": len(choices)}]
    embedders = list(prompt.usable_collections().values_list("embedding_model", flat=True))
    if prompt.source_policy == SourcePolicy.NO_SEARCH or not embedders:
        lines.append(_("This assistant does not search course material: your words go to the language model only."))
    else:
        lines.append(
            _(
                "To answer, the language model writes search words from your question and searches the course "
                "material with them. To compare meanings, the search words are processed on %(servers)s."
            )
            % {"servers": _servers(embedders)}
        )
        if prompt.curation_enabled:
            lines.append(
                _(
                    "A language model on %(server)s then reads the search words with each passage found, "
                    "to check it fits."
                )
                % {"server": _server(settings.CURATION_MODEL)}
            )
    lines.append(_("Your name and user name are never sent to a model server; what you write in your messages is."))
    lines.append(
        _("The contact above can tell you who runs these servers and where.")
        if _setting("PRIVACY_CONTACT")
        else _("Your teacher can ask the service's administrator who runs these servers and where.")
    )
    return tuple(lines)
