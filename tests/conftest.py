"""Shared fixtures: the named users of every permission test, clients, and the real services."""

from __future__ import annotations

import contextlib

import pytest
import redis
from django.conf import settings as django_settings
from django.test import Client
from django.utils import translation

from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app.models import Collection
from kernel.redis_client import get_redis
from tests import services

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture
def ollama():
    """The Ollama-protocol test server, reset before and after the test."""
    fake = services.fake_ollama()
    fake.reset()
    yield fake
    fake.reset()


@pytest.fixture(scope="session")
def openai_server():
    """The OpenAI-protocol test server (tests/fake_openai.py), started once; tests reset it."""
    from tests.fake_openai import FakeOpenAI

    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def provider():
    """The OpenID Connect test provider (node's oidc-provider, tests/oidc_op.py), one per module:
    each module's `oidc` fixture gives it the accounts and settings its tests use."""
    from tests.oidc_op import OpenIdProvider

    op = OpenIdProvider().start()
    yield op
    op.stop()


@pytest.fixture(autouse=True)
def _clean_redis():
    yield
    with contextlib.suppress(redis.RedisError):  # a test may have left the app on a stopped server
        get_redis().flushdb()


@pytest.fixture(autouse=True)
def _default_language():
    """Each test starts in the site's language. Django's test client runs LocaleMiddleware in the
    test's own thread, and the language of a Finnish request stays active there afterwards."""
    translation.activate(django_settings.LANGUAGE_CODE)
    yield
    translation.deactivate()


def _user(username: str, role: str, **extra) -> User:
    return User.objects.create_user(username=username, password=PASSWORD, role=role, **extra)


@pytest.fixture
def owner(db):
    return _user("olga-owner", Role.TEACHER)


@pytest.fixture
def co_owner(db):
    return _user("cora-coowner", Role.TEACHER)


@pytest.fixture
def other_teacher(db):
    return _user("otto-teacher", Role.TEACHER)


@pytest.fixture
def student(db):
    return _user("sam-student", Role.STUDENT)


@pytest.fixture
def other_student(db):
    return _user("oona-student", Role.STUDENT)


@pytest.fixture
def admin_user(db):
    return _user("ada-admin", Role.TEACHER, is_staff=True, is_superuser=True)


@pytest.fixture
def collection(owner, co_owner):
    c = Collection.objects.create(name="Statistics 101", language="english", owner=owner)
    c.co_owners.add(co_owner)
    return c


@pytest.fixture
def prompt(owner, collection, student):
    p = Prompt.objects.create(owner=owner, name="Stats helper", system_prompt="Be kind.")
    p.collections.add(collection)
    Enrollment.objects.create(student=student, prompt=p)
    return p


@pytest.fixture
def client_for(db):
    def make(user: User | None) -> Client:
        c = Client()
        if user is not None:
            c.force_login(user)
        return c

    return make


@pytest.fixture
def run_worker(db):
    """Run the real RQ worker (django-tasks job class) in this process until the queues are empty.

    Same worker code as `manage.py rqworker --job-class django_tasks_rq.Job`, over the real Redis
    queue; SimpleWorker runs jobs without forking so they share the test's database transaction.
    """
    import django_rq
    from django.conf import settings
    from django_tasks_rq.backend import Job
    from rq import SimpleWorker

    def run() -> None:
        queues = [django_rq.get_queue(name, job_class=Job) for name in settings.TASK_QUEUES]
        worker = SimpleWorker(queues, connection=queues[0].connection, job_class=Job)
        try:
            worker.work(burst=True, with_scheduler=False)
        except BaseException:
            # rq unsubscribes only when work() ends normally; a worker that lost Redis (the outage
            # tests) left its pubsub thread retrying in this process for the rest of the session.
            # Told to stop, it ends by itself; nothing here waits for it.
            if worker.pubsub_thread is not None:
                worker.pubsub_thread.stop()
            raise

    return run


# Fixture modules of each area, kept apart so work on one area doesn't collide with another.
pytest_plugins = ["tests.fixtures_ingest", "tests.fixtures_search", "tests.fixtures_chat", "tests.cluster"]


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, and before it drops the PostgreSQL pass's test database: the sessions this
    process's threads still hold on it end. The chat-turn pool's and the savers' threads keep their
    connections (CONN_MAX_AGE) until the process exits, and PostgreSQL will not drop a database in
    use ("being accessed by other users": the run's end warned and left it behind)."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The named users are created for most tests; PBKDF2's deliberate slowness would dominate the suite.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _static_files_found_on_request(settings):
    # WhiteNoise lists every static file when its middleware is made, and Django's test client makes
    # the middleware anew for every Client: ~40 ms each, a third of a page test's time, thousands of
    # times a run. Found when asked for instead (its autorefresh): the same files, the same headers.
    # A server process (make run, the live app of the browser tests) makes it once and lists them.
    settings.WHITENOISE_AUTOREFRESH = True


def pytest_configure(config):
    """Compile the translation catalogues when a .po is newer than its .mo (`make test` already
    did; this keeps a plain `pytest` run right). Once, in the controller, before xdist workers start."""
    if hasattr(config, "workerinput"):
        return
    from pathlib import Path

    locale = Path(__file__).resolve().parent.parent / "locale"
    stale = [
        po
        for po in locale.glob("*/LC_MESSAGES/*.po")
        if not po.with_suffix(".mo").exists() or po.with_suffix(".mo").stat().st_mtime < po.stat().st_mtime
    ]
    if stale:
        import subprocess

        for po in stale:
            subprocess.run(["msgfmt", "--check", "-o", str(po.with_suffix(".mo")), str(po)], check=True)
