"""Lecture transcripts (WebVTT and SubRip captions) to Markdown passages that keep their times.

Captions are a few words each; they are grouped into passages of about the usual chunk size, and
each passage starts with its start time as a heading ("## 12:34"), so the chunker keeps it as one
passage whose section is the time a citation shows.
"""

from __future__ import annotations

import io
import re

import webvtt
from django.utils.translation import gettext as _
from webvtt.errors import MalformedFileError

from rag import config
from rag.ingest.job import IngestFailed

_SRT_START = re.compile(r"\A\s*\d+\s*\r?\n\s*\d{1,2}:\d{2}:\d{2}[,.]\d{1,3}\s*-->", re.MULTILINE)
_TIME_HEADING = re.compile(r"^#{1,6} (\d+:\d{2}(?::\d{2})?)$")


def transcript_format(text: str) -> str | None:
    """ "vtt" or "srt" when the text is a caption file (by its content), else None."""
    head = text.lstrip("\ufeff")[:4096]
    if head.startswith("WEBVTT"):
        return "vtt"
    if _SRT_START.match(head):
        return "srt"
    return None


def clock(seconds: float) -> str:
    """A time as a lecture player shows it: 12:34, or 1:02:03 past the hour."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def seconds_of(time: str) -> int:
    """Inverse of `clock` (to the second)."""
    total = 0
    for part in time.split(":"):
        total = total * 60 + int(part)
    return total


def is_time_heading(section: str) -> bool:
    return bool(re.fullmatch(r"\d+:\d{2}(?::\d{2})?", section))


def transcript_markdown(text: str, name: str, target: int | None = None) -> str:
    """Passages of about `target` characters (default: 80% of the chunk size, so a passage and its
    heading stay one chunk), each under its start time as a heading."""
    kind = transcript_format(text)
    try:
        captions = webvtt.from_buffer(io.StringIO(text.lstrip("\ufeff")), format=kind or "vtt").captions
    except (MalformedFileError, ValueError, IndexError) as exc:
        raise IngestFailed(
            _(
                "“%(name)s” looks like a caption file but its cues cannot be read (a time or a blank line between "
                "cues may be missing). Open it in a subtitle editor, save it again as .vtt or .srt and upload that."
            )
            % {"name": name}
        ) from exc
    target = target or int(config.ingestion().chunk_size * 0.8)
    passages: list[tuple[float, list[str]]] = []
    size = target
    for caption in captions:
        words = " ".join(caption.text.split())
        if not words:
            continue
        # A caption that repeats the end of the previous one (roll-up captions) adds nothing.
        if passages and passages[-1][1] and passages[-1][1][-1] == words:
            continue
        if size >= target:
            passages.append((caption.start_in_seconds, []))
            size = 0
        passages[-1][1].append(re.sub(r"^([#>]|[-*+]\s|\d+[.)]\s)", r"\\\1", words))
        size += len(words) + 1
    return "\n\n".join(f"## {clock(start)}\n\n{' '.join(lines)}" for start, lines in passages if lines)
