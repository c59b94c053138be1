from django.conf import settings

from sso.config import sso_enabled


def campus_sign_in(request) -> dict:
    """What the password pages need to say where passwords are managed when SSO is on."""
    if not sso_enabled():
        return {"sso_enabled": False}
    return {"sso_enabled": True, "sso_name": settings.SSO_NAME, "sso_password_url": settings.SSO_PASSWORD_URL}
