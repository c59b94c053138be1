from django.conf import settings

from sso.config import invitations_make_accounts, sso_enabled


def campus_sign_in(request) -> dict:
    """What the password pages need to say where passwords are managed when SSO is on, and whether
    an invitation to co-teach can make someone a teacher account here (the owner's section says so)."""
    if not sso_enabled():
        return {"sso_enabled": False, "invitations_make_accounts": invitations_make_accounts()}
    return {
        "sso_enabled": True,
        "sso_name": settings.SSO_NAME,
        "sso_password_url": settings.SSO_PASSWORD_URL,
        "invitations_make_accounts": True,
    }
