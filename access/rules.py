"""The one set of access rules, used by pages, the API and websockets alike.

Each `get_*` returns the object when the user may act on it, raises `NotFound` when the user may
not know it exists (outsiders, anonymous visitors), and `Forbidden` when they can see it but may
not do this with it (a student opening a collection's settings).

Every check reads the current state from the database — the user's active flag and role, the
enrollment, co-ownership and co-teaching — at the moment of the action: taking access away
(removing a student, ending co-ownership, demoting or deactivating a user) takes effect on the
next action, open websockets included (they call `get_session_for_write` for every message).
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import User
from chat.course import privacy_levels as levels
from chat.models import (
    ChatSession,
    Enrollment,
    EnrollmentStatus,
    Message,
    MessageRole,
    Prompt,
    PromptState,
    enrolled_q,
    open_now_q,
)
from collections_app.models import Collection, SourceFile
from kernel.compiled import Compiled, first_of
from kernel.errors import Forbidden, NotAuthenticated, NotFound
from kernel.formats import moment

REMOVED = gettext_lazy(
    "You are no longer a student of this assistant, so its chats are closed to you. Ask your teacher."
)


def current(user):
    """The user as the database has them now (a websocket's scope holds the user of its handshake)."""

    if not user.is_authenticated:
        return user
    fresh = User.objects.filter(pk=user.pk).first()
    if fresh is None or not fresh.is_active:
        from django.contrib.auth.models import AnonymousUser

        return AnonymousUser()
    return fresh


def shows_details(user) -> bool:
    """Whether `user` may see addresses, model names and worker counts: teachers and staff."""
    return bool(user is not None and user.is_authenticated and user.is_active and (user.is_teacher or user.is_staff))


def require_login(user) -> None:
    if not user.is_authenticated or not user.is_active:
        raise NotAuthenticated(_("Log in first."))


def require_teacher(user) -> None:
    require_login(user)
    if not user.is_teacher:
        raise Forbidden(_("Only teachers can do this."))


def require_staff(user) -> None:
    """The service's administrators (admin-site access), as the database says now."""
    require_login(user)
    if not user.is_staff:
        raise Forbidden(_("Only the service's administrators can see this."))


def searchable_collections(user) -> QuerySet:
    """Collections a user may search: those they edit, and, for a student, those of the open
    prompts they are enrolled in that one of the prompt's teachers may still use."""

    if not (user.is_authenticated and user.is_active):
        return Collection.objects.none()
    if user.is_superuser:
        return Collection.objects.all()
    usable = set(Collection.objects.editable_by(user).values_list("pk", flat=True))
    for prompt in Prompt.objects.filter(enrolled_q(user), open_now_q()).distinct():
        usable.update(prompt.usable_collections().values_list("pk", flat=True))
    return Collection.objects.filter(pk__in=usable)


def search_page(user, prompt) -> str | None:
    """The search page of the first of the prompt's collections `user` may search, if any (the
    insight page links a material gap to it)."""
    mine = searchable_collections(user).values("pk")
    collection = prompt.usable_collections().filter(pk__in=mine).order_by("pk").first()
    return reverse("collection_search", args=[collection.pk]) if collection else None


def search_prompt(user, collection):
    """The prompt a user's search in `collection` runs for: None for its editors (their own
    collection), otherwise the first (oldest) open prompt the user is enrolled in that searches it.
    Its budget pays for the search's curation calls and its curation switch holds."""

    if user.is_superuser or collection.is_editable_by(user):
        return None
    for prompt in Prompt.objects.filter(enrolled_q(user), open_now_q()).distinct().order_by("pk"):
        if prompt.usable_collections().filter(pk=collection.pk).exists():
            return prompt
    return None


def get_collection_for_edit(user, pk: int):

    require_login(user)
    collection = Collection.objects.editable_by(user).filter(pk=pk).first()
    if collection is None:
        if searchable_collections(user).filter(pk=pk).exists():
            raise Forbidden(_("Only the collection's owners can see or change it."))
        raise NotFound(_("There is no such collection, or it is not shared with you."))
    return collection


def get_collection_for_search(user, pk: int):
    require_login(user)
    collection = searchable_collections(user).filter(pk=pk).first()
    if collection is None:
        raise NotFound(_("There is no such collection, or it is not shared with you."))
    return collection


def get_file_for_edit(user, pk: int):

    require_login(user)
    source = SourceFile.objects.select_related("collection").filter(pk=pk).first()
    if source is None:
        raise NotFound(_("There is no such file."))
    get_collection_for_edit(user, source.collection_id)
    return source


def get_file_for_source(user, pk: int, *, page: int | None = None, position: int | None = None):
    """A file whose page `page` (or passage at `position`) the user may see in the original.

    Its collection's editors see any of it. A student never downloads a collection: they see a page
    or section only when a search in one of their own chats returned a passage from it, in a
    collection they may still search — the reach they already had through that passage."""

    require_login(user)
    source = SourceFile.objects.select_related("collection").filter(pk=pk).first()
    if source is None or not searchable_collections(user).filter(pk=source.collection_id).exists():
        raise NotFound(_("There is no such file, or it is not shared with you."))
    if Collection.objects.editable_by(user).filter(pk=source.collection_id).exists():
        return source
    if not _was_shown_to(user, source, page=page, position=position):
        raise NotFound(_("This page was not among the passages your searches returned."))
    return source


def _passages_shown(user, source):
    """The passages of `source` that searches in the user's own chats returned, read from the
    stored tool results: the record of what they were shown."""

    answers = Message.objects.filter(
        session__user=user, role=MessageRole.ASSISTANT, tool_results__icontains=f'"file_id": {source.pk}'
    ).values_list("tool_results", flat=True)
    for results in answers.iterator():
        for result in results:
            for passage in result.get("passages", []):
                if passage.get("file_id") == source.pk:
                    yield passage


def _was_shown_to(user, source, *, page: int | None, position: int | None) -> bool:
    """Did a search in one of the user's own chats return a passage of this file on this page (or
    at this position)?"""
    for passage in _passages_shown(user, source):
        first, last = passage.get("page"), passage.get("page_end") or passage.get("page")
        if page is not None and first is not None and first <= page <= last:
            return True
        if position is not None and str(passage.get("chunk_id", "")).endswith(f":{source.pk}:{position}"):
            return True
    return False


def pages_shown_to(user, source) -> list[int]:
    """The pages of `source` the user may open (previous/next on a cited page): every page for its
    collection's editors, else the pages of its passages that their own searches returned."""

    if Collection.objects.editable_by(user).filter(pk=source.collection_id).exists():
        return list(range(1, (source.pages or 0) + 1))
    pages: set[int] = set()
    for passage in _passages_shown(user, source):
        first = passage.get("page")
        if isinstance(first, int):
            pages.update(range(first, (passage.get("page_end") or first) + 1))
    return sorted(pages)


def get_prompt_for_edit(user, pk: int):
    """A prompt the user teaches (owner or co-teacher)."""

    require_login(user)
    prompt = Prompt.objects.editable_by(user).filter(pk=pk).first()
    if prompt is None:
        if Prompt.objects.visible_to(user).filter(pk=pk).exists():
            raise Forbidden(_("Only the prompt's teachers can see its settings or change it."))
        raise NotFound(_("There is no such prompt, or you have not joined it."))
    return prompt


def get_prompt_for_owner(user, pk: int):
    """A prompt the user owns: deleting it and choosing its co-teachers are the owner's alone."""
    prompt = get_prompt_for_edit(user, pk)
    if not is_prompt_owner(user, prompt):
        raise Forbidden(_("Only the prompt's owner can do this."))
    return prompt


def is_prompt_owner(user, prompt) -> bool:
    return prompt.is_owned_by(user)


def get_prompt_for_chat(user, pk: int):
    """A prompt whose chats the user may open: one they teach, or one they are enrolled in (its
    state decides whether they may also write, see `check_may_chat`)."""

    require_login(user)
    prompt = Prompt.objects.visible_to(user).filter(pk=pk).first()
    if prompt is None:
        raise NotFound(_("There is no such prompt, or you have not joined it."))
    return prompt


def check_may_chat(user, prompt) -> None:
    """May the user start chats and send messages with this prompt now? Its teachers always may
    (a preview before students can); enrolled students only while it is open."""

    if prompt.is_taught_by(user):
        return
    enrollment = enrollment_of(user, prompt)
    if enrollment is None:
        raise NotFound(_("There is no such prompt, or you have not joined it."))
    state = prompt.state()
    if state != PromptState.OPEN:
        raise Forbidden(state_sentence(prompt, state))


def check_may_start_chat(user, prompt) -> None:
    """May the user start a new chat with this prompt now (`check_may_chat`)? A student must first
    acknowledge a raise of the privacy level. Older chats need not wait: a chat keeps the level it
    started under, so their next message is read as they were told."""
    check_may_chat(user, prompt)
    if not prompt.is_taught_by(user):
        levels.check_confirmed(enrollment_of(user, prompt), prompt)


def enrollment_of(user, prompt) -> Enrollment | None:
    """The user's enrollment in `prompt` while they are enrolled (not removed or blocked), else None."""
    if not (user.is_authenticated and user.is_active):
        return None
    return _ENROLLED.first(prompt.pk, user.pk)


def get_prompt_for_privacy(user, pk: int):
    """A prompt whose privacy notice the user may read by its number: its teachers and enrolled
    students (a removed student no longer). A visitor with a valid join code reads it through the
    code instead (currechat.joining.join_privacy), as they read the join page."""
    return get_prompt_for_chat(user, pk)


def get_enrollment_for_acknowledge(user, pk: int) -> Enrollment:
    """The user's own enrollment in prompt `pk`, whose privacy level they acknowledge."""
    prompt = get_prompt_for_chat(user, pk)
    enrollment = enrollment_of(user, prompt)
    if enrollment is None:  # one of its teachers: they confirm nothing
        raise Forbidden(_("Only the assistant's students confirm its privacy notice."))
    return enrollment


def state_sentence(prompt, state=None) -> str:
    """What a student is told about a prompt that is not open, with its times in their time zone."""

    state = state or prompt.state()
    if state == PromptState.DRAFT:
        return _("This assistant opens on %(when)s.") % {"when": _when(prompt.opens_at)}
    if state == PromptState.CLOSED:
        return _("This assistant closed on %(when)s; your chats stay readable.") % {"when": _when(prompt.closes_at)}
    if state == PromptState.OFF:
        return _("This assistant has been switched off by its teacher; your chats stay readable.")
    return _("This assistant is open.")


def _when(value) -> str:
    # A student may be elsewhere: the zone the time is in is named ("1.3.2026 klo 9.00 (Europe/Helsinki)").
    return moment(value, zone=True)


def get_session_for_read(user, pk: int):

    require_login(user)
    # A chat the user may read, the usual case, in one query (every chat socket's connect makes it,
    # issue 44); only a refusal reads the chat again, to say why to its own student.
    session = ChatSession.objects.readable_by(user).select_related("prompt").filter(pk=pk).first()
    if session is not None:
        return session
    if ChatSession.objects.filter(pk=pk, user_id=user.pk).exists():  # their own chat: say why, it hides nothing
        raise Forbidden(str(REMOVED))
    raise NotFound(_("There is no such chat."))


# Read on every chat message: their SQL is compiled once (kernel/compiled.py), the rows read afresh.
_CHAT_WITH_PROMPT = Compiled(lambda pk: first_of(ChatSession.objects.select_related("prompt").filter(pk=pk)), int)
_ENROLLED = Compiled(
    lambda prompt, student: first_of(
        Enrollment.objects.filter(prompt_id=prompt, student_id=student, status=EnrollmentStatus.ENROLLED)
    ),
    int,
    int,
)


def get_session_for_write(user, pk: int):
    """A chat the user may write in now: their own, on a prompt they may chat with now."""
    require_login(user)
    session = _CHAT_WITH_PROMPT.first(pk)
    if session is None or session.user_id != user.pk:
        get_session_for_read(user, pk)  # 404 unless they may read it
        raise Forbidden(_("You can read this chat but only its student can write in it."))
    # Their own chat is readable exactly while they teach or are enrolled in its prompt, which
    # `check_may_chat` reads anyway: every message asks it once, not twice (issue 44).
    try:
        check_may_chat(user, session.prompt)
    except NotFound:
        raise Forbidden(str(REMOVED)) from None  # as `get_session_for_read` tells the chat's student
    return session


def get_session_for_delete(user, pk: int):
    """A chat the user may delete: only its student (the page, the API and the admin alike). Its
    teachers, who may read it, are told so (403); anyone else learns nothing of it (404)."""
    session = get_session_for_read(user, pk)
    if session.user_id != user.pk:
        raise Forbidden(_("Only the chat's student can delete it."))
    return session


def get_answer_for_feedback(user, pk: int):
    """An answer in the user's own chat, which they may rate (on a prompt they still may open)."""

    require_login(user)
    message = Message.objects.select_related("session__prompt").filter(pk=pk, role=MessageRole.ASSISTANT).first()
    if message is None or not message.session.is_readable_by(user):
        raise NotFound(_("There is no such answer."))
    if message.session.user_id != user.pk:
        raise Forbidden(_("Only the chat's student can rate its answers."))
    return message
