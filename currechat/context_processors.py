from currechat.health import get_health


def service_status(request):
    return {"health": get_health()}
