"""The original behind a passage: teachers download files and open any page; a student sees a PDF
page or a text passage in its section only once a search in their own chat returned it."""

from __future__ import annotations

import pymupdf
import pytest

from chat.models import ChatSession, Enrollment, EnrollmentStatus, Prompt
from tests.fake_ollama import Reply
from tests.fixtures_ingest import scanned

PNG = b"\x89PNG\r\n\x1a\n"


def two_page_pdf() -> bytes:
    """Pages long enough to be passages of their own."""
    doc = pymupdf.open()
    for sentence in ("Entropy measures uncertainty in a distribution. ", "Mutual information is shared. "):
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 540, 770), sentence * 40, fontsize=9)
    return doc.tobytes()


@pytest.fixture
def course(owner, fast_collection, student, ingest_upload):
    """A prompt over `fast_collection` with a two-page PDF and a Markdown file; `student` enrolled."""
    pdf = ingest_upload(fast_collection, two_page_pdf(), "information.pdf", "fast")
    notes = "# Coding\n\n## Huffman\n\nHuffman codes give shorter words to frequent symbols.\n"
    md = ingest_upload(fast_collection, notes.encode(), "coding.md")
    scanned(fast_collection)
    prompt = Prompt.objects.create(owner=owner, name="Information theory", curation_enabled=False)
    prompt.collections.add(fast_collection)
    Enrollment.objects.create(student=student, prompt=prompt)
    return prompt, pdf, md


def ask(client_for, student, prompt, ollama, query: str):
    session = ChatSession.objects.create(prompt=prompt, user=student)
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": query}}]), Reply(content="See [1].")
    )
    response = client_for(student).post(
        f"/api/v1/chats/{session.pk}/messages", {"content": query}, content_type="application/json"
    )
    assert response.status_code == 200
    return response.json()["tool_results"][0]["passages"]


def test_teachers_download_the_original_and_students_cannot(client_for, owner, co_owner, student, course):
    _, pdf, _ = course
    for teacher in (owner, co_owner):
        response = client_for(teacher).get(f"/collections/files/{pdf.pk}/download/")
        assert response.status_code == 200 and b"".join(response.streaming_content).startswith(b"%PDF")
        assert 'filename="information.pdf"' in response["Content-Disposition"]
    assert client_for(student).get(f"/collections/files/{pdf.pk}/download/").status_code in (403, 404)


def test_a_student_sees_a_pdf_page_only_after_a_search_returned_it(client_for, student, course, ollama, settings):
    # The search returns only the best passage, page 2's (no further hits without curation either)
    settings.CHAT_SEARCH_LIMIT = settings.CHAT_SEARCH_CANDIDATES = 1
    settings.CHAT_PASSAGE_TOKENS = 50  # and it does not grow into page 1's text (rag/context.py)
    prompt, pdf, _ = course
    page_url = f"/collections/files/{pdf.pk}/pages/2.png"
    assert client_for(student).get(page_url).status_code == 404, "not before any search returned it"
    passages = ask(client_for, student, prompt, ollama, "mutual information shared")
    assert [(p["file_id"], p["page"], p["page_end"]) for p in passages] == [(pdf.pk, 2, 2)]
    image = client_for(student).get(page_url)
    assert image.status_code == 200 and image["Content-Type"] == "image/png" and image.content.startswith(PNG)
    assert pymupdf.Pixmap(image.content).width > 500, "a readable page"
    page = client_for(student).get(f"/collections/files/{pdf.pk}/pages/2/").content.decode()
    assert "Page 2 of information.pdf" in page
    assert client_for(student).get(f"/collections/files/{pdf.pk}/pages/1.png").status_code == 404, "not returned"
    assert client_for(student).get(f"/collections/files/{pdf.pk}/pages/9.png").status_code == 404
    Enrollment.objects.filter(student=student).update(status=EnrollmentStatus.REMOVED)
    assert client_for(student).get(page_url).status_code == 404, "removed: the original is gone too"


def test_other_students_and_teachers_outside_the_course_see_nothing(
    client_for, student, other_student, other_teacher, course, ollama
):
    prompt, pdf, _ = course
    ask(client_for, student, prompt, ollama, "mutual information")
    for outsider in (other_student, other_teacher):
        assert client_for(outsider).get(f"/collections/files/{pdf.pk}/pages/2.png").status_code == 404


def test_a_text_passage_opens_in_its_section(client_for, owner, student, course, ollama):
    prompt, _, md = course
    passages = ask(client_for, student, prompt, ollama, "Huffman codes")
    cited = next(p for p in passages if p["file_id"] == md.pk)
    position = cited["chunk_id"].rsplit(":", 1)[-1]
    page = client_for(student).get(f"/collections/files/{md.pk}/passages/{position}/")
    body = page.content.decode()
    assert page.status_code == 200 and "Coding &gt; Huffman" in body and "shorter words to frequent symbols" in body
    assert 'class="context-passage cited"' in body
    assert client_for(student).get(f"/collections/files/{md.pk}/passages/99/").status_code == 404
    assert client_for(owner).get(f"/collections/files/{md.pk}/passages/{position}/").status_code == 200
