#!/bin/sh
# Restart the web processes one at a time (a release, a settings change) without losing an answer:
# each drains its running answers on SIGTERM while nginx sends new connections to the others, and
# the next is restarted only once this one is ready again. Ports as nginx's upstream lists them.
#   deploy/rolling-restart.sh 8001 8002
set -eu
for port in "$@"; do
    systemctl restart "currechat-web@$port"
    tries=0
    until curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
        tries=$((tries + 1))
        if [ "$tries" -gt 120 ]; then
            echo "The web process on port $port is not ready after 2 minutes; stopping here." >&2
            echo "See: journalctl -u currechat-web@$port" >&2
            exit 1
        fi
        sleep 1
    done
    echo "port $port: restarted and ready"
done
