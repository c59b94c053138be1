"""The one set of permission checks, used by pages, the API and websockets alike.

Each `get_*` returns the object when the user may act on it, raises `NotFound` when the user may
not know it exists (outsiders, anonymous visitors), and `Forbidden` when they can see it but may
not do this with it (a student opening a collection's settings).
"""

from __future__ import annotations

from currechat.errors import CurreChatError, NotFound


class Forbidden(CurreChatError):
    status_code = 403


class NotAuthenticated(CurreChatError):
    status_code = 401


def require_login(user) -> None:
    if not user.is_authenticated:
        raise NotAuthenticated("Log in first.")


def require_teacher(user) -> None:
    require_login(user)
    if not user.is_teacher:
        raise Forbidden("Only teachers can do this.")


def get_collection_for_edit(user, pk: int):
    from collections_app.models import Collection

    require_login(user)
    collection = Collection.objects.editable_by(user).filter(pk=pk).first()
    if collection is None:
        if Collection.objects.searchable_by(user).filter(pk=pk).exists():
            raise Forbidden("Only the collection's owners can see or change it.")
        raise NotFound("There is no such collection, or it is not shared with you.")
    return collection


def get_collection_for_search(user, pk: int):
    from collections_app.models import Collection

    require_login(user)
    collection = Collection.objects.searchable_by(user).filter(pk=pk).first()
    if collection is None:
        raise NotFound("There is no such collection, or it is not shared with you.")
    return collection


def get_file_for_edit(user, pk: int):
    from collections_app.models import SourceFile

    require_login(user)
    source = SourceFile.objects.select_related("collection").filter(pk=pk).first()
    if source is None:
        raise NotFound("There is no such file.")
    get_collection_for_edit(user, source.collection_id)
    return source


def get_prompt_for_edit(user, pk: int):
    from chat.models import Prompt

    require_login(user)
    prompt = Prompt.objects.editable_by(user).filter(pk=pk).first()
    if prompt is None:
        if Prompt.objects.visible_to(user).filter(pk=pk).exists():
            raise Forbidden("Only the prompt's teacher can see its settings or change it.")
        raise NotFound("There is no such prompt, or you have not joined it.")
    return prompt


def get_prompt_for_chat(user, pk: int):
    """A prompt the user may chat with: one they joined (active), or their own."""
    from chat.models import Prompt

    require_login(user)
    prompt = Prompt.objects.visible_to(user).filter(pk=pk).first()
    if prompt is None:
        raise NotFound("There is no such prompt, or you have not joined it.")
    return prompt


def get_session_for_read(user, pk: int):
    from chat.models import ChatSession

    require_login(user)
    session = ChatSession.objects.select_related("prompt").filter(pk=pk).first()
    if session is None or not session.is_readable_by(user):
        raise NotFound("There is no such chat.")
    return session


def get_session_for_write(user, pk: int):
    session = get_session_for_read(user, pk)
    if session.user_id != user.id:
        raise Forbidden("You can read this chat but only its student can write in it.")
    if not session.prompt.active:
        raise Forbidden("This assistant has been switched off by its teacher.")
    return session
