"""The tool's own addresses, absolute, as a platform's administrator pastes them into its registration
of CurreChat (Moodle: Site administration › Plugins › Activity modules › External tool › Manage tools)."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest
from django.urls import reverse
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True)
class ToolAddress:
    """One address: what it is, where it goes in the platform's form, and the URL itself."""

    label: str | Promise
    where: str | Promise
    url: str


def tool_addresses(request: HttpRequest) -> list[ToolAddress]:
    """Login initiation, launch, public key set and deep linking, or the one dynamic registration URL
    instead of them, built from the address the request came to (behind a proxy: as
    SECURE_PROXY_SSL_HEADER and ALLOWED_HOSTS let Django see it)."""
    launch = request.build_absolute_uri(reverse("lti:launch"))
    return [
        ToolAddress(
            _("Login initiation URL"),
            _("Moodle: “Initiate login URL”."),
            request.build_absolute_uri(reverse("lti:login")),
        ),
        ToolAddress(_("Launch URL"), _("Moodle: “Tool URL” and “Redirection URI(s)”."), launch),
        ToolAddress(
            _("Public key set (JWKS) URL"),
            _("Moodle: “Public keyset URL”, with “Public key type” set to “Keyset URL”."),
            request.build_absolute_uri(reverse("lti:jwks")),
        ),
        # A deep-linking request is a launch of another message type: it comes to the launch address.
        ToolAddress(
            _("Deep linking URL"),
            _("Moodle: “Content Selection URL”, with “Supports Deep Linking (Content-Item Message)” ticked."),
            launch,
        ),
        # The alternative to all four: the platform reads them itself (lti/registration.py) and its
        # registration waits in the list below for an administrator's approval.
        ToolAddress(
            _("Dynamic registration URL"),
            _(
                "Instead of the four above: Moodle: “Tool URL” under Manage tools, then “Add LTI Advantage”; "
                "Canvas: an LTI Registration developer key. The platform then waits under Learning "
                "platforms for your approval, with nothing to fill in here."
            ),
            request.build_absolute_uri(reverse("lti:register")),
        ),
    ]
