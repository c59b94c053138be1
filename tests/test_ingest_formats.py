"""Slides, Word documents, lecture transcripts and pictures: each read into pages of Markdown that
keep their structure, found again with their slide, section or time. Files are made in the test
(python-pptx and python-docx write them) and taken from real ones (tests/data/formats/SOURCE.md)."""

from __future__ import annotations

import base64
import io
import zipfile
from pathlib import Path

import docx
import pptx
import pytest
from pptx.util import Inches

from collections_app.models import FileStatus, SourceFile
from tests.fake_ollama import Reply
from tests.fixtures_ingest import indexed, upload

REAL = Path(__file__).parent / "data" / "formats"
PICTURE = (REAL / "table-01.png").read_bytes()


def lecture_slides(pictures: bool = True) -> bytes:
    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Photosynthesis"
    body = first.placeholders[1].text_frame
    body.text = "Light reactions split water"
    deeper = body.add_paragraph()
    deeper.text = "they happen in the thylakoid membranes"
    deeper.level = 1
    first.notes_slide.notes_text_frame.text = "Ask who has seen a chloroplast under the microscope."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Limiting factors"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(1.5)).table
    for r, row in enumerate([("Factor", "Effect"), ("Light intensity", "raises the rate"), ("Cold", "slows enzymes")]):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    if pictures:
        picture = second.shapes.add_picture(io.BytesIO(PICTURE), Inches(1), Inches(4), Inches(3))
        picture._element.nvPicPr.cNvPr.set("descr", "graph of rate against light")
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def handout() -> bytes:
    document = docx.Document()
    document.add_heading("Cell biology", 0)
    document.add_heading("Organelles", 1)
    document.add_paragraph("Mitochondria release energy from glucose in cellular respiration.")
    document.add_paragraph("the nucleus holds the DNA", style="List Bullet")
    document.add_paragraph("ribosomes build proteins", style="List Bullet")
    document.add_heading("Sizes", 2)
    table = document.add_table(rows=2, cols=2)
    for c, text in enumerate(("Cell", "Diameter")):
        table.cell(0, c).text = text
    for c, text in enumerate(("Red blood cell", "8 micrometres")):
        table.cell(1, c).text = text
    document.add_paragraph("# not a heading, typed text")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def captions(count: int = 60) -> str:
    cues = ["WEBVTT", ""]
    for i in range(count):
        start = 14 * 60 + i * 10  # the lecture reaches this topic 14 minutes in
        cues += [
            f"00:{start // 60:02d}:{start % 60:02d}.000 --> 00:{(start + 9) // 60:02d}:{(start + 9) % 60:02d}.000",
            f"<v Lecturer>Sentence {i} about entropy and the second law of thermodynamics in closed systems.",
            "",
        ]
    return "\n".join(cues)


def test_slides_become_one_page_each_with_title_table_notes_and_described_pictures(
    fast_collection, ingest_upload, ollama
):
    seen: list[bytes] = []

    def vlm(body):
        seen.append(base64.b64decode(body["messages"][-1]["images"][0]))
        return Reply(content="[Figure: a line graph of the photosynthesis rate rising with light intensity]")

    ollama.responder = vlm
    source = ingest_upload(fast_collection, lecture_slides(), "week2.pptx")
    assert source.status == FileStatus.READY, source.error
    assert (source.file_type, source.pages) == ("pptx", 2)
    assert seen and all(png.startswith(b"\x89PNG") for png in seen), "the picture went to the model as PNG"
    [light] = indexed(fast_collection, "thylakoid membranes")
    assert (light["page_start"], light["heading_path"]) == (1, "Photosynthesis")
    assert "- Light reactions split water\n  - they happen in the thylakoid membranes" in source.markdown
    assert "> **Speaker notes:**\n> Ask who has seen a chloroplast" in source.markdown
    [table] = indexed(fast_collection, "slows enzymes")
    assert (table["page_start"], table["heading_path"]) == (2, "Limiting factors")
    assert "| Cold | slows enzymes |" in source.markdown
    [figure] = indexed(fast_collection, "photosynthesis rate rising")
    assert figure["page_start"] == 2


def test_slides_without_a_vision_model_keep_their_pictures_alt_text(fast_collection, ingest_upload, ollama):
    ollama.models = [m for m in ollama.models if not m.startswith("qwen3-vl")]
    source = ingest_upload(fast_collection, lecture_slides(), "week2.pptx")
    assert source.status == FileStatus.READY, source.error
    assert source.extractor == "pptx"
    assert "[Picture: graph of rate against light]" in source.markdown
    assert not ollama.chat_requests()


def test_word_handout_keeps_headings_lists_and_tables(fast_collection, ingest_upload):
    source = ingest_upload(fast_collection, handout(), "handout.docx")
    assert source.status == FileStatus.READY, source.error
    assert source.file_type == "docx"
    assert "- the nucleus holds the DNA\n- ribosomes build proteins" in source.markdown
    assert "| Red blood cell | 8 micrometres |" in source.markdown
    [hit] = indexed(fast_collection, "cellular respiration")
    assert hit["heading_path"] == "Cell biology > Organelles"
    [size] = indexed(fast_collection, "micrometres")
    assert size["heading_path"] == "Cell biology > Organelles > Sizes"
    assert "\\# not a heading" in source.markdown, "text typed in the document is not Markdown"


@pytest.mark.parametrize("kind", ["vtt", "srt"])
def test_transcript_passages_keep_their_start_time(kind, fast_collection, ingest_upload, settings):
    text = captions()
    if kind == "srt":  # the same cues as SubRip: numbered, comma before the milliseconds
        blocks = text.split("\n\n")[1:]
        text = "\n\n".join(f"{i + 1}\n{b.replace('.000', ',000')}" for i, b in enumerate(b for b in blocks if b))
    source = ingest_upload(fast_collection, text.encode(), f"lecture.{kind}")
    assert source.status == FileStatus.READY, source.error
    assert source.file_type == "transcript"
    assert source.chunk_count > 3, "an hour of captions is several passages, not one per caption"
    first = source_chunks(source)[0]
    assert first.heading_path == "14:00" and "Sentence 0 about entropy" in first.text
    assert all(len(c.text) <= settings.INGEST_CHUNK_SIZE for c in source_chunks(source))
    times = [c.heading_path for c in source_chunks(source)]
    assert times == sorted(times, key=lambda t: tuple(int(p) for p in t.split(":"))) and len(set(times)) == len(times)


def source_chunks(source):
    from collections_app.files import file_chunks

    return file_chunks(source)


def test_picture_is_read_by_the_vision_model(fast_collection, ingest_upload, ollama):
    ollama.responder = lambda body: Reply(content="| Factor | Effect |\n|---|---|\n| Light | raises the rate |")
    source = ingest_upload(fast_collection, PICTURE, "board.png")
    assert source.status == FileStatus.READY, source.error
    assert (source.file_type, source.pages) == ("image", 1)
    [hit] = indexed(fast_collection, "raises")
    assert hit["page_start"] == 1


def test_picture_without_a_vision_model_is_refused_with_a_reason(fast_collection, client_for, owner, ollama):
    ollama.models = [m for m in ollama.models if not m.startswith("qwen3-vl")]
    response = upload(client_for(owner), fast_collection, PICTURE, "board.png")
    assert response.status_code == 415
    assert "vision model" in response.json()["detail"]
    assert not SourceFile.objects.exists()


def _zip(parts: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for name, data in parts.items():
            package.writestr(name, data)
    return out.getvalue()


def macro_deck() -> bytes:
    data = lecture_slides(pictures=False)
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        parts = {name: package.read(name) for name in package.namelist()}
    parts["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(
        b"presentationml.presentation.main+xml", b"ms-powerpoint.presentation.macroEnabled.main+xml"
    )
    parts["ppt/vbaProject.bin"] = b'Sub AutoOpen()\nShell "calc.exe"\nEnd Sub'
    return _zip(parts)


# Named by their file (`ids`): a zip's bytes hold the second it was made, and xdist's workers must
# collect the same tests.
BAD_PACKAGES = [
    (_zip({"notes.txt": b"hello"}), "slides.pptx", 415, ["ZIP archive", ".pptx"]),
    (_zip({"mimetype": b"application/vnd.oasis.opendocument.text"}), "essay.odt", 415, ["OpenDocument", ".docx"]),
    (_zip({"xl/workbook.xml": b"<x/>"}), "grades.docx", 415, ["spreadsheet"]),
    (macro_deck(), "clever.pptm", 415, ["macros"]),
    (_zip({"ppt/presentation.xml": b"\x00" * 60_000_000}), "bomb.pptx", 413, ["expands"]),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 50, "photo.webp", 400, ["cannot be read as a picture"]),
]


@pytest.mark.parametrize(("content", "name", "status", "words"), BAD_PACKAGES, ids=[case[1] for case in BAD_PACKAGES])
def test_bad_office_files_and_pictures_are_refused_by_content(
    content, name, status, words, fast_collection, client_for, owner, settings
):
    settings.INGEST_MAX_STREAM_BYTES = 50_000_000
    response = upload(client_for(owner), fast_collection, content, name)
    assert response.status_code == status, response.json()
    for word in words:
        assert word in response.json()["detail"]
    assert not SourceFile.objects.exists()


def test_slides_named_as_text_are_read_as_slides(fast_collection, ingest_upload):
    source = ingest_upload(fast_collection, lecture_slides(pictures=False), "week2.txt")
    assert (source.status, source.file_type) == (FileStatus.READY, "pptx")


def test_too_many_slides_fail_with_the_limit(fast_collection, ingest_upload, settings):
    settings.UPLOAD_MAX_PDF_PAGES = 1
    source = ingest_upload(fast_collection, lecture_slides(pictures=False), "week2.pptx")
    assert source.status == FileStatus.FAILED
    assert "2 slides" in source.error and "limit is 1" in source.error


def test_embedded_object_is_never_opened(fast_collection, ingest_upload):
    deck = pptx.Presentation(io.BytesIO((REAL / "shp-access-ole-object.pptx").read_bytes()))
    slide = deck.slides.add_slide(deck.slide_layouts[0])
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(1))
    box.text_frame.text = "Only this text is course material."
    out = io.BytesIO()
    deck.save(out)
    source = ingest_upload(fast_collection, out.getvalue(), "embedded.pptx")
    assert source.status == FileStatus.READY, source.error
    assert indexed(fast_collection, "course material")
    # The embedded workbook's cells and name never reach the index.
    assert "xlsx" not in source.markdown.lower() and "sheet" not in source.markdown.lower()


@pytest.mark.parametrize(
    ("name", "phrase", "file_type"),
    [
        ("test.pptx", "Presentation Title Text", "pptx"),
        ("tbl-cell.pptx", "unladen swallows", "pptx"),
        ("test.docx", "python-docx was here too", "docx"),
        ("blk-paras-and-tables.docx", "Donec semper facilisis", "docx"),
        ("sample.vtt", "Caption text", "transcript"),
        ("sample.srt", "Caption text", "transcript"),
    ],
)
def test_real_world_files_are_read(name, phrase, file_type, fast_collection, ingest_upload):
    source = ingest_upload(fast_collection, (REAL / name).read_bytes(), name)
    assert source.status == FileStatus.READY, source.error
    assert source.file_type == file_type
    assert any(phrase in c.text for c in source_chunks(source))


def test_real_world_picture_is_read(fast_collection, ingest_upload, ollama):
    ollama.responder = lambda body: Reply(content="A table of sales figures by quarter and region.")
    source = ingest_upload(fast_collection, PICTURE, "table-01.png")
    assert (source.status, source.file_type) == (FileStatus.READY, "image")
    assert indexed(fast_collection, "sales figures")
