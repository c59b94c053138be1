"""Which CurreChat user a person of the university's identity provider is."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.identities import ExternalIdentity


class Protocol(models.TextChoices):
    OIDC = "oidc", "OpenID Connect"
    SAML = "saml", "SAML 2.0"


class SsoIdentity(ExternalIdentity):
    """A person as the provider names them: its issuer (OIDC `iss`, SAML IdP entity ID) and the
    stable subject it gives them. `person_id` is set when the deployment names the claim or
    attribute that carries it (OIDC_CLAIM_PERSON_ID, SAML_ATTRIBUTE_PERSON_ID)."""

    protocol = models.CharField(_("protocol"), max_length=8, choices=Protocol.choices)
    issuer = models.CharField(_("issuer"), max_length=255)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="sso_identities"
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    last_sign_in = models.DateTimeField(_("last sign-in"), auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_issuer_subject")]
        verbose_name = _("single sign-on identity")
        verbose_name_plural = _("single sign-on identities")
