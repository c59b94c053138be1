"""A task that embeds a real file's passages in a real worker's job process and reports that
process's memory as it goes (tests/test_ingest_memory.py). It runs through the same queue and job
class as the app's tasks, so its process is forked from the worker as an ingestion job's is."""

from __future__ import annotations

from django_tasks import task


def _rss_mib() -> float:
    """This process's resident memory now (RSS, as the kernel counts it)."""
    import os

    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@task(queue_name="default")
def embed_pdf_passages(path: str, tag: str) -> dict:
    """Chunk the PDF at `path` as ingestion does and embed its passages with the local embedder
    through ingestion's embedding step (its batches, its cache: `tag` makes the texts new to it).
    Returns the RSS when the job began, after each batch, and its peak (MiB)."""
    import resource

    import pymupdf

    from rag.ingest import chunking
    from rag.ingest.embedding import embed_texts
    from rag.ingest.job import PageText
    from rag.ingest.steps import embedding_input
    from rag.providers import limits

    model = "local:all-MiniLM-L6-v2"
    start = _rss_mib()
    pages = [PageText(n, page.get_text()) for n, page in enumerate(pymupdf.open(path), start=1)]
    chunks = chunking.chunk_pages(pages, fits=limits.limit_for(model).fits)
    texts = [f"{tag} {embedding_input(chunk)}" for chunk in chunks]
    after: list[tuple[int, float]] = []
    vectors, cached = embed_texts(texts, model, progress=lambda done: after.append((done, _rss_mib())))
    return {
        "passages": len(vectors),
        "cached": cached,
        "start": start,
        "after": after,
        "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
