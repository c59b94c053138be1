"""Extracted Markdown as safe HTML for the file page: tables, code, and LaTeX math as MathML.

The Markdown comes from uploaded files and from a model reading page images: it is untrusted, so
the HTML is sanitised with nh3 after rendering. Math is lifted out before rendering (Markdown would
turn `a_i b_i` into emphasis), converted to MathML (browsers render it natively), sanitised on its
own allowlist and put back; what does not convert is shown as its LaTeX source.
"""

from __future__ import annotations

import html
import logging
import re

import markdown
import nh3
from latex2mathml.converter import convert as latex_to_mathml

log = logging.getLogger(__name__)

_MATH = re.compile(r"\$\$(?P<display>.+?)\$\$|(?<![\\$\w])\$(?P<inline>[^\s$](?:[^$\n]*?[^\s$])?)\$(?!\d)", re.DOTALL)
_HTML_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code",
    "em", "strong", "del", "sup", "sub", "table", "thead", "tbody", "tr", "th", "td", "span", "dl", "dt", "dd",
}  # fmt: skip
_MATHML_TAGS = {
    "math", "semantics", "annotation", "mrow", "mi", "mo", "mn", "ms", "mtext", "mspace", "mfrac", "msqrt",
    "mroot", "msup", "msub", "msubsup", "munder", "mover", "munderover", "mtable", "mtr", "mtd", "mstyle",
    "mpadded", "mphantom", "menclose",
}  # fmt: skip
_MATHML_ATTRIBUTES = {
    "math": {"display", "xmlns"},
    "mo": {"stretchy", "fence", "separator", "lspace", "rspace"},
    "mstyle": {"displaystyle", "scriptlevel"},
    "mtable": {"columnalign", "rowspacing", "columnspacing"},
    "mspace": {"width"},
    "menclose": {"notation"},
}


def _math_html(tex: str, display: bool) -> str:
    try:
        mathml = latex_to_mathml(tex, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 — any parser failure: show the source rather than lose it
        log.debug("LaTeX not converted: %r", tex)
        return f'<code class="math-src">{html.escape(tex)}</code>'
    return nh3.clean(mathml, tags=_MATHML_TAGS, attributes=_MATHML_ATTRIBUTES)


def render_markdown(text: str) -> str:
    formulas: list[tuple[str, bool]] = []

    def lift(match: re.Match) -> str:
        display = match.group("display") is not None
        formulas.append((match.group("display") if display else match.group("inline"), display))
        return f"MATHPLACEHOLDER{len(formulas) - 1}X"

    body = markdown.markdown(_MATH.sub(lift, text), extensions=["tables", "fenced_code", "sane_lists"])
    safe = nh3.clean(
        body, tags=_HTML_TAGS, attributes={"th": {"align"}, "td": {"align"}, "span": {"class"}, "code": {"class"}}
    )
    return re.sub(r"MATHPLACEHOLDER(\d+)X", lambda m: _math_html(*formulas[int(m.group(1))]), safe)
