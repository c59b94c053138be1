"""Our recursive splitter (rag/ingest/splitter.py) against langchain-text-splitters', which it replaced.

    pip install --no-deps --target /tmp/lc langchain-text-splitters==1.1.3 langchain-core==1.7.2 \
        langsmith==0.15.1 langchain-protocol==0.0.20
    PYTHONPATH=/tmp/lc .venv/bin/python bench/splitter.py

With semantic-text-splitter beside it (`pip install --target /tmp/sts semantic-text-splitter==0.33.1`,
PYTHONPATH=/tmp/lc:/tmp/sts), its passages are compared with ours too.

(langchain in a folder of its own: in the venv, langsmith's pytest plugin loads in every test run.)
Two comparisons:
- the passages `chunk_pages` makes of every Markdown and text file of ../shared/data (pages of 12
  paragraphs), at three settings: the configured size and overlap, 300/60, and 1000/150 with a
  `fits` test that splits again (byte length < 700) — once with our splitter, once with langchain's
  in its place; text, pages and heading path compared;
- `split` against `RecursiveCharacterTextSplitter(...).create_documents` (pieces and start offsets)
  on random texts made of separators, words, accents and ligatures, at random sizes.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


def langchain_split(text: str, size: int, overlap: int, separators) -> list[tuple[int, str]]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=overlap, separators=list(separators), keep_separator="end", add_start_index=True
    )
    return [(doc.metadata["start_index"], doc.page_content) for doc in splitter.create_documents([text])]


def semantic_split(text: str, size: int, overlap: int, separators) -> list[tuple[int, str]]:
    """semantic-text-splitter (Rust) at the same size and overlap; it has its own levels, not our
    separators."""
    from semantic_text_splitter import TextSplitter

    return list(TextSplitter(size, overlap=overlap).chunk_indices(text))


def passages(split) -> tuple[list, float]:
    from django.conf import settings

    from rag.ingest import chunking
    from rag.ingest.job import PageText
    from rag.text import normalize_text

    chunking.splitter.split, kept = split, chunking.splitter.split
    runs, cpu = [], 0.0
    try:
        for path in sorted(p for p in DATA.rglob("*") if p.suffix in (".md", ".txt")):
            paragraphs = normalize_text(path.read_text(errors="replace")).split("\n\n")
            pages = [
                PageText(n + 1, "\n\n".join(paragraphs[i : i + 12]))
                for n, i in enumerate(range(0, len(paragraphs), 12))
            ]
            for size, overlap, fits in (
                (settings.INGEST_CHUNK_SIZE, settings.INGEST_CHUNK_OVERLAP, None),
                (300, 60, None),
                (1000, 150, lambda text: len(text.encode()) < 700),
            ):
                started = time.process_time()
                chunks = chunking.chunk_pages(pages, chunk_size=size, overlap=overlap, fits=fits)
                cpu += time.process_time() - started
                runs.append([(c.text, c.page_start, c.page_end, c.heading_path) for c in chunks])
    finally:
        chunking.splitter.split = kept
    return runs, cpu


def random_texts(n: int) -> int:
    from rag.ingest.chunking import SEPARATORS
    from rag.ingest.splitter import split

    rng = random.Random(45)
    words = ["a", "bb", "ccc ", " ", "\n", "\n\n", ". ", "? ", "! ", "; ", ", ", "é", "ﬁ", "xyzxyzxyz", "  ", "\t", "Ω"]
    different = 0
    for _ in range(n):
        text = "".join(rng.choice(words) for _ in range(rng.randint(0, 400)))
        size = rng.randint(1, 120)
        overlap = rng.randint(0, size // 2)
        different += split(text, size, overlap, SEPARATORS) != langchain_split(text, size, overlap, SEPARATORS)
    return different


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "currechat.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    from rag.ingest.splitter import split

    ours, our_cpu = passages(split)
    theirs, their_cpu = passages(langchain_split)
    same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    print("| compared | runs | passages | identical runs | chunking CPU, ours / langchain |\n|---|---|---|---|---|")
    print(f"| shared data | {len(ours)} | {sum(map(len, ours))} | {same} | {our_cpu:.1f} s / {their_cpu:.1f} s |")
    print(f"| random texts | 20000 | | {20000 - random_texts(20000)} | |")
    try:
        import semantic_text_splitter  # noqa: F401
    except ImportError:
        return 0 if same == len(ours) else 1
    semantic, semantic_cpu = passages(semantic_split)
    alike = sum(a == b for a, b in zip(ours, semantic, strict=True))
    print(
        f"| shared data, semantic-text-splitter | {len(semantic)} | {sum(map(len, semantic))} | {alike} "
        f"| {our_cpu:.1f} s / {semantic_cpu:.1f} s (semantic) |"
    )
    return 0 if same == len(ours) else 1


if __name__ == "__main__":
    sys.exit(main())
