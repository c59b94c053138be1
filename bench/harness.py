"""Shared set-up for the search benchmarks: a private Redis Stack server, Django settings, metrics."""

from __future__ import annotations

import math
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def start_services(prefix: str = "bench", *, data_dir: Path | None = None, extra_env: dict | None = None):
    """Start a throw-away Redis Stack server and configure Django to use it (plus `extra_env`).

    Returns the server; `stop_services` stops it and removes its data directory."""
    from scripts.redis_stack import RedisStackServer, free_port

    data_dir = data_dir or Path(tempfile.mkdtemp(prefix=f"currechat-{prefix}-"))
    server = RedisStackServer(port=free_port(), data_dir=data_dir, persistent=False)
    server.start()
    # A benchmark killed with SIGTERM still runs its `finally:` and stops its Redis server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.environ.update(
        {
            "REDIS_URL": server.url,
            "REDIS_INDEX_PREFIX": prefix,
            "SECRET_KEY": "bench-only",
            "DEBUG": "0",
            "ALLOW_PLAIN_HTTP": "1",  # plain http on loopback
            "CURRECHAT_VAR_DIR": str(data_dir / "var"),
            "LOG_LEVEL": "WARNING",
            "HF_HUB_OFFLINE": "1",
            **(extra_env or {}),
        }
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "currechat.settings")
    import django

    django.setup()
    return server


def stop_services(server) -> None:
    server.stop()
    shutil.rmtree(server.data_dir, ignore_errors=True)


def write_section(text: str, *, after: str | None = None) -> None:
    """Replace the section of docs/BENCHMARKS.md headed like `text` (its "## Name" before any
    parenthesis); a section not there yet goes after the section headed `after` (or at the end)."""
    import re

    path = ROOT / "docs" / "BENCHMARKS.md"
    content = path.read_text()
    heading = text.split("(")[0].strip()
    block = text.rstrip() + "\n\n"
    found = re.search(rf"^{re.escape(heading)}\b", content, re.MULTILINE)
    if found:
        start = found.start()
        end = content.find("\n## ", start + 1)
        end = len(content) if end == -1 else end + 1
    else:
        anchor = content.find(after) if after else -1
        start = end = len(content) if anchor == -1 else (content.find("\n## ", anchor + 1) + 1 or len(content))
    path.write_text(content[:start] + block + content[end:])


def dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def ndcg_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 15) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def mrr_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    for i, d in enumerate(ranked[:k]):
        if d in relevant:
            return 1.0 / (i + 1)
    return 0.0


def evaluate(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Mean nDCG@10, R@15, MRR@10 over the queries in `qrels` (a missing run scores 0)."""
    n = len(qrels)
    totals = {"nDCG@10": 0.0, "R@15": 0.0, "MRR@10": 0.0}
    for qid, relevant in qrels.items():
        ranked = runs.get(qid, [])
        totals["nDCG@10"] += ndcg_at(ranked, relevant)
        totals["R@15"] += recall_at(ranked, relevant)
        totals["MRR@10"] += mrr_at(ranked, relevant)
    return {name: value / n for name, value in totals.items()}


# Measuring and reporting, shared by the benchmarks -----------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (q in 1…99), interpolated between samples (statistics' "inclusive")."""
    import statistics

    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    return _stat_cpu(Path(f"/proc/{pid}/stat"))


def _stat_cpu(stat: Path) -> float:
    """User + system CPU time from a /proc `stat` file (a process's or one of its threads')."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_times(pid: int) -> dict[str, tuple[str, float]]:
    """User + system CPU time so far of each of a process's threads (by thread id), with its kind:
    "loop" for its main thread (a web process's event loop), otherwise the name the thread gives the
    OS (kernel/threads.py `name_os_thread`: "chat-turn", "stream-saves", ...; a thread that gives
    none shows the process's)."""
    times = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            seconds = _stat_cpu(task / "stat")
        except OSError:  # the thread ended meanwhile
            continue
        times[task.name] = ("loop" if task.name == str(pid) else name, seconds)
    return times


def cpu_by_thread(before: dict[str, tuple[str, float]], after: dict[str, tuple[str, float]]) -> dict[str, float]:
    """The CPU spent between two `thread_times`, by kind. A thread that started meanwhile counts in
    full; what a thread that ended meanwhile spent after `before` is not seen (threads that end
    when their work does: kernel/threads.py)."""
    kinds: dict[str, float] = {}
    for tid, (kind, seconds) in after.items():
        kinds[kind] = kinds.get(kind, 0.0) + seconds - before.get(tid, (kind, 0.0))[1]
    return kinds


def table(rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; the first row is its header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) for row in rows]
    lines.insert(1, "-|-".join("-" * width for width in widths))
    return "\n".join(f"| {line} |" for line in lines)


def wait_for(check, timeout: float, what: str):
    """Poll `check` until it returns something true, and return that; fail naming `what`."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
