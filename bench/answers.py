"""Answer checks on a public QA set with gold answers (SQuAD v1.1 dev, ../shared/data/squad).

Each sampled question becomes an answer check (`facts`: its gold answers as alternatives, `searches`:
true) played through the real chat turn (chat/checks/play.py: the answering loop, document_search,
the real index and search over the articles' paragraphs, MiniLM embeddings) and judged by
chat/checks/verdicts.py, twice:

- extractive: no chat model on the server, the answer quotes the passages found;
- model: the Ollama-protocol test server (tests/fake_ollama.py) as a model that answers from the
  passages it is given: it searches the question, then answers with the sentence of the returned
  passages that shares most words with the question, citing it.

Reported: the pass rate, the distribution of `grounded`, and how often the measure agrees with the
gold answer being present (`grounded` at or above the floor <=> the gold answer is in the answer).
A third table checks the measure itself on claims (the question with its gold answer appended): supported
by the gold paragraph, not by another paragraph of the same article; the support threshold is
chosen on the first half of the articles (train) and reported on the second (test).

    .venv/bin/python bench/answers.py [--questions 300] [--articles 12]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import start_services, stop_services, write_section  # noqa: E402

SQUAD = ROOT.parent / "shared" / "data" / "squad" / "dev-v1.1.reconstructed.json"
EMBEDDER = "local:all-MiniLM-L6-v2"
_WORD = re.compile(r"\w+")
NOTE = (
    "Both modes copy sentences of the passages they cite, so every counted answer is fully supported "
    "(`grounded` 1.0) and the agreement equals the share with the gold answer: the disagreements are answers "
    "grounded in a passage that does not hold the gold answer (the measure checks support, not correctness; "
    "`facts` checks correctness). The extractive answer quotes the top 3 passages, so it holds the gold answer "
    "more often than the one sentence the test model picks. The claim table below tests the measure where it "
    "can fail."
)


def sample(articles: int, questions: int, seed: int = 7):
    data = json.loads(SQUAD.read_text())["data"][:articles]
    paragraphs = [(a["title"], i, p["context"]) for a in data for i, p in enumerate(a["paragraphs"])]
    qas = [
        (q["question"], sorted({x["text"] for x in q["answers"]}), title, i)
        for a in data for i, p in enumerate(a["paragraphs"]) for q in p["qas"]
        for title in [a["title"]]
    ]  # fmt: skip
    random.Random(seed).shuffle(qas)
    return paragraphs, qas[:questions], data


def index(paragraphs) -> object:
    """One collection of every paragraph (a file per article, the paragraph's number as its page)."""
    from collections_app.models import Collection
    from rag.index import CollectionIndex, IndexedChunk
    from rag.providers import get_embedding_model

    collection = Collection(id=1, name="SQuAD articles", language="english", embedding_model=EMBEDDER)
    embedder = get_embedding_model(EMBEDDER)
    titles = sorted({t for t, _, _ in paragraphs})
    vectors = []
    for start in range(0, len(paragraphs), 128):
        vectors += embedder.embed_batch([c for _, _, c in paragraphs[start : start + 128]])
        print(f"  embedded {len(vectors)}/{len(paragraphs)}", file=sys.stderr, flush=True)
    store = CollectionIndex(1, "english", embedder.dimensions)
    by_file: dict[int, list] = {}
    for position, ((title, number, text), vector) in enumerate(zip(paragraphs, vectors, strict=True)):
        file_id = titles.index(title) + 1
        chunk = IndexedChunk(file_id, position, text, title, number + 1, number + 1, title, vector)
        by_file.setdefault(file_id, []).append(chunk)
    for file_id, chunks in by_file.items():
        store.replace_file(file_id, chunks)
    return collection


def passages_answer(body: dict):
    """The test server as a model answering from its passages: search first, then the best sentence."""
    from tests.fake_ollama import Reply

    messages = body["messages"]
    question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    tool = [m for m in messages if m["role"] == "tool"]
    if not tool:
        return Reply(tool_calls=[{"name": "document_search", "arguments": {"query": question}}])
    words = set(_WORD.findall(question.lower()))
    best, best_n, best_score = "The course material does not cover this.", None, 0
    for block in re.split(r"\n(?=\[\d+\] )", tool[-1]["content"]):
        head = re.match(r"\[(\d+)\] ", block)
        if not head:
            continue
        for sentence in re.split(r"(?<=[.!?])\s+", block.split("\n", 1)[-1]):
            score = len(words & set(_WORD.findall(sentence.lower())))
            if score > best_score and "PASSAGES>>>" not in sentence:
                best, best_n, best_score = sentence.strip(), head.group(1), score
    return Reply(content=f"{best} [{best_n}]" if best_n else best)


def play_all(qas, collection, fake, mode: str) -> list[dict]:
    from chat.checks.play import Config, play
    from chat.checks.verdicts import GROUNDED_FLOOR, judge
    from chat.metering.usage import UsageMeter
    from chat.models import Prompt

    fake.models = ["qwen3:8b"] if mode == "model" else []
    fake.responder = passages_answer if mode == "model" else None
    prompt = Prompt(id=1, name="bench", system_prompt="", chat_model="qwen3:8b", curation_enabled=False)
    config = Config(prompt, "qwen3:8b", [collection], curate=False)
    rows = []
    for n, (question, golds, _title, _i) in enumerate(qas, 1):
        played = play(config, question, UsageMeter(1, None))
        verdict = judge({"facts": [golds], "searches": True}, played, language="english")
        present = not verdict.facts_missing
        grounded = verdict.grounded
        rows.append(
            {
                "passed": verdict.passed,
                "present": present,
                "grounded": grounded,
                "agree": grounded is not None and (grounded >= GROUNDED_FLOOR) == present,
                "mode": played.mode,
            }
        )
        if n % 50 == 0:
            print(f"  {mode}: {n}/{len(qas)}", file=sys.stderr, flush=True)
    return rows


def claims(data, seed: int = 11):
    """(supported, support score vs the gold paragraph, vs another paragraph of the article) per question."""
    from chat.checks.grounded import content_stems

    rng, out = random.Random(seed), []
    for article in data:
        paragraphs = article["paragraphs"]
        stems = [content_stems(p["context"], "english") for p in paragraphs]
        rows = []
        for i, p in enumerate(paragraphs):
            for q in p["qas"][:3]:
                claim = content_stems(f"{q['question']} {q['answers'][0]['text']}", "english")
                if len(claim) < 3 or len(paragraphs) < 2:
                    continue
                other = rng.choice([j for j in range(len(paragraphs)) if j != i])
                rows.append((len(claim & stems[i]) / len(claim), len(claim & stems[other]) / len(claim)))
        out.append(rows)
    return out


def accuracy(rows, threshold: float) -> float:
    right = sum((g >= threshold) + (o < threshold) for g, o in rows)
    return right / (2 * len(rows)) if rows else 0.0


def report(results: dict[str, list[dict]], calibration, args) -> str:
    from chat.checks.grounded import SUPPORT_THRESHOLD
    from chat.checks.verdicts import GROUNDED_FLOOR

    lines = [
        "## Answer checks on SQuAD v1.1 dev (bench/answers.py)",
        "",
        f"`.venv/bin/python bench/answers.py --questions {args.questions} --articles {args.articles}`: "
        f"{args.questions} questions of the first {args.articles} articles, one collection of their paragraphs "
        "(MiniLM, no curation), each question an answer check with `facts` = its gold answers and "
        "`searches` = true, played through the chat turn. Agreement: `grounded` >= "
        f"{GROUNDED_FLOOR} exactly when the gold answer is in the answer (answers with a `grounded` figure).",
        "",
        "| mode | pass rate | gold answer present | grounded: min / p10 / median / mean | agreement |",
        "|---|---|---|---|---|",
    ]
    for mode, rows in results.items():
        figures = sorted(r["grounded"] for r in rows if r["grounded"] is not None)
        with_figure = [r for r in rows if r["grounded"] is not None]
        spread = "–"
        if figures:
            p10 = figures[len(figures) // 10]
            spread = f"{figures[0]:.2f} / {p10:.2f} / {statistics.median(figures):.2f} / {statistics.mean(figures):.2f}"
        agree = sum(r["agree"] for r in with_figure) / len(with_figure) if with_figure else 0.0
        lines.append(
            f"| {mode} | {sum(r['passed'] for r in rows) / len(rows):.1%} | "
            f"{sum(r['present'] for r in rows) / len(rows):.1%} | {spread} | {agree:.1%} ({len(with_figure)}) |"
        )
    lines += ["", NOTE]
    half = len(calibration) // 2
    train = [r for rows in calibration[:half] for r in rows]
    test = [r for rows in calibration[half:] for r in rows]
    grid = [t / 20 for t in range(4, 17)]
    best = max(grid, key=lambda t: accuracy(train, t))
    lines += [
        "",
        "The support measure on claims (question + gold answer) against their gold paragraph (should be "
        "supported) and another paragraph of the same article (should not), threshold chosen on the first half "
        f"of the articles ({len(train)} claims), reported on the second ({len(test)}):",
        "",
        "| threshold | train accuracy | test accuracy |",
        "|---|---|---|",
    ]
    for t in sorted({best, SUPPORT_THRESHOLD, 0.3, 0.4, 0.6}):
        mark = " (best on train)" if t == best else " (in use)" if t == SUPPORT_THRESHOLD else ""
        lines.append(f"| {t:.2f}{mark} | {accuracy(train, t):.1%} | {accuracy(test, t):.1%} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--articles", type=int, default=12)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/BENCHMARKS.md alone")
    args = parser.parse_args()
    from tests.fake_ollama import FakeOllama

    fake = FakeOllama().start()
    server = start_services("answers", extra_env={"OLLAMA_HOST": fake.url, "HEALTH_CACHE_SECONDS": "0"})
    try:
        paragraphs, qas, data = sample(args.articles, args.questions)
        collection = index(paragraphs)
        results = {mode: play_all(qas, collection, fake, mode) for mode in ("extractive", "model")}
        text = report(results, claims(json.loads(SQUAD.read_text())["data"]), args)
    finally:
        stop_services(server)
        fake.stop()
    print(text)
    if not args.no_write:
        write_section(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
