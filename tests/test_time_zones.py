"""Times in the reader's own time zone (issue 46, item 11): the zone the browser names (the cookie
static/js/timezone.js sets) is the one every page writes times in and names where it matters
(schedules, budget resets); schedule fields are typed as the page's language writes a date and
time, in that zone. Without the cookie, or with a name no zone has, the site's zone holds."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.test import Client

from chat.models import Prompt

pytestmark = pytest.mark.django_db

CLOSES = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)


def reader(user, *, zone: str | None = None, language: str = "en") -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    if zone is not None:
        client.cookies["tz"] = zone
    return client


def state_line(client, prompt) -> str:
    page = client.get(f"/prompts/{prompt.pk}/").content.decode()
    return " ".join(re.search(r'data-testid="prompt-state"[^>]*>(.*?)</p>', page, re.S).group(1).split())  # type: ignore[union-attr]


def test_a_schedule_is_written_in_the_readers_zone_and_names_it(owner, prompt):
    prompt.closes_at = CLOSES
    prompt.save()
    assert "It closes on Mar 1, 2030, 4:00 AM (America/New_York)." in state_line(
        reader(owner, zone="America/New_York"), prompt
    )
    assert "1.3.2030 klo 11.00 (Europe/Helsinki)." in state_line(
        reader(owner, zone="Europe/Helsinki", language="fi"), prompt
    )


def test_a_zone_name_the_browser_encoded_is_read_too(owner, prompt):
    prompt.closes_at = CLOSES
    prompt.save()
    assert "(America/New_York)" in state_line(reader(owner, zone="America%2FNew_York"), prompt)


@pytest.mark.parametrize("cookie", [None, "Mars/Olympus", "../../etc/passwd", "..%2F..%2Fetc%2Fpasswd", ""])
def test_without_a_known_zone_the_sites_zone_holds(owner, prompt, settings, cookie):
    prompt.closes_at = CLOSES
    prompt.save()
    assert "It closes on Mar 1, 2030, 9:00 AM (UTC)." in state_line(reader(owner, zone=cookie), prompt)


def test_a_student_told_when_a_prompt_opens_reads_it_in_their_zone(student, prompt):
    prompt.opens_at = CLOSES
    prompt.save()
    home = reader(student, zone="Asia/Tokyo").get("/").content.decode()
    assert "This assistant opens on Mar 1, 2030, 6:00 PM (Asia/Tokyo)" in home


def test_the_schedule_field_is_typed_in_finnish_and_in_the_readers_zone(owner, prompt):
    prompt.opens_at = CLOSES
    prompt.save()
    client = reader(owner, zone="Europe/Helsinki", language="fi")
    form = client.get(f"/prompts/{prompt.pk}/").content.decode()
    field = re.search(r'<input[^>]*name="opens_at"[^>]*>', form).group(0)  # type: ignore[union-attr]
    assert 'value="01.03.2030 klo 11.00"' in field and 'type="text"' in field, field
    assert "Esimerkiksi" in form or "For example" in form  # the hint is there (its words are translated later)
    assert "05.03.2026 klo 14.30" in form and "(Europe/Helsinki)" in form

    data = {"name": prompt.name, "system_prompt": prompt.system_prompt, "chat_model": prompt.chat_model}
    data.update(opens_at="1.12.2030 klo 9.00", closes_at="", collections=[c.pk for c in prompt.collections.all()])
    response = client.post(f"/prompts/{prompt.pk}/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    prompt.refresh_from_db()
    assert prompt.opens_at == datetime(2030, 12, 1, 7, 0, tzinfo=UTC), "9.00 in Helsinki is 7.00 UTC in December"


def test_the_schedule_field_is_typed_in_english_too(owner, prompt):
    prompt.opens_at = CLOSES
    prompt.save()
    form = reader(owner, zone="UTC").get(f"/prompts/{prompt.pk}/").content.decode()
    field = re.search(r'<input[^>]*name="opens_at"[^>]*>', form).group(0)  # type: ignore[union-attr]
    assert 'value="Mar 01, 2030, 09:00 AM"' in field, field
    assert "Mar 05, 2026, 02:30 PM" in form and "(UTC)" in form
    assert Prompt.objects.get(pk=prompt.pk).opens_at == CLOSES
