"""Office documents to Markdown: PowerPoint presentations (one page per slide) and Word documents.

python-pptx and python-docx read the documents' XML parts and nothing else: macros
(`vbaProject.bin`) and embedded objects (OLE packages) are never opened, let alone run. The ZIP
container is checked first (`office_kind`), so a "ZIP bomb" or a package of a hundred thousand
parts is refused before either library inflates anything.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Iterable

import docx
import pptx
from django.utils.translation import gettext as _
from docx.table import Table as DocxTable
from docx.text.paragraph import Paragraph as DocxParagraph
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

from kernel import formats
from rag import config
from rag.ingest.job import IngestCancelled, IngestFailed, PageText, TooLarge, UnsupportedContent

MAX_PARTS = 10_000  # a real presentation of 2,000 slides with pictures has about 8,000 parts
DescribeFn = Callable[[bytes, int], str]  # a picture's bytes and its slide number → Markdown


def _damaged(name: str) -> IngestFailed:
    return IngestFailed(
        _(
            "“%(name)s” looks like an Office document but cannot be read (it may be damaged). Open it in its "
            "program, save it again (or export it as PDF) and upload that."
        )
        % {"name": name}
    )


def office_kind(data: bytes, name: str) -> str:
    """ "pptx" or "docx" for a ZIP file that is one of them; otherwise refused with a sentence saying
    what the file is and what to upload instead."""
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
        parts = package.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise _damaged(name) from exc
    inflated = sum(part.file_size for part in parts)
    if len(parts) > MAX_PARTS or inflated > config.ingestion().max_stream_bytes:
        raise TooLarge(
            _(
                "“%(name)s” expands to more than the server accepts (%(size)s unpacked). Split it into smaller "
                "files, or save it with smaller pictures, and upload those."
            )
            % {"name": name, "size": formats.file_size(inflated)}
        )
    names = {part.filename for part in parts}
    content_types = _small_part(package, "[Content_Types].xml")
    if "macroEnabled" in content_types:
        raise UnsupportedContent(
            _(
                "“%(name)s” contains macros, which CurreChat does not accept. Save it as a PowerPoint presentation "
                "(.pptx) or Word document (.docx) without macros and upload that."
            )
            % {"name": name}
        )
    if "ppt/presentation.xml" in names:
        return "pptx"
    if "word/document.xml" in names:
        return "docx"
    if "mimetype" in names and _small_part(package, "mimetype").startswith("application/vnd.oasis.opendocument"):
        what = _("an OpenDocument file (.odt, .odp)")
    elif "xl/workbook.xml" in names:
        what = _("a spreadsheet")
    else:
        what = _("a ZIP archive")
    raise UnsupportedContent(
        _(
            "“%(name)s” is %(what)s, which CurreChat cannot read. Save it as a Word document (.docx), a PowerPoint "
            "presentation (.pptx) or PDF and upload that."
        )
        % {"name": name, "what": what}
    )


def _small_part(package: zipfile.ZipFile, part: str) -> str:
    try:
        with package.open(part) as stream:
            return stream.read(65536).decode("utf-8", "replace")
    except (KeyError, zipfile.BadZipFile, OSError):
        return ""


def _words(text: str) -> str:
    return " ".join(text.split())


def _plain(text: str) -> str:
    """Text typed on a slide or in a document is not Markdown: a leading "#", "-" or "1." stays text."""
    text = _words(text)
    text = re.sub(r"^(\d+)([.)]\s)", r"\1\\\2", text)
    return re.sub(r"^([#>]|[-*+]\s)", r"\\\1", text)


def _cell(text: str) -> str:
    return _plain(text).replace("|", "\\|")


def markdown_table(rows: list[list[str]]) -> str:
    """Rows of cell texts as a Markdown table, the first row as its header."""
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    rows = [[_cell(cell) for cell in row] + [""] * (width - len(row)) for row in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)


# PowerPoint ---------------------------------------------------------------------------------------

_LIST_PLACEHOLDERS = {PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT, PP_PLACEHOLDER.VERTICAL_BODY}
_TITLE_PLACEHOLDERS = {PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE}
_SKIPPED_PLACEHOLDERS = {PP_PLACEHOLDER.SLIDE_NUMBER, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.DATE}


def _placeholder_type(shape):
    return shape.placeholder_format.type if shape.is_placeholder else None


def _reading_order(shapes) -> list:
    # Top to bottom, then left to right: the order the XML keeps is the drawing (z) order.
    return sorted(shapes, key=lambda s: ((s.top or 0) // 50_000, s.left or 0))


def _alt_text(shape) -> str:
    # python-pptx exposes a shape's name but not its description (the alt text authors type).
    found = shape._element.xpath("./*[1]/p:cNvPr/@descr")
    return " ".join(str(found[0]).split()) if found else ""


def _shape_blocks(shape, slide_number: int, describe: DescribeFn | None) -> Iterable[str]:
    kind = _placeholder_type(shape)
    if kind in _TITLE_PLACEHOLDERS or kind in _SKIPPED_PLACEHOLDERS:
        return
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        for inner in _reading_order(shape.shapes):
            yield from _shape_blocks(inner, slide_number, describe)
        return
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
        if table := markdown_table(rows):
            yield table
        return
    if shape.shape_type == MSO_SHAPE_TYPE.PICTURE or hasattr(shape, "image"):
        yield from _picture(shape, slide_number, describe)
        return
    if shape.has_text_frame:
        yield from _text_frame(shape.text_frame, listed=kind in _LIST_PLACEHOLDERS)


def _picture(shape, slide_number: int, describe: DescribeFn | None) -> Iterable[str]:
    alt = _alt_text(shape)
    if describe is not None:
        try:
            blob = shape.image.blob
        except (AttributeError, ValueError, KeyError):  # a linked picture: its bytes are not in the file
            blob = b""
        if blob and (text := describe(blob, slide_number).strip()):
            yield text
            return
    if alt:
        label = _("Picture")  # not inside the f-string, where makemessages would not find it
        yield f"[{label}: {_plain(alt)}]"


def _text_frame(frame, *, listed: bool) -> Iterable[str]:
    lines: list[str] = []
    for paragraph in frame.paragraphs:
        text = _plain("".join(run.text for run in paragraph.runs) or paragraph.text)
        if not text:
            continue
        lines.append(("  " * paragraph.level + "- " + text) if listed else text)
    if lines:
        yield "\n".join(lines) if listed else "\n\n".join(lines)


def _notes(slide) -> str:
    if not slide.has_notes_slide:
        return ""
    text = slide.notes_slide.notes_text_frame.text if slide.notes_slide.notes_text_frame else ""
    lines = [_plain(line) for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    # Marked as notes (a quotation under a label), so neither the reader nor the model takes what
    # the teacher meant to say aloud for the slide's own text.
    label = _("Speaker notes")  # not inside the f-string, where makemessages would not find it
    return "\n".join([f"> **{label}:**", *(f"> {line}" for line in lines)])


def pptx_pages(
    data: bytes, describe: DescribeFn | None = None, cancelled: Callable[[], bool] = lambda: False
) -> list[PageText]:
    """One page of Markdown per slide: its title as a heading, its text, lists and tables in
    reading order, its pictures (described by `describe` when given, else their alt text) and its
    speaker notes. Hidden slides are read too: teachers hide slides they still mean to teach from."""
    try:
        slides = list(pptx.Presentation(io.BytesIO(data)).slides)
    except Exception as exc:  # noqa: BLE001 — python-pptx raises many kinds for a damaged package
        raise _damaged(_("the presentation")) from exc
    if len(slides) > config.ingestion().max_pdf_pages:
        raise TooLarge(
            _("This presentation has %(pages)s slides; the limit is %(limit)s. Split it and upload the parts.")
            % {"pages": formats.number(len(slides)), "limit": formats.number(config.ingestion().max_pdf_pages)}
        )
    pages = []
    for number, slide in enumerate(slides, start=1):
        if cancelled():
            raise IngestCancelled
        blocks = []
        title = slide.shapes.title
        if title is not None and title.has_text_frame and title.text_frame.text.strip():
            blocks.append("# " + _words(title.text_frame.text))
        for shape in _reading_order(slide.shapes):
            blocks.extend(_shape_blocks(shape, number, describe))
        if notes := _notes(slide):
            blocks.append(notes)
        pages.append(PageText(number, "\n\n".join(blocks)))
    return pages


# Word ---------------------------------------------------------------------------------------------

_HEADING_STYLE = re.compile(r"^(?:Heading|Otsikko|Rubrik)\s*(\d)$", re.IGNORECASE)


def _style(paragraph: DocxParagraph, names: dict[str, str]) -> str:
    # By the paragraph's style id: python-docx's `paragraph.style` searches every style each time.
    return names.get(paragraph._p.style or "", "")


def _heading_level(style: str, has_title: bool) -> int | None:
    """The Markdown level of a heading paragraph; in a document with a "Title", the title takes
    level 1 and every heading moves one down."""
    if style == "Title":
        return 1
    match = _HEADING_STYLE.match(style)
    if match:
        return min(int(match.group(1)) + int(has_title), 6)
    return None


def _list_marker(paragraph: DocxParagraph, style: str) -> str | None:
    # Numbering set directly on the paragraph (python-docx has no public reading of it).
    numbered = bool(paragraph._p.xpath("./w:pPr/w:numPr"))
    if not numbered and not style.startswith("List"):
        return None
    levels = paragraph._p.xpath("./w:pPr/w:numPr/w:ilvl/@w:val")
    level = int(levels[0]) if levels else 0
    return "  " * level + ("1. " if "Number" in style else "- ")


def _paragraph(paragraph: DocxParagraph, style: str, has_title: bool) -> str:
    if (level := _heading_level(style, has_title)) is not None:
        return "#" * level + " " + _words(paragraph.text) if paragraph.text.strip() else ""
    text = _plain(paragraph.text)
    if not text:
        return ""
    if (marker := _list_marker(paragraph, style)) is not None:
        return marker + text
    return text


def docx_markdown(data: bytes) -> str:
    """A Word document's body as Markdown: headings (by their styles), lists, tables and paragraphs
    in document order. Pictures, text boxes and embedded objects are left out."""
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 — python-docx raises many kinds for a damaged package
        raise _damaged(_("the document")) from exc
    names = {style.style_id: style.name or "" for style in document.styles}
    has_title = any(_style(p, names) == "Title" for p in document.paragraphs)
    blocks: list[str] = []
    previous_list = False
    for item in document.iter_inner_content():
        if isinstance(item, DocxTable):
            text = markdown_table([[cell.text for cell in row.cells] for row in item.rows])
            is_list = False
        else:
            style = _style(item, names)
            text = _paragraph(item, style, has_title)
            is_list = bool(text) and _list_marker(item, style) is not None and _heading_level(style, has_title) is None
        if not text:
            continue
        # Consecutive list items form one list (one line each); anything else is its own paragraph.
        if is_list and previous_list:
            blocks[-1] += "\n" + text
        else:
            blocks.append(text)
        previous_list = is_list
    return "\n\n".join(blocks)
