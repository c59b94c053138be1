"""The page images a PDF sends to the vision model are real PNGs that show the page."""

from __future__ import annotations

import base64
import struct
import zlib

import pymupdf
import pytest

from collections_app.models import FileStatus
from tests.fake_ollama import Reply


class ImageRecorder:
    """A fake vision model that keeps every image it is sent and answers with a short page text."""

    def __init__(self):
        self.images: list[bytes] = []

    def __call__(self, body: dict) -> Reply:
        self.images.extend(base64.b64decode(image) for image in body["messages"][-1].get("images", []))
        return Reply(content="## A page\n\nA black square in the corner.")


def square_pdf(width: float, height: float) -> bytes:
    """One page with a black square filling its top-left quarter, the rest white."""
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    page.draw_rect(pymupdf.Rect(0, 0, width / 2, height / 2), color=(0, 0, 0), fill=(0, 0, 0))
    return doc.tobytes()


def png_chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """The PNG's chunks as (type, data), after checking the signature and every chunk's CRC."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = [], 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, data = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", png[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + data), f"bad CRC in {kind!r}"
        chunks.append((kind, data))
        at += 12 + length
    return chunks


@pytest.fixture
def vision_model(ollama):
    recorder = ImageRecorder()
    ollama.responder = recorder
    return recorder


def test_a_page_is_sent_as_a_png_that_decodes_to_the_page(fast_collection, ingest_upload, vision_model, settings):
    settings.INGEST_VLM_DPI = 144  # two pixels per point
    source = ingest_upload(fast_collection, square_pdf(200, 100), "square.pdf", "vlm")
    assert source.status == FileStatus.READY, source.error

    [png] = vision_model.images
    kinds = [kind for kind, _ in png_chunks(png)]
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds
    image = pymupdf.Pixmap(png)  # MuPDF's own decoder reads it back
    assert (image.width, image.height) == (400, 200)
    assert image.pixel(50, 50) == (0, 0, 0)  # inside the black square
    assert image.pixel(350, 150) == (255, 255, 255)  # the white rest of the page


def test_an_oversized_page_is_scaled_down_to_a_readable_image(fast_collection, ingest_upload, vision_model, settings):
    settings.INGEST_VLM_DPI = 150
    source = ingest_upload(fast_collection, square_pdf(3000, 1000), "poster.pdf", "vlm")  # 42 x 14 inches
    assert source.status == FileStatus.READY, source.error

    [png] = vision_model.images
    image = pymupdf.Pixmap(png)
    assert max(image.width, image.height) <= 2000
    assert image.width == pytest.approx(3 * image.height, abs=2)  # the page's shape is kept
    assert image.pixel(image.width // 4, image.height // 4) == (0, 0, 0)
    assert image.pixel(3 * image.width // 4, 3 * image.height // 4) == (255, 255, 255)
