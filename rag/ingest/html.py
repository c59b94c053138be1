"""HTML to Markdown: keep headings, lists, tables, code and links' text; drop scripts and chrome."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from django.utils.translation import gettext_lazy
from markdownify import MarkdownConverter

from rag.ingest.job import IngestFailed

NESTED_TOO_DEEP = gettext_lazy(
    "This HTML file nests its elements too deeply to be read (thousands of levels, which no page "
    "needs). Open it in a browser and save or print it as PDF, or upload its text, then try again."
)

# Page chrome and active content carry no course material (and scripts must never reach the model).
_DROP = [
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "object",
    "embed",
    "svg",
    "canvas",
    "nav",
    "footer",
    "form",
]


class _Converter(MarkdownConverter):
    def convert_img(self, el, text, parent_tags):
        # Images become their alt text: the picture itself is not indexed.
        alt = (el.get("alt") or "").strip()
        return f"[image: {alt}]" if alt else ""

    def convert_a(self, el, text, parent_tags):
        return text  # link targets are noise for search; the words stay


def html_to_markdown(html: str) -> str:
    """The page's Markdown. Raises IngestFailed for markup nested too deeply to walk (a retry would
    fail the same way, so the teacher is told what to change)."""
    try:
        return _convert(html)
    except RecursionError as exc:
        raise IngestFailed(str(NESTED_TOO_DEEP)) from exc


def _convert(html: str) -> str:
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(_DROP):
        tag.decompose()
    body = soup.body or soup
    title = soup.title.get_text(strip=True) if soup.title else ""
    markdown = _Converter(heading_style="ATX", bullets="-", strip_document="strip").convert_soup(body)
    if title and not re.search(r"^#\s", markdown, re.MULTILINE):
        markdown = f"# {title}\n\n{markdown}"
    return markdown
