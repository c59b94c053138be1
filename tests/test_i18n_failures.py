"""Failure sentences reach people in their language: a file that cannot be ingested, a model server
that fails, a refused or failed chat message. The real failure paths run with Finnish or Swedish
active (the worker, the websocket and the test model servers as in production), and each sentence
a person gets must be the catalogue's translation of one of its msgids. A sentence nobody marked
comes out in English and fails, not only a marked one left untranslated.

The paths these tests cannot drive are covered by reading the code: every sentence given to an
error class (whose text people are shown) is marked for translation, and every marked string is in
both catalogues."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import redis
from channels.db import database_sync_to_async
from django.utils import translation

from collections_app.models import FileStatus, SourceFile
from kernel.errors import ProviderError
from rag.ingest.job import IngestFailed
from rag.ingest.pdf.safety import DAMAGED
from rag.ingest.pipeline import failure_message
from rag.providers import ChatMessage, get_chat_model
from rag.providers.decoders import OllamaLines, OpenAIEvents
from rag.providers.wire import decoded
from tests.fake_ollama import Reply
from tests.fixtures_chat import connect_ws, receive_turn, search_call
from tests.fixtures_ingest import text_pdf, upload
from tests.untranslated import LOCALE, _entries, catalogue_source
from tests.websockets import EVENT_SECONDS

LANGUAGES = ["fi", "sv"]
ROOT = Path(__file__).resolve().parent.parent
PICTURE = (Path(__file__).parent / "data" / "formats" / "table-01.png").read_bytes()
# What a proxy sends instead of a model's stream.
PROXY_PAGE = ["<html>", "<head><title>502 Bad Gateway</title></head>", "<body>", "<h1>502</h1>", "</body>"]


def assert_translated(text: str, language: str, data=()) -> str:
    """`text` is the catalogue's translation of one of its msgids (placeholders filled with `data`
    or with translated sentences); returns that msgid."""
    msgid = catalogue_source(text, language, data)
    assert msgid is not None, f"not a {language} sentence of the catalogue: {text!r}"
    return msgid


# --- Files that cannot be ingested, as the teacher reads them ---------------------------------------


def _ingest_failed(collection, owner, client_for, run_worker, language, content: bytes, name: str, spoil=None):
    """Upload as an owner who chose `language`, then run the real worker with English active in this
    thread: the worker must put the teacher's language on by itself. The failed file, refreshed."""
    owner.language = language
    owner.save()
    response = upload(client_for(owner), collection, content, name, "fast" if name.endswith(".pdf") else None)
    assert response.status_code == 201, response.json()
    source = SourceFile.objects.get(pk=response.json()["id"])
    if spoil:
        spoil(source)
    translation.activate("en")  # the upload request left the teacher's language on in this thread
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.FAILED
    return source


def _damage(source) -> None:
    with open(source.file.path, "wb") as stored:  # the disk copy goes bad before the worker reads it
        stored.write(b"%PDF-1.7\n" + b"\x00garbage" * 100)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_damaged_pdf_fails_in_the_teachers_language(language, fast_collection, owner, client_for, run_worker, ollama):
    pdf = text_pdf(["Mitochondria make ATP."])
    source = _ingest_failed(fast_collection, owner, client_for, run_worker, language, pdf, "cell.pdf", _damage)
    assert_translated(source.error, language)
    with translation.override(language):
        assert source.error == str(DAMAGED)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_failing_embedding_server_fails_the_file_in_the_teachers_language(
    language, fast_collection, owner, client_for, run_worker, ollama, settings
):
    settings.INGEST_STEP_RETRIES = 0
    ollama.fail_embed = True
    notes = b"Light bends when it enters water."
    source = _ingest_failed(fast_collection, owner, client_for, run_worker, language, notes, "optics.md")
    # The server's own words stay as they were; the sentences around them are translated.
    msgid = assert_translated(source.error, language, data={"embedding failed"})
    assert msgid == "%(error)s Press Retry when the model server is back."


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_vision_model_that_reads_nothing_fails_the_picture_in_the_teachers_language(
    language, fast_collection, owner, client_for, run_worker, ollama, settings
):
    settings.INGEST_STEP_RETRIES, settings.INGEST_VLM_RETRIES = 0, 0
    ollama.responder = lambda body: Reply(content="")
    source = _ingest_failed(fast_collection, owner, client_for, run_worker, language, PICTURE, "board.png")
    assert_translated(source.error, language)
    with translation.override(language):
        assert translation.gettext("The vision model returned an empty page.") in source.error


def _provider_error(language: str, settings) -> ProviderError:
    settings.OLLAMA_HOST = "http://127.0.0.1:9"
    with translation.override(language), pytest.raises(ProviderError) as failed:
        list(get_chat_model("qwen3:8b").stream([ChatMessage("user", "hi")]))
    return failed.value


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("ending", ["refused file", "model server", "redis", "unexpected"])
def test_every_way_an_ingestion_fails_has_a_sentence_in_the_language(language, ending, settings):
    """The loop's one sentence per ending (rag/ingest/pipeline.failure_message), the endings the
    upload tests above do not reach included."""
    exc = {
        "refused file": lambda: IngestFailed(str(DAMAGED)),
        "model server": lambda: _provider_error(language, settings),
        "redis": lambda: redis.ConnectionError("Connection refused"),
        "unexpected": lambda: KeyError("page"),
    }[ending]
    with translation.override(language):
        assert_translated(failure_message(exc()), language, data={"http://127.0.0.1:9"})


# --- Model servers that fail --------------------------------------------------------------------------


@pytest.fixture(params=["ollama", "openai"])
def server(request, ollama, openai_server, settings):
    """(the protocol's test server, its chat model's name, the server's address as sentences name it)."""
    if request.param == "ollama":
        return ollama, "qwen3:8b", settings.OLLAMA_HOST
    openai_server.reset()
    settings.OPENAI_BASE_URL = openai_server.url
    return openai_server, "openai:Qwen/Qwen3-8B", openai_server.url


FAILURES = {
    # name: (what the server does, the model asked for, the server's own words)
    "server error": (Reply(status=500, error="out of memory"), None, "out of memory"),
    "error mid-answer": (Reply(content="one two three", fail_after=1, error="GPU fell over"), None, "GPU fell over"),
    "cut off": (Reply(content="one two three", cut_after=1), None, None),
    "too slow": (Reply(content="late answer", delay=2.0), None, None),
    "model missing": (None, "404", None),
    "unreachable": (None, None, None),
}
REASONS = {"cut off": "cut", "too slow": "timeout", "model missing": "missing", "unreachable": "unreachable"}


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failing_model_server_is_described_in_the_language(language, failure, server, settings):
    fake, name, host = server
    reply, other_model, words = FAILURES[failure]
    if reply is not None:
        fake.script(reply)
    if other_model:
        name = name.replace("8", other_model)
    if failure == "unreachable":
        host = "http://127.0.0.1:9" + ("/v1" if name.startswith("openai:") else "")
        settings.OLLAMA_HOST = settings.OPENAI_BASE_URL = host
    timeout = 0.5 if failure == "too slow" else None
    with translation.override(language), pytest.raises(ProviderError) as failed:
        list(get_chat_model(name, timeout=timeout).stream([ChatMessage("user", "hi")]))
    assert failed.value.reason == REASONS.get(failure, "failed")
    assert_translated(str(failed.value), language, data={host, name.removeprefix("openai:"), words})


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_reply_that_is_no_model_stream_is_described_in_the_language(language):
    sse = (line for item in PROXY_PAGE for line in (f"data: {item}", ""))
    for events, host in ((decoded(iter(PROXY_PAGE), OllamaLines("http://gpu1")), "http://gpu1"),
                         (decoded(sse, OpenAIEvents("http://gpu1/v1")), "http://gpu1/v1")):  # fmt: skip
        with translation.override(language), pytest.raises(ProviderError) as failed:
            list(events)
        assert_translated(str(failed.value), language, data={host})


# --- The chat websocket, as the student reads it -------------------------------------------------------


def _browser(language: str):
    return [(b"accept-language", f"{language},en;q=0.5".encode())]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", LANGUAGES)
async def test_chat_refusals_and_failures_reach_the_student_in_their_language(language, student, session, ollama):
    ws, connected, _ = await connect_ws(student, session.id, headers=_browser(language))
    assert connected
    await ws.send_json_to({"type": "user_message", "content": "Hi", "model": 8})
    refused = await ws.receive_json_from(timeout=EVENT_SECONDS)
    ollama.script(Reply(content="an answer that breaks", fail_after=2, error="GPU fell over"))
    await ws.send_json_to({"type": "user_message", "content": "Explain bias"})
    failed = (await receive_turn(ws))[-1]
    await ws.disconnect()

    assert refused["type"] == "error" and refused["code"] == "bad_request"
    assert failed["type"] == "error" and failed["code"] == "model_failed"
    for event in (refused, failed):
        assert_translated(event["detail"], language)
    stored = await database_sync_to_async(session.messages.get)(pk=failed["message_id"])
    assert stored.error == failed["detail"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("language", LANGUAGES)
async def test_a_search_the_answer_has_no_room_for_is_explained_in_the_students_language(
    language, student, session, ollama, settings
):
    settings.CHAT_MAX_SEARCHES = 1
    ollama.script(Reply(tool_calls=[search_call("bias"), search_call("sample size")]), Reply(content="Bias [1]."))
    ws, _, _ = await connect_ws(student, session.id, headers=_browser(language))
    await ws.send_json_to({"type": "user_message", "content": "What is bias?"})
    events = await receive_turn(ws)
    await ws.disconnect()

    ok, limited = [e for e in events if e["type"] == "tool_result"]
    assert ok["status"] == "ok" and limited["status"] == "error"
    assert assert_translated(limited["error"], language) == "Search limit reached."


# --- What the tests above cannot reach: read from the code ---------------------------------------------

# Sentences for operators, not for people using the site: `manage.py backup` and `restore` print them.
OPERATOR_ERRORS = {"BackupError"}
GETTEXT = {"_", "gettext", "gettext_lazy", "gettext_noop", "ngettext", "ngettext_lazy", "pgettext", "pgettext_lazy"}
NOT_PRODUCTION = {".venv", "node_modules", "var", "tests", "bench", "scripts", "deploy", "migrations", ".git"}


def _production_modules() -> dict[Path, ast.Module]:
    return {
        path: ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(ROOT.rglob("*.py"))
        if not NOT_PRODUCTION.intersection(path.relative_to(ROOT).parts)
    }


def _name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _error_classes(modules) -> set[str]:
    """CurreChatError and every class that derives from it, by name, wherever it is defined."""
    classes = [node for tree in modules.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    errors = {"CurreChatError"}
    while True:
        more = {c.name for c in classes if c.name not in errors and any(_name(b) in errors for b in c.bases)}
        if not more:
            return errors
        errors |= more


def _english(node: ast.expr | None, constants: dict[str, ast.expr]) -> bool:
    """Whether `node` builds a sentence from English text that was not marked for translation."""
    if isinstance(node, ast.Name) and node.id in constants:
        return _english(constants[node.id], {})
    if isinstance(node, ast.Call) and _name(node.func) == "str" and node.args:
        return _english(node.args[0], constants)
    if isinstance(node, ast.Call) and _name(node.func) == "format" and isinstance(node.func, ast.Attribute):
        return _english(node.func.value, constants)
    if isinstance(node, ast.BinOp):
        return _english(node.left, constants) or _english(node.right, constants)
    if isinstance(node, ast.JoinedStr):
        return any(_english(value, constants) for value in node.values if isinstance(value, ast.Constant))
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return any(len(word) > 1 for word in "".join(c if c.isalpha() else " " for c in node.value).split())
    return False


def _sentences_given_to_errors(modules):
    """(where, the expression) of each sentence given to an error class, a stream's failure sentence
    (`UnreadableLines`) or a chat search's error for the student (`ToolOutcome(error=...)`)."""
    errors = _error_classes(modules) - OPERATOR_ERRORS
    for path, tree in modules.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name, args = _name(node.func), list(node.args)
            keywords = {k.arg: k.value for k in node.keywords}
            if name in errors:
                yield path, node.lineno, args[0] if args else keywords.get("message")
            elif name == "UnreadableLines":
                yield path, node.lineno, args[1] if len(args) > 1 else keywords.get("failure")
            elif name == "ToolOutcome":
                yield path, node.lineno, keywords.get("error")


def _module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    return {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def unmarked_sentences(modules) -> list[str]:
    constants = {path: _module_constants(tree) for path, tree in modules.items()}
    return [
        f"{path.relative_to(ROOT)}:{line}: {ast.unparse(sentence)}"
        for path, line, sentence in _sentences_given_to_errors(modules)
        if _english(sentence, constants[path])
    ]


def test_every_sentence_given_to_an_error_is_marked_for_translation():
    unmarked = unmarked_sentences(_production_modules())
    assert unmarked == [], "English nobody marked for translation:\n" + "\n".join(unmarked)


def _marked_strings(modules):
    """(where, msgid) of every string marked for translation: a gettext function's literal message
    (both forms of a plural; after the context of a pgettext)."""
    for path, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _name(node.func) in GETTEXT:
                first = 1 if _name(node.func).startswith("p") else 0
                forms = node.args[first : first + (2 if "ngettext" in _name(node.func) else 1)]
                for form in forms:
                    if isinstance(form, ast.Constant) and isinstance(form.value, str):
                        yield f"{path.relative_to(ROOT)}:{node.lineno}", form.value


def test_every_marked_string_is_translated_in_both_catalogues():
    """Marked but never put in the catalogues (makemessages not run, or a call xgettext cannot see,
    such as one inside an f-string) is English in every language."""
    marked = list(_marked_strings(_production_modules()))
    assert len(marked) > 300
    for language in LANGUAGES:
        translated = {msgid for msgid, text in _entries(LOCALE / language / "LC_MESSAGES" / "django.po") if text}
        missing = [f"{where}: {msgid!r}" for where, msgid in marked if msgid not in translated]
        assert missing == [], f"not translated into {language}: {missing}"


def test_the_code_check_finds_an_unmarked_sentence():
    """The check above can fail: English given to an error, directly, through a module constant, in
    an f-string or around a placeholder, is found; a marked sentence and joined translations are not."""
    code = """
from kernel.errors import ProviderError
class StreamGone(ProviderError): ...
LOST = "The stream was lost."
MARKED = _("The stream was lost.")
def fail(host, used, again):
    raise StreamGone(f"The model server at {host} went away.")
    raise ProviderError(LOST)
    raise ProviderError("The model server failed: %s." % host)
    raise ProviderError(str(MARKED))
    raise ProviderError(_("The model server at %(host)s went away.") % {"host": host})
    raise ProviderError(f"{used} {again}")
    UnreadableLines(host, "Replies could not be read.")
    ToolOutcome("id", None, "error", "for the model", error="Search limit reached.")
"""
    modules = _production_modules() | {ROOT / "example.py": ast.parse(code)}
    found = [line for line in unmarked_sentences(modules) if line.startswith("example.py:")]
    assert [line.split(":")[1] for line in found] == ["7", "8", "9", "13", "14"], found
