"""A live CurreChat for browser tests: uvicorn and the RQ worker as real processes, a Redis Stack of
their own, a SQLite file, and the Ollama-protocol test server; Debian's Chromium through Playwright.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import expect

from scripts.redis_stack import RedisStackServer, free_port
from scripts.run import web_command as run_web_command
from tests import services
from tests.commands import Commands
from tests.databases import migrated_sqlite

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "screenshots"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = "/usr/bin/chromium"
LIVE_SETTINGS = "tests.browser.live_settings"  # production's, with a fast password hasher
# Playwright's assertions wait 5 s by default, its actions the page's 20 s: on a busy machine a
# step's result (four uploaded files listed) came after 5 s. Every wait ends at its event; the
# deadline only says when a step counts as failed, and is the same for assertions and actions.
expect.set_options(timeout=20_000)

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class LiveApp:
    url: str
    env: dict
    commands: Commands | None = field(default=None, repr=False)  # started by the first `manage`

    def manage(self, *args: str) -> str:
        """`manage.py <args>`'s output, run with the app's environment (tests/commands.py: Django is
        set up once for all of a test session's commands)."""
        if self.commands is None:
            self.commands = Commands(self.env)
        return self.commands.run(*args)

    def close(self) -> None:
        if self.commands is not None:
            self.commands.close()


def start_web(port: int, env: dict[str, str], logs) -> subprocess.Popen:
    """The live app's web server as production starts it (uvicorn with the systemd unit's options,
    as `make run` does too), its output in `logs`."""
    return subprocess.Popen(
        run_web_command("127.0.0.1", str(port)),
        cwd=ROOT,
        env=env,
        stdout=logs,
        stderr=subprocess.STDOUT,
    )


def _wait_for(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"The web server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {timeout}s")


def _wait_for_worker(log: Path, process: subprocess.Popen, timeout: float = 120) -> None:
    """The worker imports the embedding libraries before it takes jobs (currechat/worker.py): on a
    busy machine that can take longer than a test waits for a file to be ready."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the worker exited: {log.read_text()[-2000:]}")
        if "*** Listening on" in log.read_text():  # rq's line (the web process's says "Uvicorn running on")
            return
        time.sleep(0.2)
    raise RuntimeError(f"the worker did not start within {timeout}s")


def record_texts(page, test_id: str) -> None:
    """Record every text the element shows from now on, however briefly: a fast search's
    "Searching: ..." line can come and go between two of Playwright's looks."""
    page.evaluate(
        """(id) => {
            const root = document.querySelector(`[data-testid="${id}"]`);
            window.__seen = [];
            new MutationObserver(() => window.__seen.push(root.innerText))
                .observe(root, {childList: true, subtree: true, characterData: true});
        }""",
        test_id,
    )


def _address(url: str) -> str:
    return url.split("#", 1)[0]


def no_overflow(page) -> None:
    """The page is never wider than the screen (names the elements that stick out if it is).

    Call it after every navigation: `new_page` fails a test that visited a page it never checked."""
    page.wait_for_load_state()
    checked = getattr(page, "checked_addresses", None)
    if checked is not None:
        checked.add(_address(page.url))
    width = page.evaluate("document.documentElement.scrollWidth")
    wider = page.evaluate(
        """(limit) => [...document.querySelectorAll('body *')]
            .filter((e) => e.getBoundingClientRect().right + window.scrollX > limit + 1)
            .slice(0, 5).map((e) => e.tagName + '.' + e.className + '#' + e.id)""",
        page.viewport_size["width"],
    )
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide: {wider}"


def seen_texts(page) -> list[str]:
    return page.evaluate("() => window.__seen || []")


@pytest.fixture(scope="session")
def live_app(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.fail("Browser tests need Debian's chromium (make test installs it when run as root).")
    tmp = tmp_path_factory.mktemp("live")
    redis_server = RedisStackServer(port=free_port(), data_dir=tmp / "redis", persistent=False)
    redis_server.start()
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": LIVE_SETTINGS,
        "DATABASE_URL": f"sqlite:///{tmp / 'live.sqlite3'}",
        "REDIS_URL": redis_server.url,
        "OLLAMA_HOST": services.fake_ollama().url,
        "CURRECHAT_VAR_DIR": str(tmp / "var"),
        "MEDIA_ROOT": str(tmp / "media"),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DEBUG": "0",
        "SECURE_COOKIES": "0",
        "ALLOW_PLAIN_HTTP": "1",  # the browser reaches the live server over plain http on loopback
        "HEALTH_CACHE_SECONDS": "1",
        "EMBEDDING_WARMUP": "1",  # as in production: the web process loads MiniLM at start
        # Who runs the service, as an operator fills it in: every prompt's privacy notice says it
        # (tests/browser/test_privacy_journey.py). Words that read the same in every language.
        "PRIVACY_OPERATOR": "Testiyliopisto IT",
        "PRIVACY_CONTACT": "tietosuoja@testi.example",
        "PRIVACY_DATA_LOCATION": "Helsinki",
        "TEACHER_INVITATIONS": "1",  # an invitation link makes a teacher account (test_coteacher_journey)
        # test_queue_journey puts files in the queue without jobs while its pages are looked at; the
        # worker queues a job again for a file queued that long without one (a lost job), and a slow
        # browser on a loaded machine must not reach that point.
        "INGEST_STALE_SECONDS": "600",
    }
    app = LiveApp(url=f"http://127.0.0.1:{port}", env=env)
    migrated_sqlite(tmp / "live.sqlite3", env)
    logs = open(tmp / "processes.log", "w")  # noqa: SIM115 — closed at teardown
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "rqworker", "--job-class", "django_tasks_rq.Job", "default", "ingest"],
        cwd=ROOT,
        env=env,
        stdout=logs,
        stderr=subprocess.STDOUT,
    )
    web = start_web(port, env, logs)
    app.commands = Commands(env, log=logs)  # sets Django up while the web process starts
    try:
        _wait_for(app.url + "/login/", web)
        _wait_for_worker(tmp / "processes.log", worker)
        yield app
    finally:
        app.close()
        for process in (web, worker):
            process.terminate()
        for process in (web, worker):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        redis_server.stop()
        logs.close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


ENGLISH_LOGIN = ("Username", "Password", "Log in")  # the login form's two labels and its button


def log_in(page, app, username: str, password: str, words: tuple[str, str, str] = ENGLISH_LOGIN) -> None:
    """Log in through the login page and wait for the page it leads to (both checked for overflow);
    `words` are the form's labels and button in the page's language."""
    user_label, password_label, button = words
    page.goto(app.url + "/login/")
    no_overflow(page)
    page.get_by_label(user_label).fill(username)
    page.get_by_label(password_label).fill(password)
    page.get_by_role("button", name=button).click()
    page.wait_for_url(lambda url: "/login/" not in url)
    no_overflow(page)


def _track_visits(page, pages: list) -> None:
    """Note every address the page's main frame shows, to check each was looked at (no_overflow)."""
    if hasattr(page, "visited_addresses"):
        return
    page.visited_addresses = []
    page.checked_addresses = set()
    pages.append(page)

    def navigated(frame):
        if frame == page.main_frame and frame.url.startswith("http"):
            page.visited_addresses.append(_address(frame.url))

    page.on("framenavigated", navigated)


@pytest.fixture
def new_page(browser, request):
    """Open a fresh browser context (its own cookies) per user; closed after the test. A test that
    passes must have checked every page it visited for overflow, pop-ups included."""
    contexts = []
    pages: list = []

    def make(width: int = 1280, height: int = 900, **options):
        """`options` go to the browser context, e.g. `locale="fi-FI"` (the browser's language)."""
        context = browser.new_context(viewport={"width": width, "height": height}, **options)
        context.grant_permissions(["clipboard-read", "clipboard-write"])
        context.on("page", lambda page: _track_visits(page, pages))
        contexts.append(context)
        page = context.new_page()
        _track_visits(page, pages)
        page.set_default_timeout(20_000)
        return page

    yield make
    for context in contexts:
        context.close()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.passed:
        unchecked = sorted(
            {url for page in pages for url in page.visited_addresses}
            - set().union(*(page.checked_addresses for page in pages))
        )
        assert not unchecked, f"pages visited but never checked for overflow (call no_overflow): {unchecked}"


class Journey:
    """Screenshots each step (as CI artifacts) and checks accessibility with axe-core."""

    def __init__(self, name: str):
        self.dir = ARTIFACTS / name
        shutil.rmtree(self.dir, ignore_errors=True)  # no stale pictures from an earlier run
        self.dir.mkdir(parents=True, exist_ok=True)
        self.step = 0

    def look(self, page, label: str, *, a11y: bool = True) -> None:
        """What a person sees here: nothing wider than the screen, no serious axe-core finding, and
        a screenshot of it."""
        no_overflow(page)
        if a11y:
            self.check_a11y(page)
        self.shot(page, label)

    def shot(self, page, label: str) -> None:
        self.step += 1
        page.screenshot(path=str(self.dir / f"{self.step:02d}-{label}.png"), full_page=True)

    def check_a11y(self, page) -> None:
        # Evaluated through the driver, not as a <script> tag: the pages' Content-Security-Policy
        # (no inline scripts) rightly blocks an injected tag, and must stay on in these tests.
        # Once per document: axe-core is half a megabyte of script to parse.
        if not page.evaluate("() => typeof axe !== 'undefined'"):
            page.evaluate(AXE.read_text())
        result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
        bad = [
            f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
            for v in result["violations"]
            if v["impact"] in ("serious", "critical")
        ]
        assert not bad, f"Accessibility violations on {page.url}:\n" + "\n".join(bad)


@pytest.fixture
def journey(request):
    return Journey(request.node.name)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    # Keep the call phase's outcome for fixtures' teardown (new_page checks only passing tests).
    report = yield
    if report.when == "call":
        item.rep_call = report
    return report
