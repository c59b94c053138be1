"""Browser sessions as the websockets see them: whether a session still signs its user in, asked at
every message.

An open websocket keeps the session key it was opened with, while the account's session rules go
on: signing out, deactivation and a password change (anything that changes the session auth hash)
end the account's other browser sessions at their next request. `signed_in` applies the same rules
to an open socket, reading the session and the user afresh.

The browser that changes the password stays signed in (django.contrib.auth.update_session_auth_hash),
but under a new session key, and the old one is deleted: its open sockets end too, like every other
socket of the account. Its pages open a new socket with the browser's cookie as it is now and go on
(static/js/chat.js, static/js/collection.js). A socket never follows a session to a new key: whoever
holds a copy of the old cookie (a stolen one) would follow it as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model, load_backend
from django.core.exceptions import ValidationError
from django.utils.crypto import constant_time_compare


@dataclass(frozen=True)
class SignedIn:
    user: object  # the user as they are now


def signed_in(session_key: str | None, user_id) -> SignedIn | None:
    """The user the browser session `session_key` signs in now, if it is still user `user_id`; None
    otherwise (signed out, deactivated, or its password changed since).

    Judged as django.contrib.auth.get_user judges a request: the session names the user and an
    authentication backend still configured; that backend returns the user (ModelBackend: only an
    active one); the hash the session stored at sign-in is the user's session auth hash now, or
    that hash under one of SECRET_KEY_FALLBACKS (a rotated key signs nobody out). Unlike get_user
    it changes nothing: a socket cannot set the browser's cookie, so the session is left for the
    browser's next request to renew."""
    if not session_key:
        return None
    stored = import_module(settings.SESSION_ENGINE).SessionStore(session_key=session_key).load()
    try:
        stored_id = get_user_model()._meta.pk.to_python(stored[SESSION_KEY])
        backend_path = stored[BACKEND_SESSION_KEY]
    except (KeyError, ValidationError):
        return None
    if str(stored_id) != str(user_id) or backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    user = load_backend(backend_path).get_user(stored_id)
    session_hash = stored.get(HASH_SESSION_KEY)
    if user is None or not session_hash:
        return None
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    if not any(constant_time_compare(session_hash, known) for known in hashes):
        return None
    return SignedIn(user=user)
