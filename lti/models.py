"""Learning platforms registered with CurreChat (LTI 1.3), the tool's own keys, and what a launch links.

A platform is trusted by an administrator who registers it; everything a launch claims is checked
against that registration (issuer, client id, deployment, signature by the platform's key set).
"""

from __future__ import annotations

import json

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.identities import ExternalIdentity


def _validate_key_set(value: str) -> None:
    """An inline key set must be a JWKS document: {"keys": [ {...}, ... ]}."""
    if not value.strip():
        return
    try:
        data = json.loads(value)
    except ValueError:
        raise ValidationError(_("The key set is not valid JSON."))
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list) or not data["keys"]:
        raise ValidationError(_('The key set must be a JSON object with a non-empty "keys" list.'))


class PlatformStatus(models.TextChoices):
    """Whether an administrator has let the platform launch: one added in the admin is approved; one
    that registered itself (LTI Dynamic Registration, lti/registration.py) waits for approval."""

    APPROVED = "approved", _("approved")
    PENDING = "pending", _("waiting for approval")
    REFUSED = "refused", _("refused")


class PlatformQuerySet(models.QuerySet):
    def launching(self) -> PlatformQuerySet:
        """The platforms that may launch and have their rosters read (`Platform.may_launch`)."""
        return self.filter(active=True, status=PlatformStatus.APPROVED)


class Platform(models.Model):
    """One registration of CurreChat in a learning platform (Moodle, Canvas, ...)."""

    name = models.CharField(_("name"), max_length=200, help_text=_("For administrators, e.g. “University Moodle”."))
    issuer = models.CharField(
        _("issuer"), max_length=255, help_text=_("The platform's issuer (iss), e.g. https://moodle.example.edu")
    )
    client_id = models.CharField(_("client ID"), max_length=255)
    deployment_ids = models.JSONField(
        _("deployment IDs"),
        default=list,
        blank=True,
        help_text=_('A JSON list, e.g. ["1"]. Launches from other deployments are refused.'),
    )
    auth_login_url = models.URLField(_("authentication request URL"), max_length=500)
    auth_token_url = models.URLField(_("access token URL"), max_length=500)
    key_set_url = models.URLField(_("public key set URL"), max_length=500, blank=True)
    key_set = models.TextField(
        _("public key set (JSON)"),
        blank=True,
        validators=[_validate_key_set],
        help_text=_("Instead of a key set URL: the platform's JWKS, pasted."),
    )
    active = models.BooleanField(
        _("active"), default=True, help_text=_("Launches from an inactive platform are refused.")
    )
    # Off by default: a platform's person identifier is whatever its administrators typed, so an
    # administrator turns sharing on only for a platform the university runs (sso/provision.py).
    share_person_id = models.BooleanField(
        _("share accounts by person identifier"),
        default=False,
        help_text=_(
            "When on, a launch whose person identifier (lis.person_sourcedid) is the one the university's "
            "sign-in gives reaches the same CurreChat account. Staff and superuser accounts are never shared."
        ),
    )
    status = models.CharField(
        _("approval"),
        max_length=16,
        choices=PlatformStatus.choices,
        default=PlatformStatus.APPROVED,
        help_text=_("A platform waiting for approval or refused launches nothing."),
    )
    # Set when the platform registered itself: the OpenID configuration it was read from.
    registered_from = models.URLField(_("registered from"), max_length=1000, blank=True, editable=False)
    created = models.DateTimeField(_("created"), auto_now_add=True)

    objects = PlatformQuerySet.as_manager()

    class Meta:
        verbose_name = _("learning platform")
        verbose_name_plural = _("learning platforms")
        constraints = [models.UniqueConstraint(fields=["issuer", "client_id"], name="lti_platform_issuer_client")]

    def __str__(self) -> str:
        return f"{self.name} ({self.issuer})"

    @property
    def may_launch(self) -> bool:
        """Switched on and approved by an administrator: only such a platform launches and has its
        rosters read (the one rule; `PlatformQuerySet.launching` asks the database the same)."""
        return self.active and self.status == PlatformStatus.APPROVED

    def clean(self) -> None:
        if not self.key_set_url and not self.key_set.strip():
            raise ValidationError(_("Give the platform's public key set URL or paste its key set."))
        ids = self.deployment_ids
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise ValidationError({"deployment_ids": _('Deployment IDs must be a JSON list of strings, e.g. ["1"].')})


class ToolKey(models.Model):
    """The tool's own RSA key pair (signs deep-linking responses). Made on first use, never committed."""

    kid = models.CharField(_("key ID"), max_length=64, unique=True)
    private_key = models.TextField(_("private key"))
    public_key = models.TextField(_("public key"))
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("tool key")
        verbose_name_plural = _("tool keys")

    def __str__(self) -> str:
        return self.kid


class LtiIdentity(ExternalIdentity):
    """Which CurreChat user a platform's user (its `sub`) is. `person_id` is the platform's
    lis.person_sourcedid (Moodle: the user's "ID number")."""

    platform = models.ForeignKey(
        Platform, verbose_name=_("learning platform"), on_delete=models.CASCADE, related_name="identities"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="lti_identities"
    )
    # This identity and a campus sign-in reach one account because they carry the same person
    # identifier (not because an administrator linked them): it never opens a staff or superuser account.
    joined_by_person_id = models.BooleanField(_("joined by person identifier"), default=False, editable=False)
    last_launch = models.DateTimeField(_("last launch"), auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["platform", "subject"], name="lti_identity_platform_subject")]
        verbose_name = _("LTI identity")
        verbose_name_plural = _("LTI identities")

    @property
    def issuer(self) -> str:  # type: ignore[override]
        return self.platform.issuer


class ResourceLink(models.Model):
    """A link placed in a platform's course, pointing to one prompt."""

    platform = models.ForeignKey(
        Platform, verbose_name=_("learning platform"), on_delete=models.CASCADE, related_name="resource_links"
    )
    resource_link_id = models.CharField(_("resource link ID"), max_length=255)
    prompt = models.ForeignKey(
        "chat.Prompt", verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="lti_links"
    )
    # The platform's course the link sits in, once a launch named its roster service (lti/roster.py).
    course = models.ForeignKey(
        "lti.CourseContext",
        verbose_name=_("LMS course"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="links",
    )
    context_title = models.CharField(_("course"), max_length=255, blank=True)
    title = models.CharField(_("title"), max_length=255, blank=True)
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("resource link")
        verbose_name_plural = _("resource links")
        constraints = [
            models.UniqueConstraint(fields=["platform", "resource_link_id"], name="lti_resource_link_platform_id")
        ]

    def __str__(self) -> str:
        return f"{self.context_title or self.resource_link_id} → {self.prompt}"


from lti.courses import CourseContext, CourseMember, Leavers, MemberRole, SyncLog  # noqa: E402,F401  (one app, two modules)
