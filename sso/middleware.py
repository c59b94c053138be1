"""Pages may send the logout form on to the OpenID Provider.

The Content-Security-Policy's `form-action 'self'` also covers where a submitted form is redirected
(browsers enforce it on redirects): logging out (POST /logout/, then the provider's end-session
endpoint, RP-initiated logout) would be stopped by the browser. While OpenID Connect is on, this adds
the provider's origins to `form-action` of every page, and nothing else. (Joining through the
university moves on with a page of its own instead: templates/sso/continue.html.)
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from sso.config import cached_oidc_provider, oidc_enabled

log = logging.getLogger(__name__)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def provider_origins(request) -> list[str]:
    """Origins of the OpenID Provider's endpoints."""
    from django.conf import settings

    # Only what this process already knows: a page must not wait on a provider that is down.
    origins = set()
    if oidc_enabled():
        origins.add(_origin(settings.OIDC_ISSUER))
        provider = cached_oidc_provider()
        if provider is not None:
            origins.update(_origin(u) for u in (provider.authorization_endpoint, provider.end_session_endpoint))
    return sorted(o for o in origins if o)


class ProviderFormActionMiddleware:
    """Listed after csp.middleware.CSPMiddleware, so it sees the response first."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if oidc_enabled() and response.get("Content-Type", "").startswith("text/html"):
            origins = provider_origins(request)
            if origins:
                update = dict(getattr(response, "_csp_update", None) or {})
                update["form-action"] = [*update.get("form-action", []), *origins]
                response._csp_update = update
        return response
