"""Validating a launch: PyLTI1p3's checks, each failure turned into a refusal a person can act on.

The order is the library's (state, format, nonce, registration, signature, deployment, message);
on success the nonce is consumed, so the same id_token is refused the second time.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from enum import StrEnum
from typing import Any

import jwt
import requests
from django.conf import settings
from django.utils.translation import gettext as _
from pylti1p3.contrib.django import DjangoMessageLaunch, DjangoOIDCLogin
from pylti1p3.exception import LtiException, OIDCException

from kernel.errors import CurreChatError
from lti.config import PlatformNotApproved, PlatformToolConf, UnknownPlatform
from lti.storage import RedisLaunchStorage, consume_nonce

log = logging.getLogger(__name__)


class Reason(StrEnum):
    UNKNOWN_PLATFORM = "unknown_platform"
    NOT_APPROVED = "not_approved"
    BAD_SIGNATURE = "bad_signature"
    EXPIRED = "expired"
    REPLAYED = "replayed"
    UNKNOWN_DEPLOYMENT = "unknown_deployment"
    NO_STATE = "no_state"
    MALFORMED = "malformed"
    KEYS_UNAVAILABLE = "keys_unavailable"
    NO_PROMPT = "no_prompt"
    NOT_ALLOWED = "not_allowed"


def _sentence(reason: Reason) -> tuple[str, str]:
    """The title and sentence of each refusal (a function, so they are translated per request)."""
    sentences = {
        Reason.UNKNOWN_PLATFORM: (
            _("Unknown learning platform"),
            _(
                "CurreChat does not know the learning platform this link came from. Ask your CurreChat "
                "administrator to register it."
            ),
        ),
        Reason.NOT_APPROVED: (
            _("Learning platform not approved yet"),
            _(
                "This learning platform registered CurreChat, but a CurreChat administrator has not approved "
                "the registration, so nothing can be opened from it yet. Ask your CurreChat administrator."
            ),
        ),
        Reason.BAD_SIGNATURE: (
            _("Launch not trusted"),
            _(
                "The launch was not signed with the learning platform's key, so CurreChat refused it. "
                "Open the link in your course again; if this keeps happening, tell your administrator."
            ),
        ),
        Reason.EXPIRED: (
            _("Launch expired"),
            _("The launch expired before it reached CurreChat. Go back to your course and open the link again."),
        ),
        Reason.REPLAYED: (
            _("Launch already used"),
            _(
                "This launch was already used (or did not start at CurreChat), so it cannot sign you in again. "
                "Go back to your course and open the link again."
            ),
        ),
        Reason.UNKNOWN_DEPLOYMENT: (
            _("Unknown deployment"),
            _(
                "CurreChat is registered with this learning platform, but not for this deployment. Ask your "
                "CurreChat administrator to add the deployment ID to the platform's registration."
            ),
        ),
        Reason.NO_STATE: (
            _("Launch could not be confirmed"),
            _(
                "CurreChat could not confirm that this launch started in your browser: its cookie was missing or "
                "expired. Your browser may block cookies inside the course page; open the link in a new window."
            ),
        ),
        Reason.MALFORMED: (
            _("Launch incomplete"),
            _("The learning platform sent an incomplete launch. Go back to your course and open the link again."),
        ),
        Reason.KEYS_UNAVAILABLE: (
            _("Platform keys unavailable"),
            _(
                "CurreChat could not fetch the learning platform's public keys to check the launch. Try again in "
                "a moment; if this persists, tell your administrator."
            ),
        ),
        Reason.NO_PROMPT: (
            _("No assistant linked"),
            _(
                "This link in your course points to no CurreChat assistant. Your teacher can choose one by "
                "adding CurreChat to the course again and picking an assistant."
            ),
        ),
        Reason.NOT_ALLOWED: (_("Not allowed"), ""),
    }
    return sentences[reason]


class LaunchRefused(CurreChatError):
    """A launch CurreChat will not honour. `str()` is the sentence shown on the refusal page."""

    status_code = 403
    code = "lti_refused"

    def __init__(self, reason: Reason, detail: str = "", *, message: str = "") -> None:
        title, sentence = _sentence(reason)
        super().__init__(message or sentence)
        self.reason = reason
        self.title = title
        self.detail = detail  # for the log only
        self.retryable = reason is Reason.KEYS_UNAVAILABLE


class _TimeoutSession(requests.Session):
    """The library fetches key sets without a timeout; a silent platform must not hang a web worker."""

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", settings.LTI_HTTP_TIMEOUT)
        return super().request(*args, **kwargs)


def tool_conf() -> PlatformToolConf:
    return PlatformToolConf()


def oidc_login(request) -> DjangoOIDCLogin:
    return DjangoOIDCLogin(request, tool_conf(), launch_data_storage=RedisLaunchStorage())


class Launch(DjangoMessageLaunch):
    """A message launch whose every refusal is a `LaunchRefused` with a reason."""

    def __init__(self, request: Any, **kwargs: Any) -> None:
        super().__init__(
            request, tool_conf(), launch_data_storage=RedisLaunchStorage(), requests_session=_TimeoutSession(), **kwargs
        )
        # A token without an expiry or issue time would be valid forever: require both.
        options: dict[str, Any] = {"verify_aud": False, "require": ["exp", "iat"]}
        self.set_jwt_verify_options(options)
        self.set_public_key_caching(RedisLaunchStorage(), settings.LTI_KEY_SET_CACHE_SECONDS)

    @classmethod
    def restore(cls, request: Any, launch_id: str) -> Launch:
        """A launch validated earlier in this flow (deep linking's second step), from Redis."""
        launch = cls(request)
        body = launch.get_session_service().get_launch_data(launch_id) if launch_id else None
        if not body:
            raise LaunchRefused(Reason.EXPIRED, f"no launch data for {launch_id!r}")
        launch.set_launch_id(launch_id).set_auto_validation(enable=False).set_jwt({"body": body}).set_restored()
        try:
            launch.validate_registration()  # the platform may have been deactivated since
        except (LtiException, UnknownPlatform) as exc:
            raise LaunchRefused(Reason.UNKNOWN_PLATFORM, str(exc))
        return launch

    def validate(self) -> Launch:
        steps: list[tuple[Callable[[], object], Reason]] = [
            (self.validate_state, Reason.NO_STATE),
            (self.validate_jwt_format, Reason.MALFORMED),
            (self.validate_nonce, Reason.REPLAYED),
            (self.validate_registration, Reason.UNKNOWN_PLATFORM),
            (self.validate_jwt_signature, Reason.BAD_SIGNATURE),
            (self.validate_deployment, Reason.UNKNOWN_DEPLOYMENT),
            (self.validate_message, Reason.MALFORMED),
            (self._consume_nonce, Reason.REPLAYED),
            (self.save_launch_data, Reason.MALFORMED),
        ]
        self._validated = True  # the steps read the body through _get_jwt_body, which would re-enter
        try:
            for step, reason in steps:
                try:
                    step()
                except (LtiException, UnknownPlatform) as exc:
                    raise LaunchRefused(_refinement(reason, exc), f"{type(exc).__name__}: {exc}")
        except LaunchRefused as refusal:
            self._validated = False
            log.info("LTI launch refused (%s): %s", refusal.reason, refusal.detail)
            raise
        return self

    def _consume_nonce(self) -> None:
        if not consume_nonce(str(self._get_jwt_body().get("nonce", ""))):
            raise LtiException("Nonce already used")

    def get_public_key(self) -> tuple[str, str]:
        try:
            return super().get_public_key()
        except LtiException as exc:
            # The platform may have rotated its key since the set was cached: fetch it once more.
            url = self._registration.get_key_set_url() if self._registration else None
            if "Unable to find public key" not in str(exc) or not url or self._public_key_cache_data_storage is None:
                raise
            cache_key = "key-set-url-" + hashlib.md5(url.encode(), usedforsecurity=False).hexdigest()
            self._public_key_cache_data_storage.set_value(cache_key, None, 1)
            self._registration.set_key_set(None)  # type: ignore[union-attr]
            return super().get_public_key()


def _refinement(reason: Reason, exc: Exception) -> Reason:
    """The signature step fails for three reasons a person would tell apart."""
    if isinstance(exc, PlatformNotApproved):
        return Reason.NOT_APPROVED
    if reason is Reason.BAD_SIGNATURE:
        if isinstance(exc, UnknownPlatform):
            return Reason.UNKNOWN_PLATFORM
        if isinstance(exc.__cause__, jwt.ExpiredSignatureError):
            return Reason.EXPIRED
        if str(exc).startswith(("Error during fetch URL", "Invalid response from")):
            return Reason.KEYS_UNAVAILABLE
    return reason


def start_login(request, launch_url: str):
    """The OIDC login initiation: check the platform, then send the browser to its login endpoint."""
    try:
        return oidc_login(request).redirect(launch_url)
    except (OIDCException, LtiException, UnknownPlatform) as exc:
        reason = Reason.UNKNOWN_PLATFORM if isinstance(exc, UnknownPlatform) else Reason.MALFORMED
        reason = _refinement(reason, exc)
        log.info("LTI login refused (%s): %s", reason, exc)
        raise LaunchRefused(reason, str(exc))
