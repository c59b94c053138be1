"""Fixtures for the ingest tests: real files from ../shared/data, upload helpers, a fake VLM."""

from __future__ import annotations

import base64
import re
import threading
import time
from pathlib import Path

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from redis.commands.search.query import Query

from collections_app.models import Collection, SourceFile
from kernel.redis_client import get_index_redis
from rag.index import CollectionIndex
from tests.fake_ollama import Reply
from tests.shared_data import shared_data

# ../shared/data, wherever this checkout is (tests/shared_data.py).
_ROOT = Path(__file__).resolve().parents[1]
DATA = shared_data(_ROOT)
PDFS = DATA / "pdfs" / "en"
OPENSTAX_PYTHON = DATA / "openstax" / "introduction-python-programming" / "chapters_md"
FAST_EMBEDDER = "ollama:snowflake-arctic-embed2"  # served by the test server: quick hashed vectors


@pytest.fixture(autouse=True)
def _quick_retries(settings):
    settings.INGEST_RETRY_DELAY = 0.01


@pytest.fixture
def fast_collection(owner, co_owner, ollama):
    """A collection whose embeddings come from the test server (the local model is slow on 2 cores)."""
    c = Collection.objects.create(name="Tools course", language="english", owner=owner, embedding_model=FAST_EMBEDDER)
    c.co_owners.add(co_owner)
    return c


@pytest.fixture
def enrolled_student(owner, fast_collection, student):
    """`student`, enrolled in a prompt over `fast_collection` (so the collection is searchable to them)."""
    from chat.models import Enrollment, Prompt

    prompt = Prompt.objects.create(owner=owner, name="Tools helper", system_prompt="Help.")
    prompt.collections.add(fast_collection)
    Enrollment.objects.create(student=student, prompt=prompt)
    return student


def upload(client, collection, content: bytes, name: str, pdf_mode: str | None = None):
    data = {"file": SimpleUploadedFile(name, content)}
    if pdf_mode:
        data["pdf_mode"] = pdf_mode
    return client.post(f"/api/v1/collections/{collection.pk}/files", data)


@pytest.fixture
def ingest_upload(client_for, owner, run_worker):
    """Upload through the API as the owner, run the real worker, and return the refreshed file."""

    def do(collection, content: bytes, name: str, pdf_mode: str | None = None) -> SourceFile:
        response = upload(client_for(owner), collection, content, name, pdf_mode)
        assert response.status_code == 201, response.json()
        run_worker()
        return SourceFile.objects.get(pk=response.json()["id"])

    return do


def scanned(collection, timeout: float = 10.0) -> None:
    """Wait until RediSearch has indexed the chunks already stored when an index was (re)created:
    it scans them in the background."""
    deadline = time.monotonic() + timeout
    name = CollectionIndex.index_name(collection.pk)
    while float(get_index_redis().ft(name).info()["percent_indexed"]) < 1.0:
        assert time.monotonic() < deadline, "the index never finished scanning the stored chunks"
        time.sleep(0.02)


def indexed(collection, phrase: str) -> list[dict]:
    """Chunks of the collection whose text contains `phrase` (a RediSearch phrase query)."""
    index = CollectionIndex(collection.pk, collection.language, 1)
    query = (
        Query(f'@text:"{phrase}"')
        .return_fields("text", "file_id", "page_start", "page_end", "heading_path", "position")
        .paging(0, 100)
        .dialect(2)
    )
    result = get_index_redis().ft(index.name).search(query)
    return [
        {
            "text": d.text,
            "file_id": int(d.file_id),
            "page_start": int(d.page_start),
            "page_end": int(d.page_end),
            "heading_path": d.heading_path,
            "position": int(d.position),
        }
        for d in result.docs
    ]


def chunk_keys(collection) -> list[bytes]:
    return list(get_index_redis().scan_iter(match=f"*:{{c{collection.pk}}}:chunk:*", count=1000))


class PdfVlm:
    """A fake vision model that "reads" a real PDF: it answers for page N with a known heading,
    the page's own text and a small Markdown table, after checking it was sent a PNG image.
    Optional: a fixed delay per page, pages that always fail, and a record of concurrency."""

    def __init__(self, path: Path, headings: dict[int, str] | None = None, delay: float = 0.0, failing=()):
        self.doc_text = [page.get_text() for page in pymupdf.open(path)]
        self.headings = headings or {}
        self.delay = delay
        self.failing = set(failing)
        self.calls: list[int] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.images_ok = True
        self._lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        user = body["messages"][-1]
        number = int(re.search(r"Page (\d+) of", user["content"]).group(1))
        png = base64.b64decode(user["images"][0])
        with self._lock:
            self.calls.append(number)
            self.images_ok &= png.startswith(b"\x89PNG")
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            if number in self.failing:
                return Reply(status=500, error="out of memory")
            heading = self.headings.get(number, f"Page {number}")
            text = self.doc_text[number - 1]
            table = "| symbol | meaning |\n|---|---|\n| $\\theta$ | parameters |"
            return Reply(
                content=f"## {heading}\n\n{text}\n\n{table}\n", chunks=[f"## {heading}\n\n", text, "\n\n", table]
            )
        finally:
            with self._lock:
                self.in_flight -= 1


@pytest.fixture
def pdf_vlm():
    return PdfVlm


def blank_pdf(pages: int = 1) -> bytes:
    doc = pymupdf.open()
    for _ in range(pages):
        doc.new_page()
    return doc.tobytes()


def text_pdf(lines: list[str]) -> bytes:
    doc = pymupdf.open()
    for line in lines:
        doc.new_page().insert_text((72, 72), line)
    return doc.tobytes()


def chunks_containing(source, phrase: str) -> list[dict]:
    """The file's chunks, as stored in Redis, whose text contains `phrase` verbatim."""
    from collections_app.files import file_chunks

    return [c for c in file_chunks(source) if phrase in c.text]
