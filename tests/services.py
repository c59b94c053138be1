"""A pytest plugin (loaded with -p, before Django) that starts the real external services once per
test process: a Redis Stack server on a free port and the Ollama-protocol test server, and points
the settings at them through the same environment variables production uses.

Parallel runs (pytest-xdist): every worker is its own pytest process and starts its own Redis
Stack, so the search indexes, the channel layer, the task queues and the FLUSHDB after each test
(tests/conftest.py) never reach another worker's data. The controller process that only hands out
tests starts nothing.

With TEST_DATABASE=postgres each test process also starts its own PostgreSQL (Debian's package,
`make test` installs it) on a free port with a throwaway data directory, and the suite runs on it
instead of SQLite: SQLite serialises writes and hides races that PostgreSQL shows.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import redis

from scripts.redis_stack import RedisStackError, RedisStackServer, free_port
from tests import lifetimes
from tests.fake_ollama import FakeOllama

_state: dict = {}
# Where the controller points the settings it loads but never uses (nothing listens on port 1).
_NOWHERE_REDIS = "redis://127.0.0.1:1/0"
_NOWHERE_OLLAMA = "http://127.0.0.1:1"


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    tmp = Path(tempfile.mkdtemp(prefix=f"currechat-test-{worker or 'main'}-"))
    _state["tmp"] = tmp
    lifetimes.guard(tmp)  # whatever this process starts from here on ends with it (tests/lifetimes.py)
    if _is_xdist_controller(early_config):
        _point_settings_at(tmp, _NOWHERE_REDIS, _NOWHERE_OLLAMA, prefix="cctest-controller")
        return
    redis_server = _start_own_redis(tmp / "redis")
    _state["redis"] = redis_server
    ollama = FakeOllama().start()
    _state["ollama"] = ollama
    _point_settings_at(tmp, redis_server.url, ollama.url, prefix=f"cctest{worker}p{redis_server.port}")
    if os.environ.get("TEST_DATABASE", "sqlite") == "postgres":
        _state["postgres"] = postgres = PostgresServer(Path(tempfile.mkdtemp(prefix=f"currechat-pg-{worker}-")))
        os.environ["DATABASE_URL"] = postgres.start()


def _is_xdist_controller(early_config) -> bool:
    """True in the process that distributes tests to xdist workers (`-n N` with N > 0)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return False
    workers = getattr(early_config.known_args_namespace, "numprocesses", None)
    return bool(workers) and workers != "0"


def _start_own_redis(data_dir: Path, attempts: int = 5) -> RedisStackServer:
    """A Redis Stack that is this process's alone.

    free_port() only proposes a port: another worker may take it before our server binds. A server
    that then fails to start, or a port that answers from someone else's process, means another try.
    """
    problem = ""
    for _ in range(attempts):
        server = RedisStackServer(port=free_port(), data_dir=data_dir, persistent=False)
        try:
            server.start()
        except RedisStackError as exc:
            problem = str(exc)
            continue
        if _served_by(server):
            return server
        server.stop()
        problem = f"port {server.port} answered from another process"
    raise RedisStackError(f"Could not start a Redis Stack of this test process's own: {problem}")


def _served_by(server: RedisStackServer) -> bool:
    assert server.process is not None
    client = redis.Redis.from_url(server.url)
    try:
        return int(client.info("server")["process_id"]) == server.process.pid
    finally:
        client.close()


def _point_settings_at(tmp: Path, redis_url: str, ollama_url: str, *, prefix: str) -> None:
    (tmp / "var").mkdir()  # the SQLite test database's directory (settings: DATABASES TEST NAME)
    os.environ.update(
        {
            "REDIS_URL": redis_url,
            "OLLAMA_HOST": ollama_url,
            "OLLAMA_TIMEOUT": "10",
            "CURRECHAT_VAR_DIR": str(tmp / "var"),
            # Never the developer's .env (`make run` writes one with a SECRET_KEY): a file that
            # does not exist, so what a test sees is what the test set.
            "CURRECHAT_ENV_FILE": str(tmp / "no.env"),
            "MEDIA_ROOT": str(tmp / "media"),
            "SECRET_KEY": "test-secret-key-not-for-production",
            "DEBUG": "0",
            "SECURE_COOKIES": "0",
            "ALLOW_PLAIN_HTTP": "1",  # the test client and live servers speak plain http on loopback
            "HEALTH_CACHE_SECONDS": "0",
            "EMBEDDING_WARMUP": "0",  # tests that import the ASGI app must not load MiniLM each time
            # Index and channel-layer key names carry the worker too, so even a connection that
            # reached another worker's server would find none of that worker's data.
            "REDIS_INDEX_PREFIX": prefix,
            "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        }
    )


class PostgresServer:
    """A throwaway PostgreSQL cluster on a free loopback port. PostgreSQL refuses to run as root,
    so as root the cluster belongs to the `postgres` user the Debian package creates."""

    USER = "currechat"

    def __init__(self, base: Path, max_connections: int = 200):
        self.base = base
        self.max_connections = max_connections
        self.data = base / "pg"
        self.port = free_port()
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        if not bins:
            raise RuntimeError("TEST_DATABASE=postgres needs Debian's postgresql package (make test installs it).")
        self.bin = Path(bins[-1]).parent

    def _run(self, *args: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> str:
        """Start the cluster; its database URL (pytest-django creates the test database in it)."""
        if os.geteuid() == 0:
            self.base.chmod(0o755)
            shutil.chown(self.base, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", self.USER, "--no-sync")
        # Durability off: a test cluster is thrown away, and fsync is most of a test's write time.
        options = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += f" -c synchronous_commit=off -c full_page_writes=off -c max_connections={self.max_connections}"
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.base / "log"), "-w", "start"
        )
        # The database itself too, for the processes a test starts (`make run`'s script migrates it).
        subprocess.run(
            [str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.USER, self.USER],
            check=True,
            capture_output=True,
        )
        # pg_ctl detached the server from us: written down, it ends with this test process all the same.
        lifetimes.register(self.postmaster_pid())
        return f"postgres://{self.USER}@127.0.0.1:{self.port}/{self.USER}"

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.base, ignore_errors=True)


# What a test requests to reach the database in its own process (pytest-django refuses it otherwise).
_DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
}


def pytest_addoption(parser):
    parser.addoption(
        "--database-tests-only",
        action="store_true",
        help="Run only the tests that reach the database (make test-postgres: the rest ran on SQLite already).",
    )


@pytest.hookimpl(trylast=True)  # after xdist's own, which names each grouped test's group
def pytest_collection_modifyitems(config, items):
    """`--database-tests-only`: the second pass of `make test`, on PostgreSQL, runs the tests that
    use the database, in their process (a database fixture or mark) or in a process they start
    (marked `database`). Every other test ran in the SQLite pass, where nothing of it differs."""
    _check_groups(config, items)
    _long_waits_first(items)
    if not config.getoption("database_tests_only"):
        return
    keep, other = [], []
    for item in items:
        marked = _in_database(item) or item.get_closest_marker("database")
        (keep if marked else other).append(item)
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = keep
    _slow_first_in_each_part(items)


def _in_database(item) -> bool:
    return bool(set(getattr(item, "fixturenames", ())) & _DATABASE_FIXTURES or item.get_closest_marker("django_db"))


def _long_waits_first(items) -> None:
    """pytest-django runs the database tests first and the others last. Of those others, the browser
    tests came first and the tests that wait on processes (`make run` killed hard, a worker through
    an outage, a 119-page ingestion's memory) after them, so each pass ended with one worker waiting
    two minutes on one of them while the other cores stood idle. The slow ones among the others now
    go first: their waits overlap the browser tests on the other workers. Only the part after the
    last database test moves, so pytest-django's order (and the browser tests after every database
    test of their process, which Playwright's event loop needs) stays as it was."""
    start = len(items)
    while start and not _in_database(items[start - 1]):
        start -= 1
    others = items[start:]
    waits = [item for item in others if item.get_closest_marker("slow") and not item.get_closest_marker("browser")]
    chosen = set(waits)
    items[start:] = waits + [item for item in others if item not in chosen]


def _django_part(item) -> int:
    """pytest-django's order (plugin.py, `get_order_number`): 0 the database tests in a transaction,
    1 the transactional ones, 2 the others."""
    marker = item.get_closest_marker("django_db")
    fixtures = set(getattr(item, "fixturenames", ()))
    transactional = bool(marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")))
    if transactional or fixtures & {"transactional_db", "live_server"}:
        return 1
    return 0 if marker or "db" in fixtures else 2


def _slow_first_in_each_part(items) -> None:
    """The PostgreSQL pass is database tests only, and its slow ones (a worker's stale job watched for
    93 s, the Redis outages, `make run`) came last in their parts: the pass ended with one worker
    waiting on them and the others idle. Within each of pytest-django's parts they now go first.
    Nothing crosses from one part to another; if the order is not pytest-django's, it is left alone."""
    parts = [_django_part(item) for item in items]
    if parts != sorted(parts):
        return
    order = {id(item): (part, not item.get_closest_marker("slow")) for item, part in zip(items, parts, strict=True)}
    items.sort(key=lambda item: order[id(item)])


_UNGROUPED = pytest.StashKey[str]()


def _check_groups(config, items) -> None:
    """With `--dist loadgroup`, xdist sends the tests of an `xdist_group` to one worker by adding
    `@<group>` to their ids on each worker. pytest 9.2's structured ids ignore that (pytest-xdist
    issue 1386): every group was spread over the workers without a word, and each worker paid the
    group's expensive setup again (a model's embeddings, the production layout). Say so instead:
    each grouped test fails with the reason (an error raised here would only crash xdist's controller)."""
    if not config.getoption("loadgroup", False):  # set on xdist's workers only
        return
    for item in items:
        if item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
            item.stash[_UNGROUPED] = (
                "pytest-xdist did not send this test to its xdist_group's worker: this pytest and pytest-xdist "
                "do not work together (pytest-xdist issue 1386); install the versions of requirements-dev.txt."
            )


def pytest_runtest_setup(item):
    if _UNGROUPED in item.stash:
        pytest.fail(item.stash[_UNGROUPED], pytrace=False)


def pytest_unconfigure(config):
    if "postgres" in _state:
        _state["postgres"].stop()
    if "ollama" in _state:
        _state["ollama"].stop()
    if "redis" in _state:
        _state["redis"].stop()
    if "tmp" in _state:
        shutil.rmtree(_state["tmp"], ignore_errors=True)


def redis_server() -> RedisStackServer:
    return _state["redis"]


def fake_ollama() -> FakeOllama:
    return _state["ollama"]
