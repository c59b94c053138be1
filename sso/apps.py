from django.apps import AppConfig


class SsoConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "sso"
    verbose_name = "Campus sign-in (OpenID Connect, SAML 2.0)"
