"""Fill a deploy/ template: `{{NAME}}` from NAME=value arguments; WEB_PORTS=8001,8002 becomes the
nginx upstream's server lines, PROBE_ADDRESSES=10.0.0.5,127.0.0.1 the addresses allowed to ask for
/healthz and /readyz (default: loopback only). Standard library only, so it runs before the app is installed.

    python deploy/render.py deploy/nginx/currechat.conf SERVER_NAME=chat.example.edu WEB_PORTS=8001,8002 ...
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DEFAULTS = {"HTTP_PORT": "80", "HTTPS_PORT": "443", "WEB_HOST": "127.0.0.1", "PROBE_ADDRESSES": "127.0.0.1,::1"}


def render(template: str, values: dict[str, str]) -> str:
    """The template with every `{{NAME}}` replaced; a name without a value is an error."""
    values = DEFAULTS | values
    if "WEB_PORTS" in values:
        host = values["WEB_HOST"]
        ports = [p.strip() for p in values["WEB_PORTS"].split(",") if p.strip()]
        # max_fails=0: a process is never marked down. One that is restarting refuses connections,
        # which costs nginx microseconds on this machine before it tries the next; marked down, a
        # process just restarted stays out for fail_timeout, and stopping the next one then left
        # no process to send to (502) during a rolling restart.
        values["UPSTREAM_SERVERS"] = "\n".join(f"    server {host}:{port} max_fails=0;" for port in ports)
    # Who may ask nginx for /healthz and /readyz: the load balancer's addresses (or networks) and loopback.
    probers = [a.strip() for a in values["PROBE_ADDRESSES"].split(",") if a.strip()]
    values["PROBE_ALLOW"] = "\n".join(f"        allow {address};" for address in probers)
    missing = sorted(set(re.findall(r"\{\{(\w+)\}\}", template)) - values.keys())
    if missing:
        raise SystemExit(f"Give a value for {', '.join(missing)} (NAME=value).")
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], template)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    values = dict(arg.split("=", 1) for arg in argv[1:])
    sys.stdout.write(render(Path(argv[0]).read_text(), values))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
