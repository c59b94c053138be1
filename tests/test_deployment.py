"""The production layout, run for real on loopback: nginx (TLS, deploy/nginx/currechat.conf) → two
uvicorn web processes → PostgreSQL and Redis with a password, two ingestion workers (tests/deployment.py).

A teacher uploads through the proxy, a student chats over the proxied websocket over TLS, and web
processes are restarted (SIGTERM, as systemd stops them) while answers stream: the answer being
written finishes in the process that drains, the page reconnects through nginx to the other one,
and reads the whole answer there. No token of 50 streaming chats is lost in a rolling restart.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import ssl
import threading
import time
from dataclasses import dataclass, field

import httpx
import psycopg
import pytest
import websockets

from tests.deployment import Stack, missing_system_packages
from tests.fake_ollama import FakeOllama, Reply

pytestmark = [pytest.mark.slow, pytest.mark.deployment, pytest.mark.xdist_group("deployment")]

PASSWORD = "correct-horse-battery-staple"
CHATS = 800  # prepared; a test uses as many as it needs
SETUP = """
import json
from accounts.models import ApiToken, Role, User
from chat.models import ChatSession, Enrollment, Prompt
from collections_app.models import Collection

teacher = User.objects.create_user("tina-teacher", password=PASSWORD, role=Role.TEACHER)
student = User.objects.create_user("sam-student", password=PASSWORD, role=Role.STUDENT)
_, token = ApiToken.issue(teacher, name="deployment test")
collection = Collection.objects.create(name="Statistics 101", language="english", owner=teacher)
# Curation off: each of its checks would take one of the replies a test scripts for the chat.
prompt = Prompt.objects.create(
    owner=teacher, name="Stats helper", system_prompt="Be kind.", chat_model="qwen3:8b", curation_enabled=False
)
prompt.collections.add(collection)
Enrollment.objects.create(student=student, prompt=prompt)
chats = [ChatSession.objects.create(prompt=prompt, user=student).id for _ in range(CHATS)]
print(json.dumps({"token": token, "collection": collection.id, "chats": chats}))
"""
NOTES = """# Sampling

## Standard error

The standard error of the mean shrinks as the sample grows: it is the standard deviation divided by
the square root of the sample size. Bigger samples give steadier estimates.
"""


@dataclass
class Deployment:
    stack: Stack
    model: FakeOllama
    token: str
    collection: int
    chats: list[int]
    tls: ssl.SSLContext
    cookie: str = ""
    used: int = 0

    def next_chat(self) -> int:
        self.used += 1
        return self.chats[self.used - 1]

    def http(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.stack.url, verify=self.tls, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    problem = missing_system_packages()
    if problem:
        pytest.fail(problem)
    model = FakeOllama().start()
    stack = Stack(tmp_path_factory.mktemp("deployment"), model_url=model.url, webs=2, workers=2)
    try:
        stack.start()
        setup = SETUP.replace("PASSWORD", repr(PASSWORD)).replace("CHATS", str(CHATS))
        data = json.loads(stack.manage("shell", "-c", setup).strip().splitlines()[-1])
        tls = ssl.create_default_context(cafile=str(stack.tmp / "nginx" / "cert.pem"))
        yield Deployment(stack, model, data["token"], data["collection"], data["chats"], tls)
    finally:
        stack.stop()
        model.stop()


def run_apart(coroutine):
    """`asyncio.run` in a thread of its own: a browser test on the same xdist worker leaves
    Playwright's event loop running in the main thread, where asyncio.run() refuses to start."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # noqa: BLE001 — handed back to the test's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="deployment-scenario")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def log_in(deployment: Deployment) -> str:
    """The student signs in through the proxy, as a browser does; the session cookie."""
    if deployment.cookie:
        return deployment.cookie
    with deployment.http() as client:
        client.get("/login/")
        csrf = client.cookies["csrftoken"]
        response = client.post(
            "/login/",
            data={"username": "sam-student", "password": PASSWORD, "csrfmiddlewaretoken": csrf},
            headers={"Referer": f"{deployment.stack.url}/login/"},
        )
        assert response.status_code == 302, response.text[:500]
        deployment.cookie = client.cookies["sessionid"]
    return deployment.cookie


def open_chat(deployment: Deployment, chat_id: int):
    return websockets.connect(
        f"wss://localhost:{deployment.stack.https_port}/ws/chats/{chat_id}/",
        ssl=deployment.tls,
        additional_headers={"Cookie": f"sessionid={deployment.cookie}", "Origin": deployment.stack.url},
        open_timeout=30,
    )


def read_chat(deployment: Deployment, chat_id: int) -> list[dict]:
    """The chat's messages as the page reads them when it reconnects (GET /api/v1/chats/{id})."""
    with deployment.http(Cookie=f"sessionid={deployment.cookie}") as client:
        response = client.get(f"/api/v1/chats/{chat_id}")
    assert response.status_code == 200, response.text[:300]
    return response.json()["messages"]


async def finished_answer(deployment: Deployment, chat_id: int, timeout: float = 120) -> dict:
    """What the page shows after reconnecting: it reads the chat again until the answer is finished."""
    deadline = time.monotonic() + timeout
    while True:
        messages = await asyncio.to_thread(read_chat, deployment, chat_id)
        last = messages[-1] if messages else {}
        if last.get("role") == "assistant" and last.get("status") not in ("pending", "streaming"):
            return last
        assert time.monotonic() < deadline, f"chat {chat_id} still unfinished: {last}"
        await asyncio.sleep(0.3)


def test_a_teacher_uploads_and_a_student_chats_through_nginx_while_the_answering_process_restarts(deployment):
    stack = deployment.stack
    # The teacher uploads through the proxy (the REST API with a token); a worker ingests it.
    with deployment.http(Authorization=f"Bearer {deployment.token}") as teacher:
        uploaded = teacher.post(
            f"/api/v1/collections/{deployment.collection}/files", files={"file": ("sampling.md", NOTES.encode())}
        )
        assert uploaded.status_code == 201, uploaded.text[:500]
        file_id = uploaded.json()["id"]
        deadline = time.monotonic() + 120
        while (status := teacher.get(f"/api/v1/files/{file_id}").json()["status"]) != "ready":
            assert status not in ("failed", "cancelled") and time.monotonic() < deadline, status
            time.sleep(0.3)
        # Static files come from nginx (collectstatic's output), not from a web process.
        page = teacher.get("/static/js/chat.js")
        assert page.status_code == 200 and b"WebSocket" in page.content

    log_in(deployment)
    chat_id = deployment.next_chat()
    gate = threading.Event()
    words = [f"w{i} " for i in range(40)]
    deployment.model.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "standard error"}}]),
        Reply(chunks=words, gate=gate, gate_after=10),
    )

    async def scenario() -> tuple[list[str], int, dict]:
        seen: list[str] = []
        async with open_chat(deployment, chat_id) as ws:
            await ws.send(json.dumps({"type": "user_message", "content": "Why do big samples help?"}))
            passages = []
            while len("".join(seen).split()) < 10:
                event = json.loads(await asyncio.wait_for(ws.recv(), 60))
                assert event["type"] not in ("error", "message_done"), event
                if event["type"] == "tool_result":
                    passages = event["passages"]
                elif event["type"] == "token":
                    seen.append(event["text"])
            assert passages and "square root of the sample size" in passages[0]["text"]
            # A rolling restart, mid-answer: whichever process answers gets SIGTERM while the model
            # is still writing; the other one was restarted first, or is restarted after.
            close_code = 0
            for web in stack.web:
                web.signal(signal.SIGTERM)
                closed = asyncio.ensure_future(ws.wait_closed())
                exited = asyncio.ensure_future(asyncio.to_thread(web.popen.wait))
                await asyncio.wait({closed, exited}, return_when=asyncio.FIRST_COMPLETED)
                if closed.done():
                    close_code = ws.close_code or 0
                    gate.set()  # the model goes on writing; the draining process stores it all
                await exited
                closed.cancel()
                await asyncio.to_thread(stack.restart_web, web)
                if close_code:
                    break
        return seen, close_code, await finished_answer(deployment, chat_id)

    seen, close_code, answer = run_apart(scenario())
    gate.set()
    assert close_code == 1012  # "service restart": the page reconnects instead of giving up
    assert answer["status"] == "complete" and answer["content"] == "".join(words)
    assert answer["content"].startswith("".join(seen))
    assert answer["tool_results"][0]["passages"][0]["file_name"] == "sampling.md"


@dataclass
class ChatLog:
    chat_id: int
    expected: str
    seen: list[str] = field(default_factory=list)
    closed_mid_answer: bool = False
    final: dict = field(default_factory=dict)


MARKER = re.compile(r"chat (\d+)")


async def one_chat(deployment: Deployment, log: ChatLog) -> None:
    """A student's page: send, read tokens; when the socket closes (a restart) reconnect through
    nginx and send again if the question never arrived, else read the chat until it is answered."""
    question = f"chat {log.chat_id}: count for me"
    for _attempt in range(10):
        try:
            async with open_chat(deployment, log.chat_id) as ws:
                await ws.send(json.dumps({"type": "user_message", "content": question}))
                async for raw in ws:
                    event = json.loads(raw)
                    if event["type"] == "token":
                        log.seen.append(event["text"])
                    elif event["type"] == "message_done":
                        log.final = event["message"]
                        return
                    elif event["type"] == "error":
                        break  # refused by a draining process: nothing was stored, send again
        except (websockets.WebSocketException, OSError):
            # Closed by a restart, or refused while its process shut down (uvicorn answers a
            # handshake it cannot finish with 500): the page reconnects, as here.
            pass
        messages = await asyncio.to_thread(read_chat, deployment, log.chat_id)
        if any(m["role"] == "user" for m in messages):
            log.closed_mid_answer = True
            log.final = await finished_answer(deployment, log.chat_id)
            return
    raise AssertionError(f"chat {log.chat_id} could not send its question")


def test_a_rolling_restart_of_every_web_process_during_50_streaming_chats_loses_no_token(deployment):
    stack = deployment.stack
    log_in(deployment)
    logs: dict[int, ChatLog] = {}

    def respond(body: dict) -> Reply:
        asked = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        chat = int(MARKER.search(asked).group(1))  # type: ignore[union-attr]
        return Reply(chunks=[f"c{chat}t{i} " for i in range(100)], delay=0.1)

    deployment.model.responder = respond

    async def scenario() -> None:
        tasks: list[asyncio.Task] = []
        restarted = asyncio.Event()

        def start_chat() -> None:
            chat_id = deployment.next_chat()
            logs[chat_id] = ChatLog(chat_id, "".join(f"c{chat_id}t{i} " for i in range(100)))
            tasks.append(asyncio.ensure_future(one_chat(deployment, logs[chat_id])))

        async def keep_chatting() -> None:
            # 50 chats stream at any time, a new one starting as one ends, for as long as the
            # restart runs: every process that is stopped has answers streaming.
            while not restarted.is_set() or len(tasks) < 50:
                if sum(1 for task in tasks if not task.done()) < 50:
                    start_chat()
                await asyncio.sleep(0.05)

        load = asyncio.ensure_future(keep_chatting())
        while sum(1 for log in logs.values() if log.seen) < 20:
            await asyncio.sleep(0.05)
        for web in stack.web:
            web.signal(signal.SIGTERM)
            # uvicorn ends by re-raising the SIGTERM it handled (systemd counts that as a clean stop).
            assert await asyncio.to_thread(web.wait, 120) in (0, -signal.SIGTERM), web.tail()
            await asyncio.to_thread(stack.restart_web, web)
        restarted.set()
        await load
        await asyncio.gather(*tasks)

    run_apart(scenario())
    deployment.model.responder = None
    assert len(logs) >= 50
    lost = {log.chat_id: log.final.get("content") for log in logs.values() if log.final.get("content") != log.expected}
    assert not lost, f"answers not complete: {lost}"
    assert all(log.final["status"] == "complete" for log in logs.values())
    assert all(log.expected.startswith("".join(log.seen)) for log in logs.values())
    # Restarts met answers mid-stream (both processes had some), and those answers finished anyway.
    assert sum(log.closed_mid_answer for log in logs.values()) >= 2


def test_requests_leave_no_database_connection_open_behind_them(deployment):
    """Under ASGI every request runs in a thread of its own that ends with it: its connection closes
    at the request's end, not when a garbage collection gets to it (left open, they once ran
    PostgreSQL out of its 1,000 connections in a rolling restart during 50 streaming chats)."""

    def open_connections() -> int:
        with psycopg.connect(deployment.stack.env["DATABASE_URL"]) as database:
            row = database.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert row is not None
        return row[0]

    log_in(deployment)
    before = open_connections()
    with deployment.http(Cookie=f"sessionid={deployment.cookie}") as client:
        for chat_id in deployment.chats[-100:]:  # chats no other test uses
            assert client.get(f"/api/v1/chats/{chat_id}").status_code == 200
    assert open_connections() - before < 10, f"{before} connections before 100 requests"


def test_nginx_answers_probes_only_to_loopback_and_names_no_version(deployment):
    """Readiness checks the database, Redis and the queue: nginx lets only the load balancer and this
    host ask (PROBE_ADDRESSES, default loopback). 127.0.0.2 is this machine too, but not on the list:
    it stands for any other address. No response tells nginx's version (`server_tokens off`)."""
    address = f"https://127.0.0.1:{deployment.stack.https_port}"
    with httpx.Client(base_url=address, verify=deployment.tls, timeout=30) as allowed:
        assert allowed.get("/readyz").json() == {"status": "ready"}
        assert allowed.get("/healthz").json() == {"status": "alive"}
        login = allowed.get("/login/")
        assert login.status_code == 200 and login.headers["server"] == "nginx"
    outside = httpx.HTTPTransport(local_address="127.0.0.2", verify=deployment.tls)
    with httpx.Client(base_url=address, transport=outside, timeout=30) as stranger:
        for path in ("/readyz", "/healthz"):
            refused = stranger.get(path)
            assert refused.status_code == 403, path
            assert refused.headers["server"] == "nginx" and "nginx/" not in refused.text
        assert stranger.get("/login/").status_code == 200  # the pages themselves are for everyone
