"""API tokens record when they were last used, at most once a minute so busy programs don't write on every request."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from accounts.models import ApiToken


def get_collections(client, raw: str) -> int:
    return client.get("/api/v1/collections", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code


def test_a_new_token_is_marked_used_at_its_first_request(client, owner):
    token, raw = ApiToken.issue(owner)
    assert token.last_used is None
    before = timezone.now()
    assert get_collections(client, raw) == 200
    token.refresh_from_db()
    assert token.last_used is not None and before <= token.last_used <= timezone.now()


def test_last_used_is_touched_at_most_once_a_minute(client, owner):
    token, raw = ApiToken.issue(owner)
    assert get_collections(client, raw) == 200
    token.refresh_from_db()
    first = token.last_used

    assert get_collections(client, raw) == 200
    token.refresh_from_db()
    assert token.last_used == first  # a second request right away writes nothing

    recent = timezone.now() - timedelta(seconds=50)
    ApiToken.objects.filter(pk=token.pk).update(last_used=recent)
    assert get_collections(client, raw) == 200
    token.refresh_from_db()
    assert token.last_used == recent  # still within the minute

    stale = timezone.now() - timedelta(seconds=90)
    ApiToken.objects.filter(pk=token.pk).update(last_used=stale)
    before = timezone.now()
    assert get_collections(client, raw) == 200
    token.refresh_from_db()
    assert token.last_used >= before  # more than a minute old: touched again


def test_a_refused_token_is_not_marked_used(client, owner):
    token, raw = ApiToken.issue(owner)
    owner.is_active = False
    owner.save()
    assert get_collections(client, raw) == 401
    token.refresh_from_db()
    assert token.last_used is None
