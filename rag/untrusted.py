"""Neutralising untrusted text (retrieved passages, file names, sections) before a model reads it.

TRUST BOUNDARY. Anyone who can upload a file writes text that reaches the chat model and the
curation model. Models read chat-template control tokens (`<|im_start|>`, `<|im_end|>`,
`<|endoftext|>`, `[INST]`, `<start_of_turn>`, `</think>`, ...) as turn and role boundaries when
they appear in the prompt text, and our fences (`<<<PASSAGES` / `PASSAGES>>>` around chat tool
results, `<passage>` / `</passage>` in curation) are only as strong as the text's inability to
write them. `neutralise` replaces every such marker, including look-alikes: full-width and other
compatibility forms (NFKC), angle-bracket and bar homoglyphs, and invisible characters inserted
inside a marker. Everything else is returned unchanged, character for character.
"""

from __future__ import annotations

import re
import unicodedata

REPLACEMENT = "[marker removed]"

# Characters that render like the ASCII punctuation markers are made of (beyond NFKC's own folding).
_LOOKALIKES = {
    **dict.fromkeys("‹〈⟨〈《≪❮❬❰⧼﹤＜ᐸ˂", "<"),
    **dict.fromkeys("›〉⟩〉》≫❯❭❱⧽﹥＞ᐳ˃", ">"),
    **dict.fromkeys("｜│┃∣ǀ׀।|︱︲", "|"),
    **dict.fromkeys("［〔【⟦", "["),
    **dict.fromkeys("］〕】⟧", "]"),
    **dict.fromkeys("／⁄∕⧸", "/"),
    **dict.fromkeys("＿‗", "_"),
}

_MARKERS = re.compile(
    r"""
      < \s* \| [^<>|\n]{0,40} \| \s* >          # <|im_start|>, <|endoftext|>, <|eot_id|>, <|start_header_id|>
    | < \s* /? \s* (?: think | thinking | reasoning | tool_call | tool_response | tools
                     | start_of_turn | end_of_turn | s | passage | passages | system | user | assistant
                   ) \b [^<>\n]{0,40} >
    | \[ \s* /? \s* (?: INST | SYS | AVAILABLE_TOOLS | TOOL_CALLS | TOOL_RESULTS ) \s* \]
    | < \s* < \s* /? \s* SYS \s* > \s* >
    | <{2,} \s* /? \s* PASSAGES | PASSAGES \s* >{2,}
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _fold(text: str) -> tuple[str, list[int]]:
    """A comparison form of `text` and, for each of its characters, the index in `text` it came from.

    Invisible format characters (zero-width spaces and joiners, soft hyphens, bidi controls) are
    left out so they cannot split a marker; NFKC and the look-alike table fold the rest."""
    folded: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if unicodedata.category(ch) == "Cf":
            continue
        for part in unicodedata.normalize("NFKC", ch):
            folded.append(_LOOKALIKES.get(part, part))
            origin.append(i)
    return "".join(folded), origin


def neutralise(text: str) -> str:
    """`text` with every control token and fence marker (or look-alike) replaced by REPLACEMENT."""
    folded, origin = _fold(text)
    spans = [(origin[m.start()], origin[m.end() - 1] + 1) for m in _MARKERS.finditer(folded)]
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        if start < last:  # overlapping after folding: already replaced
            continue
        out.append(text[last:start])
        out.append(REPLACEMENT)
        last = end
    out.append(text[last:])
    return "".join(out)
