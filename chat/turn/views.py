"""The chat pages: a student's chats with a prompt, and a teacher reading them."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from access.rules import (
    check_may_chat,
    check_may_start_chat,
    enrollment_of,
    get_prompt_for_chat,
    get_session_for_delete,
    get_session_for_read,
    shows_details,
    state_sentence,
)
from chat.course import allowances
from chat.course import privacy_levels as levels
from chat.course.model_choice import current_model, model_choices, offers_choice
from chat.insight import feedback
from chat.models import STUDENT_SENTENCES, ChatSession, PromptState
from chat.serializers import message_dict, student_label
from chat.turn.agent import fail_orphaned_replies
from kernel.errors import CurreChatError, NotFound
from kernel.formats import whole_percent
from kernel.framing import embeddable
from rag.providers import available_models, is_available
from rag.providers.registry import split_name

# --- Chat pages ------------------------------------------------------------------------------------


def _model_status(model: str, user) -> dict:
    """The status line of a chat: is the chat's model connected, or do answers quote passages?
    Teachers and staff can open the model's name under "Details"; students read only whether the
    assistant is available."""
    connected = is_available(model)
    if not shows_details(user):
        # chat_status.js writes the same two sentences (its catalogue) as answers arrive.
        available = _("The assistant is available (connected).")
        quoting = _("The assistant answers by quoting the course material: its language model is not connected.")
        return {"connected": connected, "model": "", "text": available if connected else quoting}
    # The model's name goes behind the line's "Details" (templates/chat/chat.html), as on every page.
    if connected:
        text = _("The language model is connected.")
    elif available_models().reachable(split_name(model)[0]):  # the model's server answered without it
        text = _("The chat model is not on the model server: answers quote the material without it.")
    else:
        text = _("No language model connected: answers quote the course material without a language model.")
    return {"connected": connected, "model": model, "text": text}


def _model_select(prompt, model: str) -> list[dict] | None:
    """The composer's choice of models, when the prompt offers more than one: each with whether it
    can answer now (a model gone from its server says so in plain words, not why)."""
    if not offers_choice(prompt):
        return None
    options = []
    for name in model_choices(prompt):
        available = is_available(name)
        label = name if available else _("%(model)s (not available now)") % {"model": name}
        options.append({"name": name, "label": label, "selected": name == model})
    return options


def _usage(user, prompt) -> dict:
    """The chat's usage line as the page starts with it; its script refreshes it after each answer."""
    standing = allowances.allowance(user.pk, prompt)
    return {
        "path": f"/api/v1/me/usage?prompt_id={prompt.pk}",
        "text": allowances.usage_sentence(standing),
        "warning": standing.warning,
        "exhausted": standing.exhausted is not None,
        "share": standing.share,
        "percent": None if standing.share is None else whole_percent(standing.share),
        # The script says when it starts again in the reader's own time zone and language.
        "resets_at": standing.week.end.isoformat(),
    }


def _may_chat(user, prompt, session) -> tuple[bool, str]:
    """Whether the user may write in `session` (None: start a chat) now, and the sentence that says
    why not (none for a raised privacy level: the page shows the change itself, with the button that
    confirms it; it holds back new chats only, an older one keeps the level it started under)."""
    try:
        if session is None:
            check_may_start_chat(user, prompt)
        else:
            check_may_chat(user, prompt)
    except levels.PrivacyUnconfirmed:
        return False, ""
    except CurreChatError as exc:
        return False, str(exc)
    return True, ""


def _chat_page(request, prompt, session):
    """A chat (or, without `session`, a blank one: it is created by its first message)."""
    owner = session.user if session else request.user
    query = request.GET.get("q", "").strip()[:200]
    sessions = _chat_list(prompt, owner, query, viewer=request.user, beside=session)
    may_chat, closed_reason = _may_chat(request.user, prompt, session)
    writable = may_chat and owner.id == request.user.id
    # A raise of the privacy level the student has not acknowledged: told here, before their next chat.
    own = enrollment_of(request.user, prompt) if owner.id == request.user.id else None
    teaching = prompt.is_taught_by(request.user)
    state = prompt.state()
    model = current_model(session) if session else prompt.chat_model
    config = {
        "session_id": session.id if session else None,
        "ws_path": f"/ws/chats/{session.id}/" if session else None,
        "api_path": f"/api/v1/chats/{session.id}" if session else None,
        "writable": writable,
        "messages": [message_dict(m) for m in session.messages.all()] if session else [],
        # Whether the assistant answers now: only for someone who can write to it (a student waiting
        # for the opening must not read a green "available") or who teaches it.
        "model_status": _model_status(model, request.user) if writable or teaching else None,
        # Which model wrote each answer: for students when they choose between models, for teachers always
        # (behind "Details" unless the answer's model was a choice: `models_chosen`).
        "show_models": offers_choice(prompt) or shows_details(request.user),
        "models_chosen": offers_choice(prompt),
        "create": {"url": "/api/v1/chats", "prompt_id": prompt.pk, "page": f"/prompts/{prompt.pk}/chat/"},
        # Ratings of the student's own answers (feedback controls under each answer).
        "feedback": feedback.own_ratings(session) if session and session.user_id == request.user.id else None,
        "feedback_note": feedback.note_for_student(session.visibility if session else prompt.chat_visibility),
        # A teacher reading a student's chat: the student's ratings, read only (a chat they can read at all).
        "ratings_read": feedback.own_ratings(session) if session and teaching and owner.id != request.user.id else None,
        "usage": _usage(request.user, prompt) if owner.id == request.user.id else None,
        # What the leak guard or the safety check did to an answer, marked for its teachers only.
        "guard_notes": teaching,
    }
    context = {
        "prompt": prompt,
        "session": session,
        "sessions": sessions,
        "read_only_owner": owner if owner.id != request.user.id else None,
        "read_only_label": student_label(session, request.user) if session and owner.id != request.user.id else "",
        "can_start": may_chat and owner.id == request.user.id,
        "closed_reason": closed_reason,
        # Teachers chat before students can (or after): the band says students can't use it now.
        "preview": teaching and state != PromptState.OPEN,
        "state_sentence": state_sentence(prompt, state),
        "example_questions": prompt.example_questions if writable else [],
        "query": query,
        "page_models": [("chat", model)],
        "model_options": _model_select(prompt, model) if writable else None,
        "max_chars": settings.CHAT_MAX_MESSAGE_CHARS,
        # What teachers see: the level the chat started under (a blank chat starts under today's).
        "visibility_sentence": _("This is your own test chat: the assistant's other teachers can read it too.")
        if teaching and owner.id == request.user.id
        else STUDENT_SENTENCES[session.visibility if session else prompt.chat_visibility],
        "attachment_limit": _("%(mb).0f MB, %(pages)s pages")
        % {"mb": settings.CHAT_ATTACHMENT_MAX_BYTES / (1024 * 1024), "pages": settings.CHAT_ATTACHMENT_MAX_PAGES},
        "chat_config": config,
        "lti_band": _lti_band(request, prompt),
        "privacy_change": levels.pending_change(own, prompt),
    }
    return render(request, "chat/chat.html", context)


def _lti_band(request, prompt) -> dict | None:
    """The course and name a learning-platform launch into this prompt brought (shown above the chat)."""
    launch = request.session.get("lti_launch")
    return launch if launch and launch.get("prompt_id") == prompt.pk else None


def _chat_list(prompt, owner, query: str, *, viewer=None, beside: ChatSession | None = None):
    """The side list: chats with at least one message (a chat exists from its first message on),
    newest first, those matching `query` in their title or messages when one is given.

    Read by anyone but its student (`viewer`, reading the chat `beside`), the list holds only the
    chats the viewer may read that were started at the level of the one read: a "none" chat's
    title (its first question) never shows, and a named chat never lists the chats its student
    wrote as "Student N" (nor the other way round). The search runs within that list only."""
    chats = ChatSession.objects.filter(prompt=prompt, user=owner, messages__isnull=False)
    if viewer is not None and viewer.pk != owner.pk:
        level = beside.visibility if beside is not None else None
        chats = chats.filter(pk__in=ChatSession.objects.readable_by(viewer).values("pk"), visibility=level)
    if query:
        chats = chats.filter(Q(title__icontains=query) | Q(messages__content__icontains=query))
    return chats.distinct()


@embeddable
@login_required
def chat_home(request, pk: int):
    """A prompt's chats: straight into the latest one, or a blank chat to ask in at once."""
    prompt = get_prompt_for_chat(request.user, pk)
    latest = _chat_list(prompt, request.user, "").first()
    if latest is not None and not request.GET.get("q"):
        return redirect("chat_session", pk=pk, session_id=latest.pk)
    return _chat_page(request, prompt, None)


@embeddable
@login_required
@require_http_methods(["GET", "POST"])
def chat_new(request, pk: int):
    """A blank chat: nothing is stored until its first message (no empty chats)."""
    prompt = get_prompt_for_chat(request.user, pk)
    if request.method == "POST":
        return redirect("chat_new", pk=pk)
    return _chat_page(request, prompt, None)


@login_required
@require_POST
def chat_rename(request, pk: int, session_id: int):
    session = get_session_for_read(request.user, session_id)
    if session.prompt_id != pk or session.user_id != request.user.pk:
        raise NotFound(_("There is no such chat."))
    title = " ".join(request.POST.get("title", "").split())[:200]
    if title:
        session.title = title
        session.save(update_fields=["title", "updated"])
        messages.success(request, _("Chat renamed."))
    else:
        messages.error(request, _("Give the chat a title."))
    return redirect("chat_session", pk=pk, session_id=session_id)


@embeddable
@login_required
def chat_session(request, pk: int, session_id: int):
    """One conversation: its student writes in it; the prompt's teacher reads it."""
    session = get_session_for_read(request.user, session_id)
    if session.prompt_id != pk:
        raise NotFound(_("There is no such chat."))
    fail_orphaned_replies(session)
    return _chat_page(request, session.prompt, session)


@login_required
@require_POST
def chat_delete(request, pk: int, session_id: int):
    """A student deletes their own chat (gone for the teachers too)."""
    session = get_session_for_delete(request.user, session_id)
    if session.prompt_id != pk:
        raise NotFound(_("There is no such chat."))
    session.delete()
    messages.success(request, _("Chat deleted."))
    return redirect("chat_home", pk=pk)
