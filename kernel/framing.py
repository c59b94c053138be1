"""Which pages a learning platform may frame, and the headers that say so.

Views marked `@embeddable` may be framed by the origins in `EMBED_ALLOWED_ORIGINS` (CSP
`frame-ancestors`, no `X-Frame-Options`); every other response stays unframable
(`X-Frame-Options: DENY`, `frame-ancestors 'none'`). The middleware touches only that one
directive of whatever Content-Security-Policy the rest of the stack set, so a site-wide policy
and this rule merge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

CSP = "Content-Security-Policy"
V = TypeVar("V", bound=Callable[..., Any])


def embeddable(view: V) -> V:
    """Mark a view as frameable by the allowed origins (decorators built with `wraps` keep the mark)."""
    view.embeddable = True  # type: ignore[attr-defined]
    return view


def parse_origins(values: Iterable[str]) -> list[str]:
    """`https://host[:port]` origins (http only for localhost); anything else is a configuration error."""
    origins = []
    for value in values:
        parts = urlsplit(value.strip())
        local = parts.hostname in {"localhost", "127.0.0.1"}
        if (
            parts.scheme not in ("https", "http")
            or (parts.scheme == "http" and not local)
            or not parts.hostname
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
            or parts.username
        ):
            raise ImproperlyConfigured(
                f"EMBED_ALLOWED_ORIGINS: {value!r} is not an origin like https://moodle.example.edu "
                "(https, a host and an optional port, no path; http only for localhost)."
            )
        origins.append(f"{parts.scheme}://{parts.netloc}")
    return origins


def with_frame_ancestors(policy: str, sources: str) -> str:
    """`policy` with its frame-ancestors directive replaced (or added); other directives untouched."""
    kept = [d.strip() for d in policy.split(";") if d.strip() and d.split()[0].lower() != "frame-ancestors"]
    return "; ".join([*kept, f"frame-ancestors {sources}"])


class FrameAncestorsMiddleware:
    """Outermost middleware: it runs last on the way out, after any CSP middleware set its header."""

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        func = getattr(getattr(request, "resolver_match", None), "func", None)
        origins = settings.EMBED_ALLOWED_ORIGINS
        if origins and getattr(func, "embeddable", False):
            response.headers.pop("X-Frame-Options", None)
            response[CSP] = with_frame_ancestors(response.get(CSP, ""), " ".join(origins))
        elif not getattr(response, "xframe_options_exempt", False):
            response.headers.setdefault("X-Frame-Options", "DENY")
            if "frame-ancestors" not in response.get(CSP, ""):
                response[CSP] = with_frame_ancestors(response.get(CSP, ""), "'none'")
        return response
