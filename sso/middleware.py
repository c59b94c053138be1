"""Pages may send forms on to the university's sign-in service.

The Content-Security-Policy's `form-action 'self'` also covers where a submitted form is redirected
(browsers enforce it on redirects): logging out (POST /logout/, then the provider's end-session
endpoint) and joining through the university (POST /join/<code>/, then its sign-in page) would be
stopped by the browser. While campus sign-in is on, this adds the provider's origins to
`form-action` of every page, and nothing else.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from currechat.errors import CurreChatError
from sso.config import oidc_enabled, oidc_provider, saml_enabled, sso_enabled

log = logging.getLogger(__name__)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def provider_origins(request) -> list[str]:
    """Origins of the sign-in and sign-out endpoints of the configured providers."""
    from django.conf import settings

    origins = set()
    if oidc_enabled():
        origins.add(_origin(settings.OIDC_ISSUER))
        try:
            provider = oidc_provider()
        except CurreChatError:
            pass  # the issuer's own origin is then all we know
        else:
            origins.update(_origin(u) for u in (provider.authorization_endpoint, provider.end_session_endpoint))
    if saml_enabled():
        from sso.saml import idp_sign_in_origins

        origins.update(idp_sign_in_origins(request))
    return sorted(o for o in origins if o)


class ProviderFormActionMiddleware:
    """Listed after csp.middleware.CSPMiddleware, so it sees the response first."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if sso_enabled() and response.get("Content-Type", "").startswith("text/html"):
            origins = provider_origins(request)
            if origins:
                update = dict(getattr(response, "_csp_update", None) or {})
                update["form-action"] = [*update.get("form-action", []), *origins]
                response._csp_update = update
        return response
