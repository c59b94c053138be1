"""The answer when no language model is connected: the curated passages, quoted and cited.

It says so at the top, so nobody mistakes quoted passages for a written answer.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from chat.turn.grounding import passage_heading
from chat.turn.tools import ToolOutcome

LABEL = gettext_lazy("**Answer without a language model.**")
# Quoting every passage of a search (up to 15) buries the best ones: quote the top few, list the rest.
QUOTED_PASSAGES = 3


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.strip().splitlines())


def extractive_answer(outcome: ToolOutcome | None, *, offered: bool) -> str:
    if not offered:
        reason = _(
            "No language model is connected right now, and this assistant has no course material to quote from. "
            "Try again later, or ask your teacher."
        )
        return f"{LABEL} {reason}"
    if outcome is None or outcome.status == "error":
        detail = outcome.error if outcome else ""
        reason = _("No language model is connected right now, and searching the course material failed.")
        return f"{LABEL} {reason} {detail}"
    if outcome.status == "nothing_relevant" or not outcome.passages:
        reason = _(
            "No language model is connected right now, and the course material has no passage that matches your "
            "question. Try other words, or ask your teacher."
        )
        return f"{LABEL} {reason}"
    reason = _(
        "No language model is connected right now, so this answer quotes the passages of the course material "
        "that best match your question. Read them to find your answer:"
    )
    parts = [f"{LABEL} {reason}"]
    for p in outcome.passages[:QUOTED_PASSAGES]:
        heading = passage_heading(p["n"], p["file_name"], p["page"], p["page_end"], p["section"])
        parts.append(f"**{heading}**\n\n{_quote(p['text'])}")
    more = len(outcome.passages) - QUOTED_PASSAGES
    if more > 0:
        parts.append(
            ngettext(
                "The search found %(more)s more passage; open it in its results above.",
                "The search found %(more)s more passages; open them in its results above.",
                more,
            )
            % {"more": more}
        )
    return "\n\n".join(parts)
