"""Markdown as safe HTML (answers and extracted files): tables, code, LaTeX math as MathML, citations.

Model output is untrusted (it may echo retrieved text or a student's injection attempt), so the
HTML is built server side and passed through nh3 with an allowlist as the very last step; the
page inserts nothing else as HTML. Math is converted to MathML, which browsers render natively.
"""

from __future__ import annotations

import html
import logging
import re
import threading
from collections.abc import Callable

import markdown
import nh3
from django.utils.translation import gettext
from latex2mathml.converter import convert as latex_to_mathml

log = logging.getLogger(__name__)

_MATHML_TAGS = {
    "math", "semantics", "annotation", "mrow", "mi", "mo", "mn", "ms", "mtext", "mspace", "mfrac",
    "msqrt", "mroot", "msup", "msub", "msubsup", "munder", "mover", "munderover", "mtable", "mtr",
    "mtd", "mstyle", "mpadded", "mphantom", "menclose", "merror",
}  # fmt: skip
_HTML_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "b", "i", "del", "sup", "sub",
    "blockquote", "ul", "ol", "li", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "a",
    "span", "div",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "class", "data-n", "title"},
    "span": {"class", "title"},
    "div": {"class"},
    "code": {"class"},
    "th": {"align", "style"},
    "td": {"align", "style"},
    "math": {"display", "xmlns"},
    "mo": {"stretchy", "fence", "separator", "lspace", "rspace"},
    "mstyle": {"displaystyle", "scriptlevel"},
    "mtable": {"columnalign", "rowspacing", "columnspacing"},
    "mspace": {"width"},
    "mpadded": {"width", "lspace"},
    "menclose": {"notation"},
}

# Fenced and inline code: neither math nor citations are looked for inside it.
CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
_MATH = re.compile(
    r"\$\$(?P<d1>.+?)\$\$|\\\[(?P<d2>.+?)\\\]|\\\((?P<i1>.+?)\\\)|(?<![\\$\w])\$(?P<i2>[^\s$](?:[^$\n]*?[^\s$])?)\$(?!\d)",
    re.DOTALL,
)
# A citation marker as the model writes it: [1], [2, 3] or [2; 3]. Group 1 holds the numbers.
CITATION = re.compile(r"\[(\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\]")
_CITATION_WITH_SPACE = re.compile(r"\s?" + CITATION.pattern)


def strip_citations(text: str) -> str:
    """`text` without its citation markers (and the space before each)."""
    return _CITATION_WITH_SPACE.sub("", text)


def _math_html(tex: str, display: bool) -> str:
    try:
        return latex_to_mathml(tex, display="block" if display else "inline")
    except Exception:  # noqa: BLE001  (any parser failure: show the source instead of losing it)
        log.debug("LaTeX not converted: %r", tex)
        return f'<code class="math-src">{html.escape(tex)}</code>'


def _protect(text: str) -> tuple[str, dict[str, str]]:
    """Take code and math out of the Markdown so neither is mangled by it."""
    saved: dict[str, str] = {}

    def keep(value: str) -> str:
        key = f"XPROTECTEDX{len(saved)}X"
        saved[key] = value
        return key

    chunks = []
    last = 0
    for code in CODE.finditer(text):
        chunks.append(_MATH.sub(lambda m: keep(_math_for(m)), text[last : code.start()]))
        chunks.append(keep(code.group(0)))
        last = code.end()
    chunks.append(_MATH.sub(lambda m: keep(_math_for(m)), text[last:]))
    return "".join(chunks), saved


def _math_for(match: re.Match) -> str:
    display = match.group("d1") or match.group("d2")
    if display is not None:
        return "\n\n" + _math_html(display.strip(), True) + "\n\n"
    return _math_html((match.group("i1") or match.group("i2")).strip(), False)


def _restore(text: str, saved: dict[str, str]) -> str:
    # Code is restored before Markdown runs (it renders code itself); math after, as HTML.
    for key, value in saved.items():
        if value.startswith("`"):
            text = text.replace(key, value)
    return text


# One Markdown converter per thread, reset for each text: building one (its extensions, patterns
# and processors) cost more CPU than converting a short answer, once per answer (issue 44).
_converters = threading.local()


def _converter() -> markdown.Markdown:
    converter = getattr(_converters, "markdown", None)
    if converter is None:
        converter = _converters.markdown = markdown.Markdown(extensions=["tables", "fenced_code", "sane_lists"])
    return converter.reset()


def render_markdown(text: str, cite: Callable[[int], str | None] | None = None) -> str:
    """Sanitised HTML for an answer. `cite(n)` gives the link for a passage number, or None."""
    protected, saved = _protect(text)
    body = _converter().convert(_restore(protected, saved))
    for key, value in saved.items():
        if not value.startswith("`"):
            body = body.replace(f"<p>{key}</p>", value).replace(key, value)
    if cite is not None:
        body = _link_citations(body, cite)
    return _scrollable(
        nh3.clean(
            body,
            tags=_HTML_TAGS | _MATHML_TAGS,
            attributes=_ATTRIBUTES,
            url_schemes={"http", "https", "mailto"},
            link_rel="noopener noreferrer nofollow",
            # Tables align their cells with `style`; any other property would let a file, or an
            # answer steered by one, lay an overlay over the page or load outside images.
            filter_style_properties={"text-align"},
        )
    )


# Wide blocks scroll inside their own box, never the page; a box that scrolls must be reachable by
# keyboard (tabindex), so it is added here, around markup already sanitised, and nowhere else.
_WIDE = re.compile(r'<table>.*?</table>|<pre>.*?</pre>|<math[^>]*display="block"[^>]*>.*?</math>', re.DOTALL)


def _scrollable(body: str) -> str:
    def wrap(match: re.Match) -> str:
        tag = "span" if match.group(0).startswith("<math") else "div"  # display math may sit in a <p>
        return f'<{tag} class="scroll" tabindex="0">{match.group(0)}</{tag}>'

    return _WIDE.sub(wrap, body)


def _link_citations(body: str, cite: Callable[[int], str | None]) -> str:
    """Turn [n] into links outside code; numbers that match no passage stay plain, marked as such."""

    def one(n: int) -> str:
        href = cite(n)
        if href is None:
            missing = html.escape(gettext("No passage has this number"))
            return f'<span class="cite-missing" title="{missing}">[{n}]</span>'
        return f'<a class="cite" href="{href}" data-n="{n}">[{n}]</a>'

    def replace(match: re.Match) -> str:
        return "".join(one(int(n)) for n in re.split(r"\s*[,;]\s*", match.group(1)))

    parts = re.split(r"(<pre>.*?</pre>|<code>.*?</code>|<[^>]+>)", body, flags=re.DOTALL)
    return "".join(part if part.startswith("<") else CITATION.sub(replace, part) for part in parts)
