"""Answer checks through the API: runs queued (202) and read back as the worker plays them, drafts
that leave the live prompt alone until applied, runs that start by themselves after each kind of
change, and the teacher's weekly budget reserved per question."""

from __future__ import annotations

import pytest

from chat.course import writes
from chat.metering.usage import _held_key, current_week
from chat.models import AnswerCheckRun, Prompt, TokenUsage
from collections_app import lifecycle
from kernel.redis_client import get_redis
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call
from tests.test_answer_checks import COURSE, FAITHFUL, NOTES

URL = "/api/v1/prompts/{}/answer-checks"


@pytest.fixture
def course(fast_collection, ingest_upload, owner):
    lecture = ingest_upload(fast_collection, COURSE, "statistics.md")
    notes = ingest_upload(fast_collection, NOTES, "notes.md")
    prompt = Prompt.objects.create(owner=owner, name="Stats helper", system_prompt="Be kind.", curation_enabled=False)
    prompt.collections.add(fast_collection)
    return prompt, lecture, notes


@pytest.fixture
def api(client_for, owner, django_capture_on_commit_callbacks):
    """JSON calls as the owner; callbacks on commit (the worker's job) run as in production."""
    client = client_for(owner)

    def call(method: str, url: str, body=None):
        with django_capture_on_commit_callbacks(execute=True):
            return client.generic(method, url, "" if body is None else __import__("json").dumps(body),
                                  content_type="application/json")  # fmt: skip

    return call


def add(api, prompt, question: str, **expect):
    response = api("POST", URL.format(prompt.pk), {"question": question, "expect": expect})
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_run_is_queued_then_read_back_as_the_worker_played_it(course, api, ollama, run_worker):
    prompt, lecture, _notes = course
    made = add(api, prompt, "When is the exam?", facts=[["12 December"]], cites={"file_id": lecture.pk})
    assert made["expect"] == {"facts": [["12 December"]], "cites": {"file_id": lecture.pk}} and made["last"] is None
    ollama.script(Reply(tool_calls=[search_call("exam")]), Reply(content=FAITHFUL))

    started = api("POST", URL.format(prompt.pk) + "/run", {})
    assert started.status_code == 202 and started.json()["status"] == "queued"
    run_id = started.json()["run_id"]
    queued = api("GET", URL.format(prompt.pk) + f"/runs/{run_id}").json()
    assert (queued["status"], queued["results"]) == ("queued", [])

    run_worker()
    done = api("GET", URL.format(prompt.pk) + f"/runs/{run_id}").json()
    assert (done["status"], done["draft"], done["passed"], done["total"], done["ran"]) == ("done", False, 1, 1, 1)
    [result] = done["results"]
    assert result["check_id"] == made["id"] and result["passed"] and result["changed"] is None
    assert result["cited"][0] == {"file_id": lecture.pk, "page": None, "section": "Statistics 101 > Exam"}
    listed = api("GET", URL.format(prompt.pk)).json()
    assert listed[0]["last"]["passed"] is True


def test_a_check_must_cite_a_file_of_the_prompts_collections(course, api, make_collection, ingest_upload, owner):
    prompt, _lecture, _notes = course
    elsewhere = ingest_upload(make_collection("Other"), NOTES, "other.md")
    response = api("POST", URL.format(prompt.pk), {"question": "Q?", "expect": {"cites": {"file_id": elsewhere.pk}}})
    assert response.status_code == 400
    assert response.json()["detail"] == "Choose a file of one of the prompt's collections."


def test_a_draft_run_leaves_the_live_prompt_alone_until_applied(course, api, ollama, run_worker):
    prompt, _lecture, _notes = course
    add(api, prompt, "When is the exam?", facts=[["12 December"]])
    ollama.script(Reply(tool_calls=[search_call("exam")]), Reply(content=FAITHFUL))

    started = api("POST", URL.format(prompt.pk) + "/run", {"draft": {"system_prompt": "Answer in one line."}})
    assert started.status_code == 202
    run_worker()

    run = AnswerCheckRun.objects.get(pk=started.json()["run_id"])
    assert run.draft == {"system_prompt": "Answer in one line."} and run.passed == 1
    assert ollama.chat_requests()[0]["messages"][0]["content"].startswith("Answer in one line.")
    prompt.refresh_from_db()
    assert prompt.system_prompt == "Be kind."
    assert api("GET", URL.format(prompt.pk) + f"/runs/{run.pk}").json()["draft"] is True
    # The live list's "last" reads live runs only.
    assert api("GET", URL.format(prompt.pk)).json()[0]["last"] is None

    applied = api("POST", URL.format(prompt.pk) + f"/runs/{run.pk}/apply")
    assert applied.status_code == 200, applied.json()
    prompt.refresh_from_db()
    assert prompt.system_prompt == "Answer in one line."
    follow = AnswerCheckRun.objects.get(pk=applied.json()["run_id"])
    assert follow.trigger == "settings" and follow.draft is None and follow.status == "queued"


def test_a_draft_is_checked_as_the_prompt_settings_are(course, api):
    prompt, _lecture, _notes = course
    add(api, prompt, "When is the exam?")
    response = api("POST", URL.format(prompt.pk) + "/run", {"draft": {"model": "no-such-model:1b"}})
    assert response.status_code == 400 and "no-such-model:1b" in response.json()["detail"]
    assert not AnswerCheckRun.objects.exists()


@pytest.mark.parametrize(
    "change",
    [
        {"system_prompt": "Be brief."},
        {"chat_model": "qwen3-vl:8b"},
        {"curation_enabled": True},
        {"collections": []},
        {"source_policy": "material_only"},
    ],
    ids=["instructions", "model", "curation", "collections", "source-policy"],
)
def test_a_change_of_what_answers_depend_on_starts_a_run(
    course, owner, change, run_worker, django_capture_on_commit_callbacks, ollama
):
    prompt, _lecture, _notes = course
    writes.update_prompt(owner, prompt, {"description": "Nothing to do with answers."})
    assert not AnswerCheckRun.objects.exists()  # no checks yet, and the description changes no answer
    from chat.checks.expect import create_check

    create_check(owner, prompt, {"question": "When is the exam?", "expect": {}})
    writes.update_prompt(owner, prompt, {"description": "Still nothing."})
    assert not AnswerCheckRun.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        writes.update_prompt(owner, prompt, change)
    [run] = AnswerCheckRun.objects.all()
    assert (run.trigger, run.status, run.started_by) == ("settings", "queued", owner)
    run_worker()
    run.refresh_from_db()
    assert run.status == "done" and run.ran == 1


def test_a_reindex_starts_a_run_once_its_last_file_is_indexed(
    course, owner, run_worker, django_capture_on_commit_callbacks
):
    prompt, _lecture, _notes = course
    from chat.checks.expect import create_check

    create_check(owner, prompt, {"question": "When is the exam?", "expect": {"searches": True}})
    collection = prompt.collections.get()
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.reindex_collection(collection)
    [run] = AnswerCheckRun.objects.all()
    assert run.trigger == "reindex" and run.waiting_for == collection  # two files still to index
    with django_capture_on_commit_callbacks(execute=True):
        run_worker()  # ingests both files; the last one lets the run go
    run_worker()  # the run, queued when the last file was done
    run.refresh_from_db()
    assert run.waiting_for is None and run.status == "done" and run.ran == 1


def test_the_budget_is_reserved_per_question_and_the_run_stops_at_its_refusal(
    course, api, ollama, run_worker, owner, settings
):
    prompt, _lecture, _notes = course
    settings.USAGE_RESERVE_TOKENS = 1000
    prompt.weekly_token_budget = 1500
    prompt.save()
    for question in ("When is the exam?", "How is it graded?", "What is a random sample?"):
        add(api, prompt, question)
    held_during_calls: list[set[bytes]] = []
    key = _held_key(current_week(), owner.pk, prompt.pk)

    def answer(body):
        held_during_calls.append(set(get_redis().hkeys(key)))  # what the question holds while the model answers
        return Reply(content="The exam is in December [1].", prompt_tokens=1000, completion_tokens=600)

    ollama.responder = answer
    started = api("POST", URL.format(prompt.pk) + "/run", {})
    run_worker()

    run = api("GET", URL.format(prompt.pk) + f"/runs/{started.json()['run_id']}").json()
    # The first question used 1,600 tokens of 1,500: the second is refused; what ran is kept.
    assert (run["status"], run["stopped"], run["ran"], run["total"]) == ("stopped", "budget", 1, 3)
    assert len(run["results"]) == 1
    assert len(held_during_calls) == 1 and len(held_during_calls[0]) == 1  # one reservation, for that question
    assert not get_redis().hkeys(key)  # given back when the question ended
    usage = TokenUsage.objects.get(user=owner, prompt=prompt)
    assert usage.tokens == 1600


def test_a_run_asks_at_most_the_configured_number_of_questions(course, api, ollama, run_worker, settings):
    prompt, _lecture, _notes = course
    settings.ANSWER_CHECKS_MAX_PER_RUN = 2
    for question in ("When is the exam?", "How is it graded?", "What is a random sample?"):
        add(api, prompt, question)
    ollama.responder = lambda body: Reply(content="In December [1].")
    started = api("POST", URL.format(prompt.pk) + "/run", {})
    run_worker()
    run = api("GET", URL.format(prompt.pk) + f"/runs/{started.json()['run_id']}").json()
    assert (run["status"], run["stopped"], run["ran"], run["total"]) == ("stopped", "limit", 2, 3)


def test_a_second_run_waits_for_the_first(course, api):
    prompt, _lecture, _notes = course
    add(api, prompt, "When is the exam?")
    assert api("POST", URL.format(prompt.pk) + "/run", {}).status_code == 202
    again = api("POST", URL.format(prompt.pk) + "/run", {})
    assert again.status_code == 409
    assert again.json()["detail"] == "A run of these answer checks is under way; wait for it to finish."


def test_a_co_teacher_uses_the_checks_until_removed_and_students_never(course, client_for, co_owner, student, owner):
    from chat.models import Enrollment

    prompt, _lecture, _notes = course
    prompt.co_teachers.add(co_owner)
    Enrollment.objects.create(student=student, prompt=prompt)
    teacher = client_for(co_owner)
    made = teacher.post(URL.format(prompt.pk), {"question": "When is the exam?"}, content_type="application/json")
    assert made.status_code == 201
    assert client_for(student).get(URL.format(prompt.pk)).status_code == 403
    assert client_for(student).get(f"/prompts/{prompt.pk}/answer-checks/").status_code == 403

    writes.update_prompt(owner, prompt, {"co_teachers": []})
    check_url = URL.format(prompt.pk) + f"/{made.json()['id']}"
    assert teacher.get(URL.format(prompt.pk)).status_code == 404
    assert teacher.delete(check_url).status_code == 404
    assert teacher.post(URL.format(prompt.pk) + "/run", {}, content_type="application/json").status_code == 404
    assert teacher.get(f"/prompts/{prompt.pk}/answer-checks/").status_code == 404
