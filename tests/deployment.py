"""The production layout of deploy/, started on loopback: nginx (TLS, the site file of
deploy/nginx/currechat.conf as it is) → N uvicorn web processes → PostgreSQL and a Redis Stack with a
password, M ingestion workers. Used by tests/test_deployment.py and bench/chat_load.py (--nginx).

Every process is real and started as docs/DEPLOY.md starts it; only the model server is a fake
(its URL is given). Nothing is shared with the test process's own services.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from deploy.render import render
from scripts.redis_stack import RedisStackServer, free_port
from scripts.run import web_command as unit_web_command
from tests.services import PostgresServer

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def web_command(port: int, server: str = "uvicorn", lifespan: str = "on", deflate: bool = False) -> list[str]:
    """A web process as deploy/systemd/currechat-web@.service starts it: its options read from the
    unit, as `make run` reads them, so that what is tested is what is deployed. `lifespan` and
    `deflate` (websocket per-message compression, off in the unit) differ from it only for
    bench/chat_load.py --before and --deflate; daphne for --servers."""
    if server == "daphne":
        return [PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "currechat.asgi:application"]
    command = unit_web_command("127.0.0.1", str(port))
    for option, value in (("--lifespan", lifespan), ("--ws-per-message-deflate", str(deflate).lower())):
        command[command.index(option) + 1] = value
    return command


WORKER_COMMAND = [PY, "manage.py", "rqworker", "--job-class", "django_tasks_rq.Job", "default", "ingest"]


def missing_system_packages() -> str:
    """What `make test` installs and this machine lacks, as a sentence ('' when nothing)."""
    missing = []
    if not shutil.which("nginx") and not Path("/usr/sbin/nginx").exists():
        missing.append("nginx")
    if not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"):
        missing.append("postgresql")
    if not missing:
        return ""
    return f"The deployment test needs Debian's {' and '.join(missing)}: make test installs them."


@dataclass
class Process:
    name: str
    command: list[str]
    env: dict[str, str]
    log: Path
    cwd: Path = ROOT
    port: int | None = None
    popen: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.popen = subprocess.Popen(
                self.command, cwd=self.cwd, env=self.env, stdout=log, stderr=log, start_new_session=True
            )

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.running():
            assert self.popen is not None
            self.popen.send_signal(sig)

    def wait(self, timeout: float) -> int | None:
        assert self.popen is not None
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (the drain), then SIGKILL of the whole group if it is still there."""
        if self.popen is None:
            return
        self.signal(signal.SIGTERM)
        if self.wait(timeout) is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def ready(port: int, path: str = "/readyz") -> bool:
    """The web process on `port` answers `path` with 200."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@dataclass
class Stack:
    tmp: Path
    model_url: str  # the Ollama-protocol server (OLLAMA_HOST)
    webs: int = 2
    workers: int = 2
    server: str = "uvicorn"
    openai_url: str = ""
    source: Path = ROOT  # the code the web processes run (bench/chat_load.py --before: another checkout)
    extra_env: dict[str, str] = field(default_factory=dict)
    # For older code (bench/chat_load.py --before) that has no /readyz and no ASGI lifespan.
    probe_path: str = "/readyz"
    lifespan: str = "on"
    deflate: bool = False
    redis: RedisStackServer | None = None
    postgres: PostgresServer | None = None
    web: list[Process] = field(default_factory=list)
    worker: list[Process] = field(default_factory=list)
    nginx: Process | None = None
    https_port: int = 0
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"https://localhost:{self.https_port}"

    def start(self) -> Stack:
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.redis = RedisStackServer(
            port=free_port(), data_dir=self.tmp / "redis", persistent=False, password=secrets.token_urlsafe(16)
        )
        self.redis.start()
        # A directory of its own under /tmp, as the suite's: as root the cluster runs as `postgres`,
        # which cannot enter pytest's private temporary directories.
        # Every running answer holds a connection (its thread's): room for a benchmark's hundreds.
        self.postgres = PostgresServer(Path(tempfile.mkdtemp(prefix="currechat-deploy-pg-")), max_connections=1000)
        database_url = self.postgres.start()
        self.https_port = free_port()
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_"))},
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(40),
            "ALLOWED_HOSTS": "localhost,127.0.0.1",
            "TRUST_X_FORWARDED_PROTO": "1",
            "CLIENT_IP_HEADER": "X-Forwarded-For",
            "DATABASE_URL": database_url,
            "REDIS_URL": self.redis.url,
            "REDIS_INDEX_PREFIX": "deploytest",
            "OLLAMA_HOST": self.model_url,
            "OPENAI_BASE_URL": self.openai_url,
            "EMBEDDING_MODEL": "ollama:snowflake-arctic-embed2",
            "EMBEDDING_WARMUP": "0",
            "MEDIA_ROOT": str(self.tmp / "media"),
            "STATIC_ROOT": str(self.tmp / "static"),
            "CURRECHAT_VAR_DIR": str(self.tmp / "var"),
            "CHAT_RATE_LIMIT": "0",
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "currechat.settings",
            **self.extra_env,
        }
        (self.tmp / "var").mkdir(exist_ok=True)
        self.manage("migrate", "--noinput")
        self.manage("collectstatic", "--noinput")
        for _ in range(self.webs):
            self.add_web(free_port())
        for i in range(self.workers):
            process = Process(f"worker {i + 1}", WORKER_COMMAND, self.env, self.tmp / f"worker-{i + 1}.log")
            process.start()
            self.worker.append(process)
        self._start_nginx()
        for web in self.web:
            self.wait_ready(web)
        return self

    def manage(self, *args: str, input: str | None = None) -> str:
        done = subprocess.run(
            [PY, "manage.py", *args], cwd=ROOT, env=self.env, input=input, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
        return done.stdout

    def add_web(self, port: int) -> Process:
        process = Process(
            f"web {port}",
            web_command(port, self.server, self.lifespan, self.deflate),
            self.env,
            self.tmp / f"web-{port}.log",
            self.source,
            port,
        )
        process.start()
        self.web.append(process)
        return process

    def restart_web(self, web: Process) -> None:
        """Start a stopped web process again on its port and wait until it is ready."""
        web.start()
        self.wait_ready(web)

    def wait_ready(self, web: Process, timeout: float = 120.0) -> None:
        assert web.port is not None
        deadline = time.monotonic() + timeout
        while not ready(web.port, self.probe_path):
            if not web.running():
                raise RuntimeError(f"{web.name} exited:\n{web.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{web.name} was not ready within {timeout:.0f} s:\n{web.tail()}")
            time.sleep(0.2)

    def _start_nginx(self) -> None:
        base = self.tmp / "nginx"
        base.mkdir(exist_ok=True)
        cert, key = base / "cert.pem", base / "key.pem"
        subprocess.run(
            [
                *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"),
                *("-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
                *("-keyout", str(key), "-out", str(cert)),
            ],
            check=True,
            capture_output=True,
        )
        site = render(
            (ROOT / "deploy/nginx/currechat.conf").read_text(),
            {
                "SERVER_NAME": "localhost",
                "HTTP_PORT": str(free_port()),
                "HTTPS_PORT": str(self.https_port),
                "WEB_PORTS": ",".join(str(w.port) for w in self.web),
                "STATIC_ROOT": self.env["STATIC_ROOT"],
                "TLS_CERT": str(cert),
                "TLS_KEY": str(key),
            },
        )
        (base / "site.conf").write_text(site)
        # What Debian's /etc/nginx/nginx.conf provides around a site, with every path in our directory.
        temp = "\n".join(
            f"    {kind}_temp_path {base}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        main = f"""{"user root;" if os.geteuid() == 0 else ""}
worker_processes 1;
pid {base}/nginx.pid;
error_log {base}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
{temp}
    include {base}/site.conf;
}}
"""
        (base / "nginx.conf").write_text(main)
        command = ["nginx", "-e", str(base / "error.log"), "-p", str(base), "-c", str(base / "nginx.conf")]
        self.nginx = Process("nginx", [*command, "-g", "daemon off;"], self.env, base / "out.log", port=self.https_port)
        self.nginx.start()
        deadline = time.monotonic() + 30
        import socket

        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.https_port)) == 0:
                    return
            if not self.nginx.running() or time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not start:\n{(base / 'error.log').read_text(errors='replace')}")
            time.sleep(0.1)

    def stop(self) -> None:
        for process in [*self.web, *self.worker]:
            process.stop(timeout=20)
        if self.nginx is not None:
            self.nginx.stop(timeout=10)
        if self.postgres is not None:
            self.postgres.stop()
        if self.redis is not None:
            self.redis.stop()
