from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SsoConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "sso"
    verbose_name = _("Campus sign-in (OpenID Connect, SAML 2.0)")
