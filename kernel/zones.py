"""Every time a page shows is in the reader's own time zone (issue 46, item 11).

The browser says which zone it is in: static/js/timezone.js keeps the cookie `ZONE_COOKIE` set to
`Intl.DateTimeFormat().resolvedOptions().timeZone`, and `ViewerTimeZoneMiddleware` activates that
zone for the request, so Django's `localtime` (kernel/formats.py's `day` and `moment`, forms'
date-time fields, which read typed times in it too) uses it. Without the cookie (the first page of
a first visit, a browser without script) or with a name the time-zone database does not know, the
site's TIME_ZONE holds. What programs read (the API, exports) stays in UTC ISO 8601.
"""

from __future__ import annotations

import zoneinfo
from urllib.parse import unquote

from django.utils import timezone

ZONE_COOKIE = "tz"


def zone_named(name: str) -> zoneinfo.ZoneInfo | None:
    """The zone of an IANA name ("Europe/Helsinki"), or None for anything else (the cookie is the
    browser's to write, so it is checked, never trusted as a path)."""
    if not name or len(name) > 64 or name.startswith("/") or ".." in name:
        return None
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None


def current_zone_name() -> str:
    """The zone times are written in for this request, by its IANA name."""
    return timezone.get_current_timezone_name()


class ViewerTimeZoneMiddleware:
    """Activates the zone the reader's browser named for the request, and the site's after it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        zone = zone_named(unquote(request.COOKIES.get(ZONE_COOKIE, "")))
        if zone is not None:
            timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()
