"""What a test process starts ends with it, even when it is killed (tests/lifetimes.py).

A developer stops a run with SIGTERM or kills it hard; a killed xdist worker or controller used to
leave its Redis Stack, live daphne and workers running, holding ports and memory. Here a real
pytest runs tests/lifetime_probe.py, which starts those services and waits; we kill it as a
developer would and wait until every process it started is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lifetimes import end_orphans
from tests.waiting import running, wait_for

ROOT = Path(__file__).resolve().parent.parent

PROBE = "tests/lifetime_probe.py"

pytestmark = pytest.mark.slow


def _run_probe(tmp_path: Path, *args: str, database: str = "sqlite") -> tuple[subprocess.Popen, dict[str, int]]:
    out = tmp_path / "pids.json"
    log = tmp_path / "probe.log"
    env = {**os.environ, "LIFETIME_PROBE_OUT": str(out), "TEST_DATABASE": database}
    env = {k: v for k, v in env.items() if not k.startswith(("PYTEST_", "DJANGO_"))}
    with log.open("w") as sink:
        probe = subprocess.Popen(
            # Without Django and the suite's conftest (nothing there starts a process) it starts in
            # a second: what starts and ends the services is the tests.services plugin, loaded as ever.
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:randomly",
                "-p",
                "no:django",
                "--noconftest",
                *args,
                PROBE,
            ],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # our own Ctrl-C or teardown reaches it only through us
        )
    wait_for(lambda: out.exists() and out.read_text(), 240, "the probe to start its services", log=log)
    pids = json.loads(out.read_text())
    dead = [name for name, pid in pids.items() if not running(pid)]
    assert not dead, f"these services did not start: {dead}\n{log.read_text()[-3000:]}"
    return probe, pids


def _left(pids: dict[str, int]) -> str:
    left = {name: pid for name, pid in pids.items() if running(pid)}
    return "" if not left else f"still running: {left}"


def _assert_all_end(pids: dict[str, int]) -> None:
    wait_for(lambda: not _left(pids), 60, "every process the probe started to end", log=lambda: _left(pids))


@pytest.fixture
def reap():
    """Whatever a failing case leaves is ended here, so one failure is not followed by others."""
    probes: list[subprocess.Popen] = []
    yield probes
    for probe in probes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(probe.pid, signal.SIGKILL)
        probe.wait()
    end_orphans()


def test_a_test_process_stopped_with_sigterm_leaves_no_service_running(tmp_path, reap):
    probe, pids = _run_probe(tmp_path, "-n", "0")
    reap.append(probe)
    assert set(pids) >= {"redis", "daphne", "rqworker", "idp"}
    os.kill(probe.pid, signal.SIGTERM)
    _assert_all_end(pids)


@pytest.mark.parametrize("victim", ["worker", "controller"])
def test_a_killed_xdist_worker_or_controller_leaves_no_service_running(tmp_path, reap, victim):
    probe, pids = _run_probe(tmp_path, "-n", "1")
    reap.append(probe)
    if victim == "worker":
        os.kill(pids["pytest"], signal.SIGKILL)
    else:
        os.kill(probe.pid, signal.SIGTERM)
    _assert_all_end(pids)


def test_the_next_run_ends_what_a_run_killed_with_its_watchdog_left_even_a_detached_postgres(tmp_path, reap):
    probe, pids = _run_probe(tmp_path, "-n", "0", database="postgres")
    reap.append(probe)
    assert "postgres" in pids  # pg_ctl detaches it: no parent of ours to follow
    watchdogs = [pid for pid in _all_pids() if _is_watchdog_of(pid, pids["pytest"])]
    assert watchdogs, "the probe's watchdog was not found"
    for pid in [*watchdogs, pids["pytest"]]:  # both killed hard: nothing of the run could clean up
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not running(pids["pytest"]), 30, "the probe to die")
    assert any(running(pid) for name, pid in pids.items() if name != "pytest")
    # What the next test process does first (tests/services.py): the sweep.
    end_orphans()
    _assert_all_end(pids)


def _all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _is_watchdog_of(pid: int, owner: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(part.endswith(b"tests/lifetimes.py") for part in cmdline) and any(
        part.startswith(f"{owner}:".encode()) for part in cmdline
    )
