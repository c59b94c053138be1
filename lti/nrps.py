"""LTI Advantage Names and Role Provisioning Services, the client side: an access token from the
platform (OAuth 2 client credentials, authenticated by a JWT assertion signed with the tool's key,
RFC 7523), then the course's members page by page (`Link: <...>; rel="next"`), and the
`rel="differences"` link the platform offers for the next read.

Every failure is a `RosterUnavailable` whose `str()` is a sentence for the teacher; the detail goes
to the log. Nothing here writes to the database: lti/roster.py applies what was read, all or nothing.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt
import requests
from django.conf import settings
from django.utils.translation import gettext as _

from kernel.errors import CurreChatError
from lti.keys import current_key
from lti.models import Platform

log = logging.getLogger(__name__)

SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
MEDIA_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
MAX_PAGES = 500  # a platform whose "next" links never end must not keep a worker forever
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?([a-z]+)"?')


class RosterUnavailable(CurreChatError):
    """The platform's roster could not be read; `str()` says why, for the teacher."""

    code = "roster_unavailable"
    status_code = 502


@dataclass(frozen=True)
class Member:
    """One member as the platform lists them (`user_id` is the `sub` of their launches)."""

    user_id: str
    status: str  # Active, Inactive or Deleted
    roles: tuple[str, ...]
    name: str = ""
    given_name: str = ""
    family_name: str = ""
    email: str = ""
    person_id: str = ""  # lis_person_sourcedid

    @property
    def active(self) -> bool:
        return self.status == "Active"


@dataclass(frozen=True)
class Roster:
    members: list[Member]
    differences_url: str


def _assertion(platform: Platform) -> str:
    """The client assertion: the tool says who it is (iss = sub = client id) to the token endpoint."""
    key = current_key()
    now = int(time.time())
    claims = {
        "iss": platform.client_id,
        "sub": platform.client_id,
        "aud": platform.auth_token_url,
        "iat": now,
        "exp": now + 300,
        "jti": uuid.uuid4().hex,
    }
    return jwt.encode(claims, key.private_key, algorithm="RS256", headers={"kid": key.kid})


def _fail(sentence: str, detail: str) -> RosterUnavailable:
    log.info("NRPS: %s (%s)", sentence, detail)
    return RosterUnavailable(sentence)


def _unreachable(platform: Platform) -> str:
    return _("%(platform)s did not answer; the roster was left as it was. CurreChat tries again at the next sync.") % {
        "platform": platform.name
    }


def access_token(platform: Platform) -> str:
    data = {
        "grant_type": "client_credentials",
        "client_assertion_type": ASSERTION_TYPE,
        "client_assertion": _assertion(platform),
        "scope": SCOPE,
    }
    try:
        response = requests.post(platform.auth_token_url, data=data, timeout=settings.LTI_HTTP_TIMEOUT)
    except requests.RequestException as exc:
        raise _fail(_unreachable(platform), f"token: {exc}")
    token = _json(response).get("access_token") if response.ok else None
    if not isinstance(token, str) or not token:
        sentence = _(
            "%(platform)s refused CurreChat's request to read the roster (status %(status)s). Ask its "
            "administrator to allow the Names and Role Provisioning service for CurreChat."
        )
        raise _fail(sentence % {"platform": platform.name, "status": response.status_code}, response.text[:300])
    return token


def _json(response: requests.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _links(header: str) -> dict[str, str]:
    return {rel: url for url, rel in _LINK.findall(header or "")}


def _member(raw: Any) -> Member | None:
    if not isinstance(raw, dict) or not raw.get("user_id"):
        return None
    return Member(
        user_id=str(raw["user_id"]),
        status=str(raw.get("status") or "Active"),
        roles=tuple(str(r) for r in raw.get("roles") or []),
        name=str(raw.get("name") or ""),
        given_name=str(raw.get("given_name") or ""),
        family_name=str(raw.get("family_name") or ""),
        email=str(raw.get("email") or ""),
        person_id=str(raw.get("lis_person_sourcedid") or "").strip(),
    )


def read_roster(platform: Platform, url: str) -> Roster:
    """Every member listed from `url` on (all pages), or `RosterUnavailable`."""
    token = access_token(platform)
    headers = {"Authorization": f"Bearer {token}", "Accept": MEDIA_TYPE}
    members: list[Member] = []
    differences = ""
    next_url: str | None = url
    for _page in range(MAX_PAGES):
        if not next_url:
            return Roster(members, differences)
        try:
            response = requests.get(next_url, headers=headers, timeout=settings.LTI_HTTP_TIMEOUT)
        except requests.RequestException as exc:
            raise _fail(_unreachable(platform), f"members: {exc}")
        body = _json(response)
        if not response.ok or not isinstance(body.get("members"), list):
            sentence = _(
                "%(platform)s answered with something that is not a course roster (status %(status)s); the roster "
                "was left as it was. If this keeps happening, tell your CurreChat administrator."
            )
            raise _fail(sentence % {"platform": platform.name, "status": response.status_code}, response.text[:300])
        members.extend(m for m in map(_member, body["members"]) if m is not None)
        links = _links(response.headers.get("Link", ""))
        differences = links.get("differences", differences)
        next_url = links.get("next")
    raise _fail(_unreachable(platform), "too many pages")
