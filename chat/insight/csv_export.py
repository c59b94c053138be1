"""Teacher insight as files and links: CSV exports of statistics, gaps and feedback, and the
"Try a search" link of a gap.

Cells a student wrote are defused for spreadsheets: a cell starting with `=`, `+`, `-`, `@` (or a
tab or carriage return) is a formula to Excel and LibreOffice, so it gets a leading apostrophe.

Dates, moments and numbers stay machine-readable here, in every interface language: ISO 8601
("2025-03-05", "2025-03-05T14:30:00+02:00") and plain digits with a decimal point. A CSV file is read
by programs and spreadsheets, which parse those the same way whatever their own locale; the pages'
"5.3.2025" or "1 350" would be text to them, and "1,350" or a decimal comma would clash with the
comma between columns. A spreadsheet then shows them in its own user's format. The column names stay
English for the same reason: programs look columns up by name.
"""

from __future__ import annotations

import csv
import io
from urllib.parse import urlencode

from chat.insight import feedback
from chat.insight import stats as insight
from chat.models import Prompt

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def search_url(page: str | None, query: str) -> str | None:
    return f"{page}?{urlencode({'q': query})}" if page else None


def _cell(value) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _table(header: list[str], rows) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def export(prompt: Prompt, what: str, days: int = 30) -> str:
    """`what` is "stats" (one row per day), "gaps" or "feedback"."""
    if what == "gaps":
        return _table(
            ["query", "count", "first_asked", "last_asked", "handled", "example_question"],
            (
                [g.query, g.count, g.first_asked.isoformat(), g.last_asked.isoformat(), g.handled, g.example]
                for g in insight.gaps(prompt)
            ),
        )
    if what == "feedback":
        return _table(
            ["rating", "updated", "student", "comment", "question", "answer"],
            (
                [f.rating, f.updated.isoformat(), f.student, f.comment, f.question, f.answer]
                for f in feedback.feedback_rows(prompt, limit=10_000)
            ),
        )
    stats = insight.statistics(prompt, days)
    return _table(
        ["date", "messages", "tokens", "searches"],
        ([d.date.isoformat(), d.messages, d.tokens, d.searches] for d in stats.by_day),
    )
