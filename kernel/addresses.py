"""Server addresses as people may see them: without the credentials some carry.

A model server behind an authenticating proxy may be configured as `https://user:secret@host/v1`
or `https://host/v1?key=secret`; pages, API answers, error sentences and logs name the server by
`redact_url(url)` so a teacher can tell which one is meant and nobody reads its secret.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Query parameters that are settings, not secrets, and help tell servers apart (Azure OpenAI's).
HARMLESS_PARAMETERS = frozenset({"api-version"})


def redact_url(url: str) -> str:
    """`url` with any password, user name and query value other than HARMLESS_PARAMETERS replaced by
    `***` (redis://:secret@host → redis://:***@host, https://u:p@h/v1?key=k → https://***:***@h/v1?key=***);
    a fragment is dropped. Anything that does not parse as an address is returned as it is."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        user = "***" if parts.username else ""
        secret = ":***" if parts.password is not None else ""
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        netloc = f"{user}{secret}@{host}" + (f":{port}" if port else "")
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, v if k.lower() in HARMLESS_PARAMETERS else "***") for k, v in pairs], safe="*")
    return urlunsplit(parts._replace(netloc=netloc, query=query, fragment=""))
