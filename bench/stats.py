"""Teacher statistics and material gaps at course scale: the same SQL, about the same time.

    .venv/bin/python bench/stats.py --students 500 --small 10000 --large 100000 --repeat 30

One throw-away SQLite database (the `make run` default) and Redis Stack server. Two prompts with
`--students` students each get chats over the last 120 days: one with `--small` messages, one with
`--large`. Every answer is counted by the real `chat.insight.stats.record_answer`, as the chat turn
does (a quarter of them with a search that found nothing, from a pool of 800 missing topics;
most cite one of 40 sections). Then, alternating between the prompts, the real API is asked for
the statistics of the last 30 and 365 days and the gaps (an owner's session, Django's test
client): the number of SQL queries per request and the median time are reported for each, and
the ratio large / small (targets: the same number of queries; at most 2x the time).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import start_services, stop_services, write_section  # noqa: E402

ENDPOINTS = ("stats?days=30", "stats?days=365", "gaps")


def build_prompt(owner, name: str, students: list, messages: int, rng: random.Random):
    """A prompt whose chats hold `messages` messages (questions and answers), counted as they end."""
    from django.db import transaction
    from django.utils import timezone

    from chat.insight.stats import record_answer
    from chat.models import ChatSession, Enrollment, Message, MessageRole, Prompt

    prompt = Prompt.objects.create(owner=owner, name=name)
    Enrollment.objects.bulk_create([Enrollment(prompt=prompt, student=s, number=i + 1) for i, s in enumerate(students)])
    now = timezone.now()
    turns, done = messages // 2, 0
    sessions = {}
    while done < turns:
        with transaction.atomic():
            for _ in range(min(1000, turns - done)):
                student = rng.choice(students)
                chat = sessions.get(student.pk)
                if chat is None or rng.random() < 0.1:
                    chat = sessions[student.pk] = ChatSession.objects.create(prompt=prompt, user=student)
                when = now - timedelta(days=rng.random() * 120)
                missing = rng.random() < 0.25
                query = f"missing topic {rng.randrange(800)}" if missing else f"known topic {rng.randrange(40)}"
                section = rng.randrange(40)
                cited = [] if missing else [{"n": 1, "file_id": section % 8, "file_name": f"file-{section % 8}.pdf",
                                             "section": f"Chapter {section}"}]  # fmt: skip
                Message.objects.create(session=chat, role=MessageRole.USER, content=f"Question about {query}?")
                reply = Message.objects.create(
                    session=chat,
                    role=MessageRole.ASSISTANT,
                    content="An answer [1].",
                    tool_results=[
                        {
                            "query": query,
                            "status": "nothing_relevant" if missing else "ok",
                            "passages": [] if missing else [{}] * 3,
                            "dropped": 2,
                        }  # fmt: skip
                    ],
                    citations=cited,
                    token_usage={"prompt_tokens": 900, "completion_tokens": 150},
                )
                Message.objects.filter(pk=reply.pk).update(created=when)
                reply.created = when
                record_answer(reply)
                done += 1
    return prompt


def measure(client, prompt, repeat: int) -> dict[str, tuple[int, float]]:
    """{endpoint: (SQL queries per request, median ms)}."""
    from django.db import connection

    out = {}
    for endpoint in ENDPOINTS:
        url = f"/api/v1/prompts/{prompt.pk}/{endpoint}"
        queries: list[str] = []

        def count(execute, sql, params, many, context, queries=queries):
            queries.append(sql)
            return execute(sql, params, many, context)

        # Counted with a wrapper: each request resets Django's own query log when it starts.
        with connection.execute_wrapper(count):
            assert client.get(url).status_code == 200
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        out[endpoint] = (len(queries), statistics.median(times))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=500)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--write", action="store_true", help="Write the table into docs/BENCHMARKS.md.")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="currechat-bench-stats-"))
    (data_dir / "var").mkdir()
    server = start_services("bench-stats", data_dir=data_dir, extra_env={"ALLOWED_HOSTS": "testserver,localhost"})
    try:
        from django.core.management import call_command
        from django.test import Client

        from accounts.models import Role, User

        call_command("migrate", verbosity=0)
        rng = random.Random(15)
        owner = User.objects.create_user("bench-owner", password="x", role=Role.TEACHER)
        students = User.objects.bulk_create(
            [User(username=f"student-{i}", role=Role.STUDENT) for i in range(args.students)]
        )
        started = time.perf_counter()
        small = build_prompt(owner, "small", students, args.small, rng)
        large = build_prompt(owner, "large", students, args.large, rng)
        answers = (args.small + args.large) // 2
        per_answer = (time.perf_counter() - started) / answers * 1000
        client = Client()
        client.force_login(owner)
        measure(client, small, 3)  # warm up caches and connections
        results = {"small": measure(client, small, args.repeat), "large": measure(client, large, args.repeat)}
        report(args, results, per_answer)
    finally:
        stop_services(server)


def report(args, results: dict, per_answer: float) -> None:
    rows = ["| request | queries, small / large | median ms, small | median ms, large | time ratio | target |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    worst = 0.0
    for endpoint in ENDPOINTS:
        (q_small, t_small), (q_large, t_large) = results["small"][endpoint], results["large"][endpoint]
        ratio = t_large / t_small
        worst = max(worst, ratio)
        same = "same" if q_small == q_large else "DIFFERENT"
        rows.append(
            f"| GET /prompts/{{id}}/{endpoint} | {q_small} / {q_large} ({same}) | {t_small:.1f} | {t_large:.1f} "
            f"| {ratio:.2f} | ≤ 2 |"
        )
    rows.append(f"| storing one answer with its counts (chat turn's cost) | | {per_answer:.2f} ms | | | |")
    table = "\n".join(rows)
    print(table)
    print(f"\nworst time ratio large / small: {worst:.2f}")
    if args.write:
        command = (
            f"`.venv/bin/python bench/stats.py --students {args.students} --small {args.small} "
            f"--large {args.large} --repeat {args.repeat} --write`"
        )
        write_section(
            "## Teacher statistics and gaps (`bench/stats.py`)\n\n"
            f"{command} ({time.strftime('%Y-%m-%d')}). One SQLite database, {args.students} students per prompt, "
            f"a prompt with {args.small:,} messages against one with {args.large:,}, every answer counted by "
            "the real `record_answer`; the real API through Django's test client, median of "
            f"{args.repeat} requests each. Statistics read per-day aggregates, never the messages.\n\n" + table + "\n"
        )


if __name__ == "__main__":
    main()
