"""Processes die mid-work and nothing is lost or stuck (issue 13; docs/RELIABILITY.md lists every
scenario, `bench/faults.py` kills real processes)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from datetime import timedelta

import pymupdf
import pytest
from django.db import connections
from django.utils import timezone
from rq import Queue, Worker
from rq.job import Job

from chat.models import ChatSession, Message, MessageStatus
from chat.turn.agent import ORPHANED, run_turn, start_turn
from chat.turn.events import CallbackSink
from chat.turn.limits import ALIVE_TTL, TurnLock, alive_key
from collections_app import lifecycle, liveness
from collections_app.models import FileStatus, SourceFile
from currechat.health import check_workers
from currechat.worker import PreloadingWorker
from kernel.errors import ProviderError
from kernel.redis_client import get_redis
from rag.ingest import chunking
from rag.ingest.html import NESTED_TOO_DEEP
from rag.ingest.job import PageText
from rag.ingest.pdf.text_layer import fast_pages
from rag.providers.decoders import OllamaLines, OpenAIEvents
from rag.providers.wire import decoded
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call
from tests.fixtures_ingest import PDFS, chunk_keys, upload
from tests.waiting import running, wait_for

NOTES = b"# Optics\n\nLight bends when it passes from air into water, which is called refraction.\n"


def api(client, method: str, url: str, data=None):
    kwargs = {"content_type": "application/json"} if data is not None else {}
    return getattr(client, method)(f"/api/v1{url}", json.dumps(data) if data is not None else None, **kwargs)


# Item 1: a dead worker ------------------------------------------------------------------------------


def _processing(collection, client, name="optics.md", content: bytes = NOTES) -> SourceFile:
    """A file uploaded and claimed by a worker that then vanished (its job never ran further)."""
    response = upload(client, collection, content, name)
    assert response.status_code == 201
    source = SourceFile.objects.get(pk=response.json()["id"])
    assert lifecycle.claim(source.pk, source.attempt) is not None
    return source


def test_a_killed_job_process_fails_its_file_at_once_with_retry(fast_collection, client_for, owner, run_worker):
    source = _processing(fast_collection, client_for(owner))
    job = Job.create(
        "collections_app.tasks.ingest_file", args=(source.pk, source.attempt, True), connection=get_redis()
    )
    worker = PreloadingWorker(["ingest"], connection=get_redis())
    # What rq calls when the job's process ended without a result, here killed with SIGKILL.
    worker.handle_work_horse_killed(job, 4242, signal.SIGKILL, None)
    source.refresh_from_db()
    assert source.status == FileStatus.FAILED and "killed by signal 9" in source.error and "Retry" in source.error
    assert api(client_for(owner), "post", f"/files/{source.pk}/retry").status_code == 200
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY and source.chunk_count >= 1


def test_a_worker_fails_files_whose_job_stopped_beating(fast_collection, client_for, owner, settings):
    lost = _processing(fast_collection, client_for(owner))
    alive = _processing(fast_collection, client_for(owner), "waves.md", b"# Waves\n\nWaves carry energy.\n")
    long_ago = timezone.now() - timedelta(seconds=settings.INGEST_STALE_SECONDS + 1)
    SourceFile.objects.filter(pk=lost.pk).update(updated=long_ago)
    assert liveness.fail_stalled_files() == 1
    lost.refresh_from_db()
    alive.refresh_from_db()
    assert lost.status == FileStatus.FAILED and "no sign of life" in lost.error
    assert alive.status == FileStatus.PROCESSING


@pytest.mark.django_db(transaction=True)
def test_a_running_job_beats_so_a_slow_step_is_not_taken_for_a_dead_worker(
    fast_collection, client_for, owner, settings
):
    settings.INGEST_HEARTBEAT_SECONDS = 0.05
    source = _processing(fast_collection, client_for(owner))
    long_ago = timezone.now() - timedelta(hours=1)
    SourceFile.objects.filter(pk=source.pk).update(updated=long_ago)
    assert liveness.is_stalled(SourceFile.objects.get(pk=source.pk))
    with liveness.Heartbeat(source.pk, source.attempt):  # a step that reports nothing (one slow VLM page)
        wait_for(lambda: not liveness.is_stalled(SourceFile.objects.get(pk=source.pk)), 30, "the job's heartbeat")
    assert liveness.fail_stalled_files() == 0


def test_a_queued_file_whose_job_was_lost_gets_a_job_again(fast_collection, client_for, owner, run_worker):
    source = SourceFile.objects.get(pk=upload(client_for(owner), fast_collection, NOTES, "optics.md").json()["id"])
    Queue("ingest", connection=get_redis()).empty()  # Redis lost the job (restarted without its data)
    assert liveness.queue_lost_files() == 0, "queued a moment ago: its job may be on its way"
    long_ago = timezone.now() - timedelta(hours=1)
    SourceFile.objects.filter(pk=source.pk).update(updated=long_ago)
    assert liveness.queue_lost_files() == 1
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY and source.chunk_count >= 1
    assert liveness.queue_lost_files() == 0


def test_health_counts_only_workers_that_beat_recently(db):
    dead = Worker(["ingest"], connection=get_redis(), name="dead-worker")
    dead.register_birth()
    get_redis().hset(dead.key, "last_heartbeat", "2020-01-01T00:00:00.000000Z")
    assert check_workers().ok is False
    live = Worker(["ingest"], connection=get_redis(), name="live-worker")
    live.register_birth()
    state = check_workers()
    assert state.ok and state.detail == "1 background worker running (0 busy, 1 idle)."
    live.set_state("busy")
    assert check_workers().detail == "1 background worker running (1 busy, 0 idle)."


# Item 2: a web process dies mid-answer ----------------------------------------------------------------


def _orphan(session, token: str, content: str = "Refraction is") -> Message:
    Message.objects.create(session=session, role="user", content="What is refraction?")
    reply = Message.objects.create(session=session, role="assistant", status=MessageStatus.STREAMING, content=content)
    get_redis().set(TurnLock(session.id).key, token, ex=600)
    return reply


def test_a_chat_whose_answering_process_died_is_free_at_once_and_keeps_the_streamed_text(
    client_for, student, session, ollama
):
    reply = _orphan(session, f"deadprocess:{time.time_ns()}")  # no process with that id beats
    ollama.script(Reply(content="Light bends."))
    response = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "Again?"})
    assert response.status_code == 200, response.json()
    reply.refresh_from_db()
    assert reply.status == MessageStatus.FAILED and reply.error == ORPHANED and reply.content == "Refraction is"


def test_a_live_process_keeps_its_chat_locked(client_for, student, session):
    get_redis().set(alive_key("otherprocess"), "1", ex=ALIVE_TTL)
    reply = _orphan(session, f"otherprocess:{time.time_ns()}")
    response = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "Again?"})
    assert response.status_code == 409 and response.json()["code"] == "busy"
    reply.refresh_from_db()
    assert reply.status == MessageStatus.STREAMING


def test_a_turn_clears_an_earlier_stop_but_a_busy_chat_keeps_its_running_turns_stop(
    client_for, student, session, ollama
):
    """The turn lock, the Stop's clearing and the process's beacon are one Redis call at a turn's
    start (chat/turn/limits.TurnLock.acquire): each still does what it did on its own."""
    from chat.turn.limits import StopSignal
    from kernel.beacon import beacon

    stop = StopSignal(session.pk).key
    get_redis().set(alive_key("otherprocess"), "1", ex=ALIVE_TTL)
    reply = _orphan(session, f"otherprocess:{time.time_ns()}")
    get_redis().set(stop, "1")  # the student pressed Stop for the turn running elsewhere
    response = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "Again?"})
    assert response.status_code == 409 and response.json()["code"] == "busy"
    assert get_redis().get(stop) is not None  # that turn still finds its Stop
    get_redis().delete(TurnLock(session.pk).key)  # it ended, its Stop left behind
    Message.objects.filter(pk=reply.pk).update(status=MessageStatus.STOPPED)
    get_redis().delete(alive_key(beacon.ensure()))  # and Redis lost this process's beacon meanwhile
    ollama.script(Reply(content="Light bends."))
    response = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "Again?"})
    assert response.status_code == 200 and response.json()["status"] == "complete", response.json()
    assert get_redis().get(stop) is None
    assert get_redis().exists(alive_key(beacon.ensure(beat=False)))


def test_a_lock_left_behind_by_a_finished_turn_is_broken(client_for, student, session, ollama):
    """Redis was away when the turn ended: its answer is stored, its lock stayed."""
    get_redis().set(alive_key("otherprocess"), "1", ex=ALIVE_TTL)
    reply = _orphan(session, f"otherprocess:{time.time_ns() - 60 * 10**9}")
    Message.objects.filter(pk=reply.pk).update(status=MessageStatus.COMPLETE)
    ollama.script(Reply(content="Light bends."))
    response = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "Again?"})
    assert response.status_code == 200


@pytest.mark.django_db(transaction=True)
def test_streamed_text_is_stored_while_the_answer_is_written(session, ollama):
    """Stored midway by the process's writer (another connection): what a crash would leave."""
    gate = threading.Event()
    words = [f"w{i} " for i in range(30)]
    # Twenty words take more than a second (a write is due), then the model holds the rest.
    ollama.script(Reply(chunks=words, delay=0.06, gate_after=20, gate=gate))
    turn = start_turn(session, "Talk a while")
    answer = threading.Thread(target=_answer, args=(turn,))
    answer.start()
    try:
        stored = wait_for(
            lambda: (
                Message.objects.filter(pk=turn.reply.pk, status=MessageStatus.STREAMING).exclude(content="").first()
            ),
            30,
            "the start of the answer to be stored",
        )
    finally:
        gate.set()
    answer.join(60)
    reply = Message.objects.get(pk=turn.reply.pk)
    assert reply.status == MessageStatus.COMPLETE and reply.content == "".join(words)
    assert "".join(words[:20]).startswith(stored.content), "what was stored midway is the answer's start"


@pytest.mark.django_db(transaction=True)
def test_every_answer_streaming_at_once_is_stored_as_it_grows(session, ollama):
    """The streamed texts of all the answers a process runs are written together (one statement
    a second): each of them must be stored midway, none overwritten by another's text, and none
    left behind its final text when it ends."""
    gates = [threading.Event() for _ in range(3)]
    words = {n: [f"a{n}w{i} " for i in range(40)] for n in range(3)}
    # Twenty words of each answer take more than a second (a write is due), then the rest is held.
    ollama.script(*(Reply(chunks=words[n], delay=0.06, gate_after=20, gate=gates[n]) for n in range(3)))
    chats = [session] + [ChatSession.objects.create(prompt=session.prompt, user=session.user) for _ in range(2)]
    turns = [start_turn(chat, "Talk a while") for chat in chats]
    answers = [threading.Thread(target=_answer, args=(turn,)) for turn in turns]
    for answer in answers:
        answer.start()
    try:
        # Each reply's stored text: streaming, begun, and the start of one answer of its own.
        def stored_midway() -> bool:
            replies = Message.objects.filter(pk__in=[turn.reply.pk for turn in turns])
            owners = {
                n
                for r in replies
                for n, w in words.items()
                if r.status == MessageStatus.STREAMING and r.content and "".join(w[:20]).startswith(r.content)
            }
            return len(owners) == 3

        wait_for(stored_midway, 60, "the start of every answer to be stored")
    finally:
        for gate in gates:
            gate.set()
    for answer in answers:
        answer.join(60)
    finals = sorted(Message.objects.get(pk=turn.reply.pk).content for turn in turns)
    assert finals == sorted("".join(w) for w in words.values())
    assert all(Message.objects.get(pk=turn.reply.pk).status == MessageStatus.COMPLETE for turn in turns)


def _answer(turn) -> None:
    try:
        run_turn(turn, CallbackSink(lambda event: None))
    finally:
        connections.close_all()


# Item 4 and 5: inputs that held or broke a worker ---------------------------------------------------


def test_chunking_fifty_thousand_empty_headings_takes_well_under_a_second_per_megabyte():
    markdown = "\n\n".join(f"## Heading {i}" for i in range(50_000)) + "\n\nThe only text.\n"
    started = time.perf_counter()
    chunks = chunking.chunk_pages([PageText(None, markdown)])
    assert time.perf_counter() - started < 5  # was 8 min 49 s (quadratic)
    assert [c.text for c in chunks][-1].endswith("The only text.")
    assert chunks[-1].heading_path == "Heading 49999"


# Cancel stops the job within seconds on the slowest paths, leaving nothing stored; Retry finishes it.
# Measured about 1 s from Cancel to the job's end on each path (was: the whole embedding batch, or
# the slowest VLM page in flight); the bound leaves room for a loaded 2-core machine.
CANCEL_SECONDS = 4.0


class CancelWhen(threading.Thread):
    """The teacher presses Cancel (the API) once `ready(file)` holds; `at` is when it took effect."""

    def __init__(self, client, file_id: int, ready):
        super().__init__(daemon=True)
        self.client, self.file_id, self.ready = client, file_id, ready
        self.at: float | None = None
        self.status_code: int | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and self.at is None:
                source = SourceFile.objects.get(pk=self.file_id)
                if source.status not in (FileStatus.QUEUED, FileStatus.PROCESSING):
                    return  # finished before it could be cancelled: the test fails on `at`
                if self.ready(source):
                    self.status_code = self.client.post(f"/api/v1/files/{self.file_id}/cancel").status_code
                    self.at = time.monotonic()
                time.sleep(0.05)
        finally:
            connections.close_all()  # this thread's own connection


def _cancel_during(client, collection, content: bytes, name: str, run_worker, ready, pdf_mode=None) -> SourceFile:
    """Upload, run the worker while Cancel is pressed once `ready`; assert how soon the job ended."""
    response = upload(client, collection, content, name, pdf_mode)
    assert response.status_code == 201, response.json()
    canceller = CancelWhen(client, response.json()["id"], ready)
    canceller.start()
    run_worker()
    ended = time.monotonic()
    canceller.join(5)
    assert canceller.at is not None and canceller.status_code == 200, "Cancel was pressed while the file ran"
    assert ended - canceller.at < CANCEL_SECONDS, f"the job ran on {ended - canceller.at:.1f} s after Cancel"
    source = SourceFile.objects.get(pk=response.json()["id"])
    assert source.status == FileStatus.CANCELLED and source.chunk_count == 0
    assert chunk_keys(collection) == [], "nothing of the cancelled run is searchable"
    return source


def _retry_finishes(client, source: SourceFile, run_worker) -> None:
    assert client.post(f"/api/v1/files/{source.pk}/retry").status_code == 200
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY, source.error
    assert len(chunk_keys(source.collection)) == source.chunk_count > 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_big_markdown_file_while_its_passages_are_embedded(
    fast_collection, client_for, owner, run_worker, ollama
):
    ollama.embed_delay = 0.2  # seconds per passage: a slow embedding server (a batch of 32 took 6 s)
    part = "Lens {0} bends light toward its focal point. " * 20
    markdown = "\n\n".join(f"## Part {i}\n\n" + part.format(i) for i in range(300))
    client = client_for(owner)

    def embedding(source: SourceFile) -> bool:  # some passages are embedded, most are not
        return "passages made searchable" in source.progress_detail and not source.progress_detail.startswith("0 ")

    source = _cancel_during(client, fast_collection, markdown.encode(), "optics.md", run_worker, embedding)
    ollama.embed_delay = 0
    _retry_finishes(client, source, run_worker)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_many_page_pdf_read_fast(fast_collection, client_for, owner, run_worker):
    book = pymupdf.open()
    for _ in range(2):
        book.insert_pdf(pymupdf.open(PDFS / "ingold-tools4scicomp.pdf"))  # 238 pages, headings from fonts
    client = client_for(owner)
    running = lambda s: s.status == FileStatus.PROCESSING  # noqa: E731
    source = _cancel_during(client, fast_collection, book.tobytes(), "book.pdf", run_worker, running, "fast")
    _retry_finishes(client, source, run_worker)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_many_page_pdf_read_by_the_vlm_without_waiting_for_its_pages(
    fast_collection, client_for, owner, run_worker, ollama, pdf_vlm, settings
):
    settings.INGEST_VLM_DPI = 50  # rendering is not what this test is about
    book = PDFS / "ingold-tools4scicomp.pdf"  # 119 pages
    vlm = pdf_vlm(book, delay=8.0)  # a page takes 8 s; four are read at a time
    ollama.responder = vlm
    client = client_for(owner)
    source = _cancel_during(
        client, fast_collection, book.read_bytes(), "book.pdf", run_worker, lambda _: len(vlm.calls) >= 2, "vlm"
    )
    vlm.delay = 0
    _retry_finishes(client, source, run_worker)
    deadline = time.monotonic() + 15
    while vlm.in_flight and time.monotonic() < deadline:  # the abandoned pages' requests end too
        time.sleep(0.1)


def test_deeply_nested_html_fails_with_a_reason_not_an_internal_error(fast_collection, ingest_upload):
    html = ("<html><body>" + "<div>" * 100_000 + "deep" + "</div>" * 100_000 + "</body></html>").encode()
    source = ingest_upload(fast_collection, html, "nested.html")
    assert source.status == FileStatus.FAILED and source.error == NESTED_TOO_DEEP


def test_one_line_pages_are_not_taken_for_running_headers():
    doc = pymupdf.open()
    for n in range(1, 7):
        doc.new_page().insert_text((72, 72), f"Slide {n}: the key idea of part {n}")
    pages = fast_pages(doc, lambda _done: None, lambda: False)
    assert [p.markdown for p in pages] == [f"Slide {n}: the key idea of part {n}" for n in range(1, 7)]


@pytest.fixture(params=["ollama", "openai"])
def protocol(request, session, ollama, openai_server, settings):
    """The chat's model on the Ollama-protocol server or the OpenAI-compatible one; returns its fake."""
    if request.param == "ollama":
        return ollama
    openai_server.reset()
    settings.OPENAI_BASE_URL = openai_server.url
    session.prompt.chat_model = "openai:Qwen/Qwen3-8B"
    session.prompt.save()
    return openai_server


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [("query: selection bias", "not valid JSON"), (["selection bias"], "were a list, not a JSON object")],
    ids=["not-json", "list"],
)
def test_unusable_tool_call_arguments_let_the_model_search_again(
    client_for, student, session, protocol, arguments, complaint
):
    protocol.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": arguments}]),
        Reply(tool_calls=[search_call("selection bias")]),
        Reply(content="Selection bias arises from an unrepresentative sample [1]."),
    )
    response = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "What is bias?"})

    assert response.status_code == 200, response.json()
    reply = Message.objects.filter(session=session, role="assistant").get()
    assert reply.status == MessageStatus.COMPLETE, reply.error
    assert reply.content == "Selection bias arises from an unrepresentative sample [1]."
    assert reply.citations[0]["file_name"] == "lecture-3.pdf"
    bad, good = reply.tool_results
    assert bad["status"] == "error" and complaint in bad["error"] and good["status"] == "ok"
    # Stored as the model sent them: OpenAI's wire carries arguments as JSON text.
    assert reply.tool_calls[0]["arguments"] in (arguments, json.dumps(arguments))
    assert reply.tool_calls[0]["query"] is None
    *_, echoed, told = protocol.chat_requests()[1]["messages"]  # the bad call, and the tool's answer to it
    assert complaint in told["content"] and 'Call document_search again with {"query"' in told["content"]
    assert echoed["tool_calls"][0]["function"]["arguments"] in ({}, "{}"), "servers that parse it get an object"


def test_a_garbage_line_mid_stream_is_skipped_and_the_answer_completes(client_for, student, session, ollama):
    answer = "Selection bias arises from an unrepresentative sample [1]."
    ollama.script(
        Reply(tool_calls=[search_call("selection bias")], content="Let me look.", garbage_after=1),
        Reply(content=answer, garbage_after=3),
    )
    response = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "What is bias?"})

    assert response.status_code == 200, response.json()
    reply = Message.objects.filter(session=session, role="assistant").get()
    assert reply.status == MessageStatus.COMPLETE, reply.error
    assert reply.content == "Let me look.\n\n" + answer
    assert [r["status"] for r in reply.tool_results] == ["ok"]


def test_a_garbage_event_on_the_openai_protocol_is_skipped_and_the_answer_completes(
    client_for, student, session, openai_server, settings
):
    """Server-sent events are read by our own reader (rag/providers/openai.py), which skips an event
    it cannot read as the Ollama reader skips a line."""
    openai_server.reset()
    settings.OPENAI_BASE_URL = openai_server.url
    session.prompt.chat_model = "openai:Qwen/Qwen3-8B"
    session.prompt.save()
    answer = "Selection bias arises from a skewed sample."
    openai_server.script(Reply(content=answer, garbage_after=2))
    done = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "What is bias?"})

    assert done.status_code == 200 and done.json()["status"] == MessageStatus.COMPLETE
    assert done.json()["content"] == answer


def test_a_reply_that_is_not_an_openai_stream_ends_with_a_sentence_to_act_on():
    page = ["<html>", "<head><title>502 Bad Gateway</title></head>", "<body>", "<h1>502</h1>", "</body>"]
    events = decoded((line for item in page for line in (f"data: {item}", "")), OpenAIEvents("http://gpu1/v1"))
    with pytest.raises(ProviderError, match="could not be read.*OPENAI_BASE_URL") as failed:
        list(events)
    assert failed.value.retryable


def test_a_reply_that_is_not_an_ollama_stream_ends_with_a_sentence_to_act_on():
    """More unreadable lines than a stream could have by accident: a proxy's page, not a model's answer."""
    page = ["<html>", "<head><title>502 Bad Gateway</title></head>", "<body>", "<h1>502</h1>", "</body>"]
    with pytest.raises(ProviderError, match="could not be read.*OLLAMA_HOST") as failed:
        list(decoded(iter(page), OllamaLines("http://models.example")))
    assert failed.value.retryable


def test_an_upload_refused_because_the_queue_is_down_can_be_uploaded_again(
    fast_collection, client_for, owner, settings, run_worker
):
    queues = settings.RQ_QUEUES
    settings.RQ_QUEUES = {name: {**spec, "URL": "redis://127.0.0.1:1/0"} for name, spec in queues.items()}
    refused = upload(client_for(owner), fast_collection, NOTES, "optics.md")
    assert refused.status_code == 503 and "Upload it again" in refused.json()["detail"]
    assert not SourceFile.objects.filter(collection=fast_collection).exists()
    settings.RQ_QUEUES = queues
    assert upload(client_for(owner), fast_collection, NOTES, "optics.md").status_code == 201


def test_job_processes_die_with_their_worker():
    """The horse asks Linux for SIGKILL when its parent dies (no orphaned job holding the file)."""
    from currechat.forks import die_with_parent

    asked_read, asked_write = os.pipe()  # the job tells its worker it has asked for the signal
    pid_read, pid_write = os.pipe()  # the worker tells this test its job's pid
    middle = os.fork()
    if middle == 0:  # the "worker": starts a "job" and dies once the job asked
        try:
            job = os.fork()
            if job == 0:
                try:
                    die_with_parent()
                    os.write(asked_write, b"1")
                    time.sleep(60)
                finally:
                    os._exit(0)
            os.read(asked_read, 1)
            os.write(pid_write, str(job).encode())
        finally:
            os._exit(0)
    os.waitpid(middle, 0)
    job_pid = int(os.read(pid_read, 32))
    try:
        wait_for(lambda: not running(job_pid), 30, "the job process to die with its worker")
    finally:
        if running(job_pid):
            os.kill(job_pid, signal.SIGKILL)
        for fd in (asked_read, asked_write, pid_read, pid_write):
            os.close(fd)
