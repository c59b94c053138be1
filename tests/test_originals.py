"""The original behind a passage: teachers download files and open any page; a student sees a PDF
page or a text passage in its section only once a search in their own chat returned it."""

from __future__ import annotations

import re

import pymupdf
import pytest

from chat.models import ChatSession, Enrollment, EnrollmentStatus, Prompt
from collections_app.files import file_chunks
from rag.locate import tokens
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
    assert "huffman codes give shorter words to frequent symbols" in body, "the whole passage is marked"
    assert client_for(student).get(f"/collections/files/{md.pk}/passages/99/").status_code == 404
    assert client_for(owner).get(f"/collections/files/{md.pk}/passages/{position}/").status_code == 200


def marks(body: str) -> list[tuple[float, float, float, float]]:
    return [
        tuple(map(float, m))
        for m in re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"', body)
    ]


def test_a_cited_pdf_passage_is_marked_where_it_is_on_its_page(client_for, student, owner, course, ollama, settings):
    settings.CHAT_SEARCH_LIMIT = settings.CHAT_SEARCH_CANDIDATES = 1
    settings.CHAT_PASSAGE_TOKENS = 50
    prompt, pdf, _ = course
    [cited] = ask(client_for, student, prompt, ollama, "mutual information shared")
    position = cited["chunk_id"].rsplit(":", 1)[-1]
    body = client_for(student).get(f"/collections/files/{pdf.pk}/pages/2/?passage={position}").content.decode()
    boxes = marks(body)
    assert boxes, "the passage's lines are marked on the page image"
    assert all(x >= 72 and 72 <= y <= 770 for x, y, _, _ in boxes), "inside the text box the passage was written in"
    assert 'data-testid="source-page-image"' in body
    # Previous/next only among the pages this student was shown: page 1 was never returned.
    assert 'rel="prev"' not in body and 'rel="next"' not in body
    teacher = client_for(owner).get(f"/collections/files/{pdf.pk}/pages/2/?passage={position}").content.decode()
    assert f'href="/collections/files/{pdf.pk}/pages/1/"' in teacher and 'rel="prev"' in teacher
    # A passage of another page marks nothing here (its words stay unseen).
    other = client_for(owner).get(f"/collections/files/{pdf.pk}/pages/1/?passage={position}").content.decode()
    assert not marks(other) and 'data-words=""' in other


def test_the_chat_pane_gets_the_original_without_the_site_around_it(client_for, student, course, ollama, settings):
    settings.CHAT_SEARCH_LIMIT = settings.CHAT_SEARCH_CANDIDATES = 1
    settings.CHAT_PASSAGE_TOKENS = 50
    prompt, pdf, _ = course
    [cited] = ask(client_for, student, prompt, ollama, "mutual information shared")
    position = cited["chunk_id"].rsplit(":", 1)[-1]
    pane = client_for(student).get(f"/collections/files/{pdf.pk}/pages/2/?passage={position}&pane=1").content.decode()
    assert pane.lstrip().startswith("<article") and "<html" not in pane and marks(pane)
    assert client_for(student).get(f"/collections/files/{pdf.pk}/pages/1/?pane=1").status_code == 404


FENCED = """# Loops

## While loops

A while loop repeats its body as long as its condition holds.

```python
# count down from three
n = 3
while n > 0:
    print("still counting down", n)
    n -= 1
# count down from three again, this time slower
n = 3
while n > 0:
    print("counting slowly", n)
    n -= 1
```

The loop above prints three lines and stops when n reaches zero, because the condition is false then.
Each pass through the body is called an iteration, and the variable n is the loop counter here.
"""


def test_a_section_starting_inside_a_code_fence_is_shown_whole_once_with_the_passage_marked(
    client_for, owner, fast_collection, ingest_upload, settings
):
    settings.INGEST_CHUNK_SIZE, settings.INGEST_CHUNK_OVERLAP = 160, 60
    source = ingest_upload(fast_collection, FENCED.encode(), "loops.md")
    chunks = file_chunks(source)
    # The chunker split the code: this passage starts inside the fence, with a code comment.
    inside = next(c for c in chunks if c.text.startswith("# count down from three again"))
    body = client_for(owner).get(f"/collections/files/{source.pk}/passages/{inside.position}/").content.decode()
    section = body.split('data-testid="source-context">', 1)[1]
    assert "<pre>" in section and "```" not in section, "the fence renders as code, not as text"
    assert "<h1>count down" not in section and "count down from three again" in section, "a comment is no heading"
    assert section.count("count down from three again") == 1, "neighbouring passages' overlap is not printed twice"
    words = re.search(r'data-words="([^"]*)"', body).group(1).split()
    assert words == tokens(inside.text), "the whole quoted passage is marked, not part of it"


def test_a_transcript_passage_shows_its_time(client_for, owner, fast_collection, ingest_upload):
    cues = "WEBVTT\n\n00:12:34.000 --> 00:12:40.000\nThe Carnot cycle bounds the efficiency of engines.\n"
    source = ingest_upload(fast_collection, cues.encode(), "lecture-7.vtt")
    [chunk] = file_chunks(source)
    body = client_for(owner).get(f"/collections/files/{source.pk}/passages/{chunk.position}/").content.decode()
    assert "At 12:34 in the recording" in body and "Carnot cycle" in body


def test_a_slide_and_a_picture_open_on_their_page(client_for, owner, fast_collection, ingest_upload, ollama):
    from tests.test_ingest_formats import PICTURE, lecture_slides

    deck = ingest_upload(fast_collection, lecture_slides(pictures=False), "week2.pptx")
    light = next(c for c in file_chunks(deck) if "thylakoid" in c.text)
    body = client_for(owner).get(f"/collections/files/{deck.pk}/pages/1/?passage={light.position}").content.decode()
    assert 'data-testid="page-text"' in body and "thylakoid" in re.search(r'data-words="([^"]*)"', body).group(1)
    assert 'rel="next"' in body and marks(body), "the slide rendered (LibreOffice), the passage marked on it"
    ollama.responder = lambda request: Reply(content="A table of light intensity against the rate.")
    picture = ingest_upload(fast_collection, PICTURE, "board.png")
    image = client_for(owner).get(f"/collections/files/{picture.pk}/pages/1.png")
    assert image.status_code == 200 and image.content.startswith(PNG)


QUOTED = """# Loops

## Exercises

Write a program that takes user inputs in a while loop until the user enters "begin".

> **Sequences**
>
> Write a program that reads two integer values, `n1` and `n2`, and performs these tasks:
>
> 1. Prints all even numbers between the two numbers, in ascending order.
> 2. Prints all odd numbers between the two numbers, in descending order.

```python
print("done")
```
"""


def test_a_quoted_passage_is_marked_with_the_words_its_page_shows(client_for, owner, fast_collection, ingest_upload):
    """The words to mark are those the rendered page shows, in its order: an ordered list's numbers in
    a block quote and a code fence's language are not text on the page, and with them the mark
    stopped before the quote."""
    from collections_app.originals import shown_words
    from rag.locate import plain_tokens

    source = ingest_upload(fast_collection, QUOTED.encode(), "exercises.md")
    chunk = next(c for c in file_chunks(source) if "Sequences" in c.text)
    body = client_for(owner).get(f"/collections/files/{source.pk}/passages/{chunk.position}/").content.decode()
    words = re.search(r'data-words="([^"]*)"', body).group(1).split()
    section = body.split('data-testid="source-context">', 1)[1].split("</div>\n", 1)[0]
    shown = plain_tokens(re.sub(r"<[^>]*>", " ", section))
    assert words[-4:] == ["numbers", "in", "descending", "order"] or words[-2:] == ["print", "done"]
    assert "python" not in words and "1" not in words and words == shown_words(chunk.text)
    starts = [i for i in range(len(shown)) if shown[i : i + len(words)] == words]
    assert starts, "the page shows the passage's words as one run, quote and list included"


def test_page_navigation_says_which_pages_a_student_cannot_open(client_for, owner, student, course, ollama, settings):
    settings.CHAT_SEARCH_LIMIT = settings.CHAT_SEARCH_CANDIDATES = 1
    settings.CHAT_PASSAGE_TOKENS = 50  # only page 2's passage is returned
    prompt, pdf, _ = course
    ask(client_for, student, prompt, ollama, "mutual information shared")
    page = client_for(student).get(f"/collections/files/{pdf.pk}/pages/2/").content.decode()
    assert 'data-testid="previous-page"' not in page
    assert "Page 1 is left out: no search in your chats found a passage on it." in page
    teachers = client_for(owner).get(f"/collections/files/{pdf.pk}/pages/2/").content.decode()
    assert 'data-testid="previous-page"' in teachers and "left out" not in teachers, "a teacher opens every page"


@pytest.mark.parametrize("view", ["page", "passage"])
def test_back_to_the_chat_goes_only_to_a_path_on_this_site(client_for, student, course, ollama, view):
    prompt, pdf, md = course
    passages = ask(client_for, student, prompt, ollama, "mutual information shared")
    chat = f"/prompts/{prompt.pk}/chat/{ChatSession.objects.get(user=student).pk}/"
    cited = next(p for p in passages if p["file_id"] == pdf.pk)
    url = f"/collections/files/{pdf.pk}/pages/{cited['page']}/"
    if view == "passage":
        url = f"/collections/files/{pdf.pk}/passages/{cited['chunk_id'].rsplit(':', 1)[-1]}/"
    page = client_for(student).get(url, {"from": chat}).content.decode()
    assert f'<a href="{chat}" data-testid="back-to-chat">← Back to the chat</a>' in page
    for outside in ("https://evil.example/", "//evil.example/chat/", "/\\evil.example", "javascript:alert(1)"):
        page = client_for(student).get(url, {"from": outside}).content.decode()
        assert 'data-testid="back-to-chat"' not in page and 'href="https://evil' not in page, outside
    pane = client_for(student).get(url, {"from": chat, "pane": "1"}).content.decode()
    assert 'data-testid="back-to-chat"' not in pane, "the chat's side pane is beside the chat already"
