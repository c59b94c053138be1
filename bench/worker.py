"""Background worker overhead per file: rq's plain forking worker against CurreChat's.

    .venv/bin/python bench/worker.py [--files 12] [--rounds 2] [--no-write]

rq forks a new process for every job; whatever the job imports dies with it. CurreChat's worker
(currechat/worker.py) imports the embedding libraries once, before it forks. This runs the real
`manage.py rqworker --burst` (a subprocess, as `make run` starts it) over the same queued files
with each worker class in turn, alternating, on a private Redis Stack and SQLite database with the
default offline all-MiniLM-L6-v2 embedder. The files are small Markdown documents (SciFact
abstracts from ../shared/data), so the per-job overhead shows rather than the embedding work; the
embedding cache is emptied before every run so each run embeds the same passages.

Reported, and written to the "Background worker" section of docs/BENCHMARKS.md: seconds from the
worker's start until every file is ready, per file, for each class, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import start_services, stop_services, write_section  # noqa: E402
from bench.ingest import clear_embedding_cache, table  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
COMMAND = ".venv/bin/python bench/worker.py"
CLASSES = {"rq's Worker (a fresh import per job)": "rq.Worker", "CurreChat's PreloadingWorker": None}


def documents(count: int) -> list[tuple[str, str]]:
    docs = []
    with (DATA / "scifact" / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            if len(doc["text"]) > 800:
                docs.append((f"scifact-{doc['_id']}.md", f"# {doc['title']}\n\n{doc['text']}\n"))
            if len(docs) == count:
                return docs
    return docs


def run_worker(worker_class: str | None) -> float:
    """Start a burst worker; seconds until it has run every queued job and exited."""
    command = [sys.executable, "manage.py", "rqworker", "--burst", "--job-class", "django_tasks_rq.Job"]
    if worker_class:
        command += ["--worker-class", worker_class]
    started = time.perf_counter()
    subprocess.run([*command, "default", "ingest"], cwd=ROOT, env=os.environ, check=True, capture_output=True)
    return time.perf_counter() - started


def one_run(collection, worker_class: str | None) -> float:
    from collections_app import files
    from collections_app.models import FileStatus

    clear_embedding_cache()
    sources = list(collection.files.all())
    for source in sources:
        files.requeue(source, re_extract=True)
    seconds = run_worker(worker_class)
    statuses = set(collection.files.values_list("status", flat=True))
    assert statuses == {FileStatus.READY}, f"not every file was ingested: {statuses}"
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=12, help="small Markdown files queued per run")
    parser.add_argument("--rounds", type=int, default=2, help="runs per worker class (alternating)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/BENCHMARKS.md alone")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="currechat-bench-worker-"))
    server = start_services(
        "benchworker",
        data_dir=tmp,
        extra_env={
            "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
            "MEDIA_ROOT": str(tmp / "media"),
            "EMBEDDING_MODEL": "local:all-MiniLM-L6-v2",
        },
    )
    times: dict[str, list[float]] = {label: [] for label in CLASSES}
    try:
        from django.core.files.base import ContentFile
        from django.core.management import call_command

        from accounts.models import User
        from collections_app import files
        from collections_app.models import Collection

        call_command("migrate", verbosity=0)
        user = User.objects.create_user("bench", password="bench-only", role="teacher")
        collection = Collection.objects.create(
            name="Abstracts", language="english", owner=user, embedding_model="local:all-MiniLM-L6-v2"
        )
        for name, text in documents(args.files):
            files.add_file(collection, ContentFile(text.encode(), name=name), user, "fast")
        run_worker(None)  # first run: page cache and database warm for both classes alike
        for _ in range(args.rounds):
            for label, worker_class in CLASSES.items():
                times[label].append(one_run(collection, worker_class))
                print(f"  {label}: {times[label][-1]:.1f} s", file=sys.stderr)
    finally:
        stop_services(server)
    rows = [("worker class", f"{args.files} files, median of {args.rounds} (s)", "per file (s)")]
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, median in medians.items():
        rows.append((label, f"{median:.1f}", f"{median / args.files:.2f}"))
    plain, ours = medians.values()
    rows.append(("ratio, rq's / CurreChat's", f"{plain / ours:.2f}x", ""))
    text = table(rows)
    print(text)
    if not args.no_write:
        stamp = time.strftime("%Y-%m-%d", time.gmtime())
        write_section(
            "## Background worker (`bench/worker.py`)\n\n"
            f"`{COMMAND} --files {args.files} --rounds {args.rounds}` ({stamp}). The real `manage.py rqworker "
            "--burst` over the same queued small Markdown files (SciFact abstracts, one or two passages each), "
            "each worker class in turn, alternating, embedding cache emptied before every run; times include "
            "the worker's own start. rq forks a process per job; CurreChat's worker imports torch and "
            "sentence-transformers once before it forks instead of once per file.\n\n" + text,
            after="## Ingestion",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
