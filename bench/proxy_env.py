"""Which model servers `rag.providers.wire.proxied` (the standard library's proxy helpers) sends
through a proxy, against what httpx (the client a proxied answer is read with) does, for NO_PROXY
spellings operators write.

    .venv/bin/python bench/proxy_env.py

A row where `proxied` says yes and httpx no costs nothing but speed: the answer is read through
httpx, which goes straight to the server. The other way round would bypass a proxy the network
needs; the table must have no such row.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
CASES = [
    ("", "http://example.org:11434"),
    ("example.org", "http://example.org:11434"),
    ("example.org", "http://gpu.example.org:11434"),
    (".example.org", "http://gpu.example.org:11434"),
    ("example.org", "http://notexample.org:11434"),
    ("*.example.org", "http://gpu.example.org:11434"),
    ("*", "http://example.org:11434"),
    ("localhost,*", "http://example.org:11434"),
    ("example.org, 127.0.0.1", "http://127.0.0.1:11434"),
    ("example.org:11434", "http://example.org:11434"),
    ("example.org:9999", "http://example.org:11434"),
    ("::1", "http://[::1]:11434"),
    ("[::1]", "http://[::1]:11434"),
    ("10.0.0.0/8", "http://10.1.2.3:11434"),
    ("EXAMPLE.org", "http://Example.ORG:11434"),
    ("localhost", "http://localhost:11434"),
    ("http://example.org", "http://example.org:11434"),
]


def by_httpx(url: str) -> bool | str:
    try:
        with httpx.Client(trust_env=True) as client:
            return client._transport_for_url(httpx.URL(url)) is not client._transport
    except httpx.InvalidURL:
        return "refuses the variable"


def main() -> int:
    from rag.providers.wire import proxied

    for name in ("no_proxy", "http_proxy", "all_proxy", "ALL_PROXY"):
        os.environ.pop(name, None)
    os.environ["HTTP_PROXY"] = "http://proxy.invalid:3128"
    print("| NO_PROXY | server | httpx proxies | `proxied` |\n|---|---|---|---|")
    bypassed = 0
    for no_proxy, url in CASES:
        os.environ["NO_PROXY"] = no_proxy
        theirs, ours = by_httpx(url), proxied(url)
        bypassed += theirs is True and not ours
        print(f"| `{no_proxy}` | {url} | {theirs} | {ours} |")
    print(f"\nservers `proxied` would reach around a proxy httpx uses: {bypassed}")
    return 1 if bypassed else 0


if __name__ == "__main__":
    sys.exit(main())
