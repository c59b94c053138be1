"""HTML to Markdown: keep headings, lists, tables, code and links' text; drop scripts and chrome."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from bs4 import BeautifulSoup
from bs4.builder import HTMLTreeBuilder
from django.utils.translation import gettext_lazy
from markdownify import MarkdownConverter

from rag.ingest.job import IngestFailed

NESTED_TOO_DEEP = gettext_lazy(
    "This HTML file nests its elements too deeply to be read (thousands of levels, which no page "
    "needs). Open it in a browser and save or print it as PDF, or upload its text, then try again."
)

# Deepest nesting of elements read. The conversion walks the tree recursively and fails at about
# 330 levels; real pages stay far below (tens). Checked before the tree is built: a tree of a
# million nested elements took about 600 MiB before the walk failed on it.
MAX_DEPTH = 256
# Elements that never hold others: the html.parser builder's own list, so the count matches its tree.
_VOID = frozenset(HTMLTreeBuilder.DEFAULT_EMPTY_ELEMENT_TAGS or ())

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
    if nesting_depth(html, stop_above=MAX_DEPTH) > MAX_DEPTH:
        raise IngestFailed(str(NESTED_TOO_DEEP))
    try:
        return _convert(html)
    except RecursionError as exc:  # a deep tree the count did not foresee; never an internal error
        raise IngestFailed(str(NESTED_TOO_DEEP)) from exc


class _DepthCounter(HTMLParser):
    """How deep elements nest, read the way BeautifulSoup's html.parser builder builds its tree (the
    same tokenizer; void elements open nothing; an end tag closes up to its most recent open tag,
    a stray one nothing), keeping only the names of the open elements."""

    def __init__(self, stop_above: int):
        super().__init__(convert_charrefs=False)
        self.stop_above = stop_above
        self.open: list[str] = []
        self.deepest = 0

    def handle_starttag(self, tag, attrs):
        if tag not in _VOID:
            self.open.append(tag)
            self.deepest = max(self.deepest, len(self.open))
            if self.deepest > self.stop_above:
                raise _TooDeep

    def handle_startendtag(self, tag, attrs):
        pass  # opened and closed at once: deeper by one for no time

    def handle_endtag(self, tag):
        if tag in self.open:
            while self.open.pop() != tag:
                pass


class _TooDeep(Exception):
    pass


def nesting_depth(html: str, *, stop_above: int | None = None) -> int:
    """The deepest nesting of elements in `html`; reading stops as soon as it passes `stop_above`
    (the answer is then stop_above + 1), so a refused file costs no more than its first levels."""
    counter = _DepthCounter(stop_above if stop_above is not None else len(html))
    try:
        counter.feed(html)
        counter.close()
    except _TooDeep:
        pass
    return counter.deepest


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
