"""The week at a glance at course scale: the topics of a week with 2,000 questions, and the lookup of
a teacher's answer that every student question makes before anything else.

    .venv/bin/python bench/topics.py --questions 2000 --students 300 --lookups 2000 --write

One throw-away SQLite database and Redis Stack server. A prompt whose collection embeds with the
local MiniLM gets `--questions` questions this week from `--students` students, written from 40
question templates (each with several wordings and fillers) plus a tail of one-off questions; a
quarter of the answers searched and found nothing. No chat model is configured, so topics are
named by their words (a named week adds one model call). Reported: the CPU seconds (this process,
all threads: MiniLM runs on several) of building the week's topics from nothing, split into
embedding and the rest, the wall time, and the number of topics; then the teacher's-answer lookup
(`chat.insight.answers.answer_for`, as `chat.turn.agent.start_turn` calls it) against 300 answers,
half of the questions matching: p50 / p95 / max in ms. Targets: ≤ 60 s CPU; ≤ 2 ms p95.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import start_services, stop_services, write_section  # noqa: E402

SUBJECTS = [
    "the exam", "the final project", "homework 3", "the regression assignment", "the lab report",
    "the midterm", "the reading list", "the group work", "the peer review", "the course grade",
]  # fmt: skip
TEMPLATES = [
    "When is the deadline for {s}?", "How is {s} graded?", "Can I get an extension for {s}?",
    "What should {s} include?", "Where do I submit {s}?", "How long should {s} be?",
    "Is {s} done alone or in pairs?", "What happens if I miss {s}?",
]  # fmt: skip
CONCEPTS = [
    "standard deviation", "p-value", "confidence interval", "linear regression slope", "sampling bias",
    "the central limit theorem", "a null hypothesis", "correlation versus causation", "Bayes' theorem",
    "the chi-square test", "variance", "a histogram", "the median", "an outlier", "statistical power",
]  # fmt: skip
CONCEPT_TEMPLATES = ["What is {c}?", "Can you explain {c} simply?", "How do I calculate {c}?", "Why does {c} matter?"]


def questions(n: int, rng: random.Random) -> list[str]:
    """Course questions: mostly a few hundred recurring ones, each in several wordings; some unique."""
    out = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.45:
            out.append(rng.choice(TEMPLATES).format(s=rng.choice(SUBJECTS)))
        elif roll < 0.9:
            out.append(rng.choice(CONCEPT_TEMPLATES).format(c=rng.choice(CONCEPTS)))
        else:
            out.append(f"Question {i} about something else entirely, number {rng.randrange(10**6)}?")
        if rng.random() < 0.3:
            out[-1] = out[-1].lower().rstrip("?") + " ??"
    return out


def build_week(owner, students: list, texts: list[str], rng: random.Random):
    from django.db import transaction

    from chat.models import ChatSession, Enrollment, Message, MessageRole, Prompt
    from collections_app.models import Collection

    collection = Collection.objects.create(name="Bench", owner=owner, embedding_model="local:all-MiniLM-L6-v2")
    prompt = Prompt.objects.create(owner=owner, name="Bench", chat_model="nowhere:none")
    prompt.collections.add(collection)
    Enrollment.objects.bulk_create([Enrollment(prompt=prompt, student=s, number=i + 1) for i, s in enumerate(students)])
    with transaction.atomic():
        for text in texts:
            chat = ChatSession.objects.create(prompt=prompt, user=rng.choice(students))
            Message.objects.create(session=chat, role=MessageRole.USER, content=text)
            missing = rng.random() < 0.25
            results: list[dict] = [{"query": text, "status": "nothing_relevant" if missing else "ok", "passages": []}]
            Message.objects.create(session=chat, role=MessageRole.ASSISTANT, content="An answer.", tool_results=results)
    return prompt


def measure_digest(prompt, owner) -> dict[str, float]:
    """The week's topics built from nothing (nothing kept yet), and its two costly steps alone."""
    from django.conf import settings

    from chat.insight import clustering, topics

    week = topics.week_of()
    texts = [a.text for a in topics.load(prompt, week)]
    cpu = time.process_time()
    topics.embed(prompt, texts[:8])  # loads MiniLM: a worker or web process has it loaded already
    load_cpu = time.process_time() - cpu
    cpu, wall = time.process_time(), time.perf_counter()
    found = topics.digest(prompt, week, owner)
    digest_cpu, digest_wall = time.process_time() - cpu, time.perf_counter() - wall
    cpu = time.process_time()
    vectors = topics.embed(prompt, texts)
    embed_cpu = time.process_time() - cpu
    cpu = time.process_time()
    clustering.cluster(vectors, settings.TOPICS_SIMILARITY)
    cluster_cpu = time.process_time() - cpu
    return {
        "model_load_cpu": load_cpu,
        "embed_cpu": embed_cpu,
        "cluster_cpu": cluster_cpu,
        "digest_cpu": digest_cpu,
        "digest_wall": digest_wall,
        "topics": len(topics.shown(prompt, found)),
        "questions": found.questions,
    }


def measure_lookup(prompt, owner, texts: list[str], lookups: int, rng: random.Random):
    """(wall-clock ms, CPU ms of this thread) of each lookup."""
    from chat.insight import answers
    from chat.models import TeacherAnswer

    distinct = list(dict.fromkeys(texts))
    for text in distinct[:300]:
        key = answers.question_key(text)
        TeacherAnswer.objects.get_or_create(prompt=prompt, key=key, defaults={"question": text, "answer": "A."})
    asked = [
        rng.choice(distinct[:300]) if rng.random() < 0.5 else f"An unanswered question {i}?" for i in range(lookups)
    ]
    for text in asked[:50]:
        answers.answer_for(prompt.pk, text)  # warm the connection
    times, cpu = [], []
    for text in asked:
        started, started_cpu = time.perf_counter(), time.thread_time()
        answers.answer_for(prompt.pk, text)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--write", action="store_true", help="Write the table into docs/BENCHMARKS.md.")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="currechat-bench-topics-"))
    (data_dir / "var").mkdir()
    server = start_services("bench-topics", data_dir=data_dir, extra_env={"OLLAMA_HOST": "http://127.0.0.1:1"})
    try:
        from django.core.management import call_command

        from accounts.models import Role, User

        call_command("migrate", verbosity=0)
        rng = random.Random(42)
        owner = User.objects.create_user("bench-owner", password="x", role=Role.TEACHER)
        students = User.objects.bulk_create(
            [User(username=f"student-{i}", role=Role.STUDENT) for i in range(args.students)]
        )
        texts = questions(args.questions, rng)
        prompt = build_week(owner, students, texts, rng)
        digest = measure_digest(prompt, owner)
        times, cpu = measure_lookup(prompt, owner, texts, args.lookups, rng)
        report(args, digest, times, cpu)
    finally:
        stop_services(server)


def report(args, d: dict[str, float], times: list[float], cpu: list[float]) -> None:
    p95, cpu_p95 = statistics.quantiles(times, n=100)[94], statistics.quantiles(cpu, n=100)[94]
    rows = [
        "| measure | result | target |",
        "|---|---|---|",
        f"| topics of a week of {d['questions']:,.0f} questions, CPU s (all threads) | {d['digest_cpu']:.1f} | ≤ 60 |",
        f"| … of which embedding them (MiniLM, loaded), CPU s | {d['embed_cpu']:.1f} | |",
        f"| … of which clustering them, CPU s | {d['cluster_cpu']:.2f} | |",
        f"| the same, wall-clock s | {d['digest_wall']:.1f} | |",
        f"| loading MiniLM first (once per worker process), CPU s | {d['model_load_cpu']:.1f} | |",
        f"| topics shown (≥ 3 students) | {d['topics']:.0f} | |",
        f"| teacher's-answer lookup, p50 / p95 / max ms ({len(times):,} lookups, 300 answers) "
        f"| {statistics.median(times):.3f} / {p95:.3f} / {max(times):.3f} | p95 ≤ 2 |",
        f"| the same lookups, CPU ms of the thread, p50 / p95 | {statistics.median(cpu):.3f} / {cpu_p95:.3f} | |",
        f"| the machine's load average at the end (2 cores) | {os.getloadavg()[0]:.1f} | |",
    ]
    table = "\n".join(rows)
    print(table)
    if args.write:
        command = (
            f"`.venv/bin/python bench/topics.py --questions {args.questions} --students {args.students} "
            f"--lookups {args.lookups} --write`"
        )
        write_section(
            "## The week at a glance (`bench/topics.py`)\n\n"
            f"{command} ({time.strftime('%Y-%m-%d')}). One SQLite database; {args.students} students ask "
            f"{args.questions:,} questions in one week (recurring course questions in several wordings, a tenth "
            "one-off); the real `chat.insight.topics.digest` builds the week's topics from nothing with the local "
            "MiniLM embedder and no chat model (named by their words); then `chat.insight.answers.answer_for`, "
            "the lookup every student question makes first.\n\n" + table + "\n"
        )


if __name__ == "__main__":
    main()
