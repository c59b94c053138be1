"""Fixtures for the chat tests: indexed course material, a chat session, websocket clients."""

from __future__ import annotations

import json

import pytest
from channels.testing import WebsocketCommunicator

from chat.models import ChatSession
from chat.turn.budget import forget_windows
from rag.index import CollectionIndex, IndexedChunk
from rag.providers import get_embedding_model
from tests.websockets import open_websocket

# The Ollama-named embedder: the test model server embeds it at once (MiniLM would be slow here).
TEST_EMBEDDER = "ollama:snowflake-arctic-embed2"

MATERIAL = [
    # (file_id, file name, page, section, text)
    (1, "lecture-3.pdf", 4, "Sampling > Bias", "Selection bias arises when the sample is not representative."),
    (1, "lecture-3.pdf", 5, "Sampling > Size", "A larger sample size reduces the standard error of the mean."),
    (2, "notes.md", None, "Regression", "Least squares regression minimises the sum of squared residuals."),
    (2, "notes.md", None, "Regression > R2", "The coefficient of determination measures explained variance."),
]


@pytest.fixture(autouse=True)
def _fresh_context_windows():
    """Each test may give the test model server another context window."""
    forget_windows()
    yield
    forget_windows()


@pytest.fixture
def material(collection, ollama):
    """`collection` indexed with MATERIAL, embedded by the test model server."""
    collection.embedding_model = TEST_EMBEDDER
    collection.save()
    embedder = get_embedding_model(TEST_EMBEDDER)
    vectors = embedder.embed_batch([text for *_, text in MATERIAL])
    index = CollectionIndex.for_collection(collection)
    by_file: dict[int, list[IndexedChunk]] = {}
    for position, ((file_id, name, page, section, text), vector) in enumerate(zip(MATERIAL, vectors, strict=True)):
        by_file.setdefault(file_id, []).append(IndexedChunk(file_id, position, text, name, page, page, section, vector))
    for file_id, chunks in by_file.items():
        index.replace_file(file_id, chunks)
    return collection


@pytest.fixture
def chat_prompt(prompt, material):
    """The student's prompt over the indexed material. Curation off: these tests script every
    model reply, and curation would ask the same model server once per passage."""
    prompt.curation_enabled = False
    prompt.save()
    return prompt


@pytest.fixture
def session(chat_prompt, student):
    return ChatSession.objects.create(prompt=chat_prompt, user=student)


def search_call(query) -> dict:
    return {"name": "document_search", "arguments": {"query": query}}


async def connect_ws(user, session_id: int, headers=()) -> tuple[WebsocketCommunicator, bool, int | None]:
    """A websocket to /ws/chats/{id}/ logged in as `user` (None: anonymous), and whether it got in."""
    return await open_websocket(user, f"/ws/chats/{session_id}/", headers)


async def receive_turn(communicator: WebsocketCommunicator, timeout: float = 20) -> list[dict]:
    """Every event of one turn, up to and including `message_done` or `error`."""
    events = []
    while True:
        event = json.loads(await communicator.receive_from(timeout=timeout))
        events.append(event)
        if event["type"] in ("message_done", "error"):
            return events
