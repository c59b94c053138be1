"""`manage.py backup DIR` and `manage.py restore DIR`: back up, wipe everything (database, uploaded
files, Redis), restore, and the same searches return the same passages and every chat reads as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from kernel.redis_client import get_redis
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call
from tests.fixtures_ingest import scanned

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = b"""# Sampling

## Standard error

The standard error of the mean shrinks as the sample grows: it is the standard deviation divided by
the square root of the sample size.

## Bias

Selection bias arises when the sample is not drawn at random from the population.
"""


def api(client, method: str, url: str, data=None):
    kwargs = {"content_type": "application/json"} if data is not None else {}
    return getattr(client, method)(f"/api/v1{url}", json.dumps(data) if data is not None else None, **kwargs)


def searched(client, collection, query: str) -> list[tuple]:
    found = api(client, "post", f"/collections/{collection.pk}/search", {"query": query, "curate": False})
    assert found.status_code == 200, found.content
    return [(r["file_name"], r["section"], r["page"], r["text"]) for r in found.json()["results"]]


def test_backup_wipe_restore_gives_the_same_searches_and_chats(
    fast_collection, enrolled_student, ingest_upload, client_for, owner, ollama, tmp_path, settings
):
    source = ingest_upload(fast_collection, NOTES, "sampling.md")
    scanned(fast_collection)
    teacher = client_for(owner)
    before = {q: searched(teacher, fast_collection, q) for q in ("standard error", "selection bias")}
    assert before["standard error"] and before["selection bias"]
    student = client_for(enrolled_student)
    prompt = fast_collection.prompts.get()
    prompt.curation_enabled = False  # curation would take the replies scripted for the chat
    prompt.save()
    prompt_id = prompt.pk
    chat_id = api(student, "post", "/chats", {"prompt_id": prompt_id}).json()["id"]
    ollama.script(Reply(tool_calls=[search_call("standard error")]), Reply(content="It shrinks [1]."))
    assert api(student, "post", f"/chats/{chat_id}/messages", {"content": "Why big samples?"}).status_code == 200
    chat_before = api(student, "get", f"/chats/{chat_id}").json()
    original = Path(source.file.path).read_bytes()

    call_command("backup", str(tmp_path / "backup"))
    # Everything gone: the database, every uploaded file, the whole Redis.
    call_command("flush", interactive=False, verbosity=0)
    shutil.rmtree(settings.MEDIA_ROOT)
    get_redis().flushdb()

    call_command("restore", str(tmp_path / "backup"))
    scanned(fast_collection)
    teacher, student = client_for(owner), client_for(enrolled_student)
    assert {q: searched(teacher, fast_collection, q) for q in before} == before
    assert api(student, "get", f"/chats/{chat_id}").json() == chat_before
    download = teacher.get(f"/api/v1/files/{source.pk}")
    assert download.status_code == 200 and download.json()["status"] == "ready"
    assert Path(source.file.path).read_bytes() == original
    # New rows continue after the restored ones (PostgreSQL's sequences were moved on).
    assert api(student, "post", "/chats", {"prompt_id": prompt_id}).json()["id"] > chat_id


def test_restore_refuses_a_database_that_already_has_data(owner, tmp_path):
    call_command("backup", str(tmp_path / "backup"))
    with pytest.raises(CommandError, match="already holds users, collections or chats"):
        call_command("restore", str(tmp_path / "backup"))


def test_backup_refuses_to_overwrite_an_earlier_backup(db, tmp_path):
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "manifest.json").write_text("{}")
    with pytest.raises(CommandError, match="not empty"):
        call_command("backup", str(tmp_path / "old"))


def test_a_backup_is_readable_by_its_owner_only_whatever_the_umask(owner, tmp_path, settings):
    """It holds every chat and password hash: directories 0700, files 0600, even under umask 000 and
    from a MEDIA_ROOT that others may read."""
    import os
    import stat

    media = Path(settings.MEDIA_ROOT) / "uploads" / "1"
    media.mkdir(parents=True, exist_ok=True)
    (media / "notes.md").write_text("# Notes\n")
    os.chmod(media / "notes.md", 0o666)  # noqa: S103 — as an upload under a loose umask lands
    old = os.umask(0)
    try:
        call_command("backup", str(tmp_path / "backups" / "today"))
    finally:
        os.umask(old)
    root = tmp_path / "backups" / "today"
    paths = [root, *root.rglob("*")]
    assert {p.relative_to(root).as_posix() for p in paths} >= {".", "manifest.json", "database.json.gz",
                                                               "media/uploads/1/notes.md"}  # fmt: skip
    modes = {p.relative_to(root).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in paths}
    assert modes == {name: 0o700 if (root / name).is_dir() else 0o600 for name in modes}
