"""The one URL a platform's administrator pastes into the platform (lti/registration.py)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from kernel.framing import embeddable
from lti.registration import RegistrationRefused
from lti.registration import register as register_tool


@embeddable  # Moodle opens it in a frame of its administration page (origins: EMBED_ALLOWED_ORIGINS)
@never_cache
@require_GET
def register(request: HttpRequest) -> HttpResponse:
    """Opened by the platform (in a frame or a new window) with `openid_configuration` and
    `registration_token`. Open to anyone by design: what it makes launches nothing until a CurreChat
    administrator approves it. The page then tells the platform it may close it."""
    try:
        platform = register_tool(
            request, request.GET.get("openid_configuration", ""), request.GET.get("registration_token", "")
        )
    except RegistrationRefused as refusal:
        return render(request, "lti/registered.html", {"error": str(refusal)}, status=refusal.status_code)
    response = render(request, "lti/registered.html", {"platform": platform})
    # Opened in a window, the page tells its opener (the platform's page) it is done. Django's default
    # Cross-Origin-Opener-Policy (same-origin) would cut it off from that cross-origin opener, and the
    # platform would never hear of it; SecurityMiddleware leaves a header the view set.
    response["Cross-Origin-Opener-Policy"] = "unsafe-none"
    return response
