from access.rules import shows_details
from currechat.health import get_health


def service_status(request):
    """The service's health for the status badge; `health_details` says whether this user may see
    addresses and model names (teachers and staff) or only "ok / degraded"."""
    user = getattr(request, "user", None)
    return {"health": get_health(), "health_details": shows_details(user)}
