"""`make`'s Debian installs (scripts/apt-install) with another apt process holding the package lock,
as unattended-upgrades often does on a fresh machine: `make run` goes on without what it can do
without and says what is missing; `make test` waits, saying what for, and installs once the lock is free.

The lock is a real POSIX lock on a file of the test's own (held by a child process, as apt holds
dpkg's), and apt-get is a stand-in that records what it was asked to do.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "apt-install"

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # held until the test closes our standard input
"""


@pytest.fixture
def apt(tmp_path):
    """The stand-in apt-get (it appends its arguments to calls.txt) and the environment naming it."""
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "apt-get"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    fake.chmod(0o755)
    lock = tmp_path / "lock-frontend"
    lock.touch()
    env = {**os.environ, "APT_GET": str(fake), "APT_LOCK_FILES": str(lock)}
    return env, lock, calls


@pytest.fixture
def held(apt):
    """The lock held by another process until the test ends (or releases it)."""
    _env, lock, _calls = apt
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    yield holder
    holder.stdin.close()
    holder.wait(timeout=30)


def _run(env, *args):
    return subprocess.run([str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120)


def test_an_optional_install_goes_on_without_the_package_and_says_how_to_add_it(apt, held):
    env, lock, calls = apt
    done = _run(env, "--optional", "--wait", "1", "--for", "slide images", "libreoffice-impress-nogui")
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert "Skipped libreoffice-impress-nogui" in last
    assert "slide images" in last and "sudo apt-get install libreoffice-impress-nogui" in last
    assert str(lock) in last  # which lock was in the way
    assert not calls.exists()  # apt-get was never run against the held lock


def test_a_required_install_says_what_it_waits_for_and_fails_with_a_sentence(apt, held):
    env, lock, calls = apt
    done = _run(env, "--wait", "1", "--for", "the browser tests", "chromium")
    assert done.returncode == 1
    assert f"Waiting up to 1 s for {lock}" in done.stdout
    assert f"by process {held.pid} (python" in done.stdout  # who holds it, from /proc/locks
    assert "needed for the browser tests" in done.stderr and "sudo apt-get install chromium" in done.stderr
    assert not calls.exists()


def test_the_install_goes_ahead_as_soon_as_the_lock_is_released(apt, held):
    env, _lock, calls = apt
    waiting = subprocess.Popen(
        [str(SCRIPT), "--wait", "600", "--for", "the browser tests", "chromium"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert waiting.stdout.readline().startswith("Waiting up to 600 s")  # it is waiting now
    held.stdin.close()  # the other apt process ends
    held.wait(timeout=30)
    assert waiting.wait(timeout=120) == 0, waiting.stderr.read()
    asked = calls.read_text().splitlines()
    assert asked[0].endswith("update") and asked[1].endswith("install -y chromium")
    assert "DPkg::Lock::Timeout=" in asked[1]


def test_without_a_held_lock_it_installs_at_once(apt):
    env, _lock, calls = apt
    done = _run(env, "--optional", "--for", "SAML sign-in", "xmlsec1")
    assert done.returncode == 0 and done.stdout == ""
    assert calls.read_text().splitlines()[-1].endswith("install -y xmlsec1")


def test_the_lock_probe_does_not_take_the_lock_away_from_apt(apt):
    env, lock, _calls = apt
    assert _run(env, "--for", "x", "pkg").returncode == 0
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again after the script ended
    finally:
        os.close(fd)


def test_make_run_installs_optional_parts_without_stopping():
    """The run target's optional installs go through --optional (a held lock cannot stop `make run`)."""
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "libreoffice-if-root", "xmlsec-if-saml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "SAML_IDP_METADATA": "/etc/federation.xml"},
    )
    installs = [line for line in dry.stdout.splitlines() if "apt-install" in line]
    assert len(installs) == 2 and all("--optional" in line for line in installs), dry.stdout
