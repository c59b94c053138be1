"""PyLTI1p3's view of our registrations: a tool configuration read from `Platform` rows."""

from __future__ import annotations

import json
from typing import Any

from pylti1p3.deployment import Deployment
from pylti1p3.registration import Registration
from pylti1p3.tool_config.abstract import ToolConfAbstract

from lti.keys import current_key, jwks
from lti.models import Platform


class UnknownPlatform(Exception):
    """No active registration has this issuer (and client id)."""


class PlatformNotApproved(UnknownPlatform):
    """The registration exists but an administrator has not approved it (or refused it)."""


def find_platform(issuer: str, client_id: str | None) -> Platform:
    """The active registration for `issuer` (and `client_id`, when the platform sends one)."""
    platforms = Platform.objects.filter(issuer=issuer, active=True)
    if client_id:
        platforms = platforms.filter(client_id=client_id)
    found = list(platforms[:2])
    if len(found) != 1:  # none, or an issuer with several clients that did not say which
        raise UnknownPlatform(issuer)
    if not found[0].may_launch:  # active, so: registered itself, not yet let in by an administrator
        raise PlatformNotApproved(issuer)
    return found[0]


class PlatformToolConf(ToolConfAbstract):
    """Every issuer may have several client ids, so the library always asks by (issuer, client id)."""

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def find_registration_by_issuer(self, iss: str, *args: Any, **kwargs: Any) -> Registration:
        return self.find_registration_by_params(iss, None, *args, **kwargs)  # type: ignore[arg-type]

    def find_registration_by_params(self, iss: str, client_id: str, *args: Any, **kwargs: Any) -> Registration:
        platform = find_platform(iss, client_id)
        key = current_key()
        registration = Registration()
        registration.set_issuer(platform.issuer).set_client_id(platform.client_id)
        registration.set_auth_login_url(platform.auth_login_url).set_auth_token_url(platform.auth_token_url)
        registration.set_key_set_url(platform.key_set_url or None)
        registration.set_key_set(json.loads(platform.key_set) if platform.key_set.strip() else None)
        registration.set_tool_private_key(key.private_key).set_tool_public_key(key.public_key)
        return registration

    def find_deployment(self, iss: str, deployment_id: str) -> Deployment | None:
        return None  # never asked: every issuer is "many clients"

    def find_deployment_by_params(
        self, iss: str, deployment_id: str, client_id: str, *args: Any, **kwargs: Any
    ) -> Deployment | None:
        platform = find_platform(iss, client_id)
        if deployment_id not in platform.deployment_ids:
            return None
        return Deployment().set_deployment_id(deployment_id)

    def get_jwks(self, iss: str | None = None, client_id: str | None = None, **kwargs: Any) -> dict:
        return jwks()
