"""Test questions: written, run and re-run by owners and co-owners; run again by themselves after a
re-index; a worse search shows its regressions first; curation only when asked, and then paid for."""

from __future__ import annotations

import pytest

from collections_app import checks
from collections_app.models import CheckRun, FileStatus

COURSE = b"""# Statistics 101

## Exam

The final exam is on 12 December in hall B. Bring a calculator and your student card.

## Grading

The course is graded on a scale from 0 to 5. Weekly exercises give up to 20 percent of the grade.

## Sampling

A random sample gives every member of the population the same chance of being chosen.
"""


@pytest.fixture
def course(fast_collection, ingest_upload):
    source = ingest_upload(fast_collection, COURSE, "statistics.md")
    assert source.status == FileStatus.READY, source.error
    return fast_collection, source


def add(client, collection, question: str, **expect):
    return client.post(f"/api/v1/collections/{collection.pk}/checks", {"question": question, "expect": expect},
                       content_type="application/json")  # fmt: skip


def run(client, collection, **body):
    response = client.post(f"/api/v1/collections/{collection.pk}/checks/run", body, content_type="application/json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_owner_writes_runs_and_reruns_test_questions(course, client_for, owner):
    collection, source = course
    api = client_for(owner)
    exam = add(api, collection, "When is the exam?", file_id=source.pk, section="Exam")
    assert exam.status_code == 201, exam.json()
    assert exam.json()["last"] is None
    grading = add(api, collection, "How is the course graded?", file_id=source.pk, phrase="scale from 0 to 5").json()
    add(api, collection, "What is a random sample?", file_id=source.pk, section="Sampling")

    first = run(api, collection)
    assert (first["passed"], first["total"]) == (3, 3)
    assert all(r["rank"] is not None and r["rank"] <= 15 and r["changed"] is None for r in first["results"])
    again = run(api, collection)
    assert again["run_id"] != first["run_id"] and again["passed"] == 3
    assert all(r["changed"] is None for r in again["results"])

    # A phrase the material does not hold: the check fails from now on, and says it just started to.
    patched = api.patch(f"/api/v1/collections/{collection.pk}/checks/{grading['id']}",
                        {"expect": {"phrase": "graded by a final essay"}}, content_type="application/json")  # fmt: skip
    assert patched.status_code == 200 and patched.json()["expect"]["phrase"] == "graded by a final essay"
    third = run(api, collection)
    assert third["passed"] == 2
    assert third["results"][0] == {"check_id": grading["id"], "rank": None, "passed": False, "changed": "newly_failing"}
    listed = {c["id"]: c for c in api.get(f"/api/v1/collections/{collection.pk}/checks").json()}
    assert listed[grading["id"]]["last"]["passed"] is False
    assert listed[exam.json()["id"]]["last"]["rank"] >= 1

    assert api.delete(f"/api/v1/collections/{collection.pk}/checks/{grading['id']}").status_code == 204
    assert len(api.get(f"/api/v1/collections/{collection.pk}/checks").json()) == 2


def test_a_check_names_a_file_of_its_own_collection(course, client_for, owner, make_collection):
    collection, source = course
    other = make_collection("Other course")
    refused = add(client_for(owner), other, "When is the exam?", file_id=source.pk)
    assert refused.status_code == 400
    assert "file of this collection" in refused.json()["detail"]
    blank = add(client_for(owner), collection, "   ", file_id=source.pk)
    assert blank.status_code == 400 and "question" in blank.json()["detail"]


def test_a_language_change_runs_the_checks_once_the_reindex_is_done(course, client_for, owner, run_worker):
    collection, source = course
    api = client_for(owner)
    add(api, collection, "When is the exam?", file_id=source.pk, section="Exam")
    run(api, collection)
    changed = api.patch(
        f"/api/v1/collections/{collection.pk}", {"language": "swedish"}, content_type="application/json"
    )
    assert changed.status_code == 200
    # Waiting for the re-index: nothing ran yet.
    assert CheckRun.objects.filter(collection=collection, pending=True, trigger="language").exists()
    assert CheckRun.objects.filter(collection=collection, pending=False).count() == 1
    run_worker()
    latest = CheckRun.objects.filter(collection=collection).order_by("-id").first()
    assert latest.trigger == "language" and not latest.pending and latest.ran_at is not None
    assert latest.total == 1
    source.refresh_from_db()
    assert source.status == FileStatus.READY


def test_reindex_command_runs_the_checks_after_the_last_file(course, client_for, owner, run_worker):
    from django.core.management import call_command

    collection, source = course
    add(client_for(owner), collection, "When is the exam?", file_id=source.pk, section="Exam")
    call_command("reindex", "--collection", str(collection.pk))
    run_worker()
    latest = CheckRun.objects.filter(collection=collection).order_by("-id").first()
    assert latest is not None and latest.trigger == "reindex" and latest.passed == 1


def test_a_worse_setting_shows_its_regression_first(course, client_for, owner, settings):
    collection, source = course
    api = client_for(owner)
    missing = add(api, collection, "Is there a field trip?", file_id=source.pk, phrase="field trip").json()
    exam = add(api, collection, "When is the exam?", file_id=source.pk, section="Exam").json()
    before = run(api, collection)
    assert {r["check_id"]: r["passed"] for r in before["results"]} == {missing["id"]: False, exam["id"]: True}
    settings.SEARCH_RETRIEVER_DEPTH = 0  # every retriever returns nothing: search is as bad as it gets
    after = run(api, collection)
    assert [r["check_id"] for r in after["results"]] == [exam["id"], missing["id"]]
    assert after["results"][0]["changed"] == "newly_failing"
    assert after["results"][1]["changed"] is None  # failing before too: not news


def test_permissions_are_the_collections(course, client_for, owner, co_owner, other_teacher, student):
    collection, source = course
    url = f"/api/v1/collections/{collection.pk}/checks"
    made = add(client_for(co_owner), collection, "When is the exam?", file_id=source.pk)
    assert made.status_code == 201
    assert run(client_for(co_owner), collection)["total"] == 1
    for outsider in (other_teacher, student):
        api = client_for(outsider)
        assert api.get(url).status_code in (403, 404)
        assert add(api, collection, "Hacked?", file_id=source.pk).status_code in (403, 404)
        assert api.post(f"{url}/run", {}, content_type="application/json").status_code in (403, 404)
        assert api.delete(f"{url}/{made.json()['id']}").status_code in (403, 404)
    # A co-owner just removed is refused at the next request, on the API and the page alike.
    api = client_for(co_owner)
    collection.co_owners.remove(co_owner)
    assert api.get(url).status_code == 404
    assert api.post(f"{url}/run", {}, content_type="application/json").status_code == 404
    assert api.get(f"/collections/{collection.pk}/checks/").status_code == 404


def test_runs_call_no_model_unless_curation_is_asked_and_then_charge_the_budget(
    course, client_for, owner, ollama, settings
):
    from kernel.redis_client import get_redis

    collection, source = course
    api = client_for(owner)
    add(api, collection, "When is the exam?", file_id=source.pk, section="Exam")
    run(api, collection)
    assert ollama.chat_requests() == []
    run(api, collection, curate=True)
    assert ollama.chat_requests()  # the curation model judged the results
    spent = sum(int(get_redis().get(k) or 0) for k in get_redis().scan_iter(match="*:usage:*"))
    assert spent > 0
    settings.USER_WEEKLY_TOKEN_BUDGET = 1
    refused = api.post(f"/api/v1/collections/{collection.pk}/checks/run", {"curate": True},
                       content_type="application/json")  # fmt: skip
    assert refused.status_code == 429 and "allowance" in refused.json()["detail"]
    assert run(api, collection)["total"] == 1  # without curation it costs no tokens: still runs


def test_page_adds_runs_and_lists_the_newly_failing_first(course, client_for, owner):
    collection, source = course
    page = client_for(owner)
    url = f"/collections/{collection.pk}/checks/"
    response = page.post(
        url, {"action": "add", "question": "When is the exam?", "file_id": source.pk, "section": "Exam"}
    )
    assert response.status_code == 302
    response = page.post(url, {"action": "run"}, follow=True)
    text = response.content.decode()
    assert "1 of 1 test questions found their passage in the top 15." in text
    assert "Found at rank" in text
    prefilled = page.get(url + "?question=Milloin+on+tentti%3F").content.decode()
    assert 'value="Milloin on tentti?"' in prefilled
    refused = page.post(url, {"action": "add", "question": "", "file_id": source.pk}, follow=True)
    assert "Write the question a student would ask." in refused.content.decode()


def test_the_page_waits_for_a_run_until_its_results_are_stored(course, client_for, owner, run_worker):
    """A worker has claimed the run and is searching: the page says so and keeps looking, instead of
    showing the previous run as if nothing were coming (the race a loaded machine made visible)."""
    from datetime import timedelta

    from django.urls import reverse
    from django.utils import timezone

    collection, source = course
    api = client_for(owner)
    add(api, collection, "When is the exam?", file_id=source.pk, section="Exam")
    page = reverse("collection_checks", args=[collection.pk])
    checks.schedule_after_reindex(collection, "language")
    waiting = client_for(owner).get(page).content.decode()
    assert "A run will start by itself when the re-index has finished." in waiting
    assert 'http-equiv="refresh"' in waiting

    claimed = CheckRun.objects.get(collection=collection, pending=True)
    CheckRun.objects.filter(pk=claimed.pk).update(started_at=timezone.now())  # as a worker's claim leaves it
    running = client_for(owner).get(page).content.decode()
    assert "The test questions are running now" in running
    assert 'http-equiv="refresh"' in running
    # A re-index while it runs: the run under way searched the old index, so another one waits.
    checks.schedule_after_reindex(collection, "reindex")
    assert CheckRun.objects.filter(collection=collection, pending=True).count() == 2
    assert CheckRun.objects.get(pk=claimed.pk).trigger == "language"

    # A run whose worker died mid-run is taken again once it is stale; then the waiting one runs.
    stale = timezone.now() - timedelta(seconds=checks.STALE_RUN_SECONDS + 1)
    CheckRun.objects.filter(pk=claimed.pk).update(started_at=stale)
    assert checks.run_when_indexed(collection.pk).pk == claimed.pk
    assert checks.run_when_indexed(collection.pk).trigger == "reindex"
    assert checks.run_when_indexed(collection.pk) is None
    done = client_for(owner).get(page).content.decode()
    assert 'http-equiv="refresh"' not in done and "After a re-index" in done


# Curated runs are paid question by question ---------------------------------------------------------

EXAM_ONLY = b"# Exam\n\nThe final exam is on 12 December in hall B. Bring a calculator and your student card.\n"
QUESTIONS = ("When is the exam?", "Where is the exam?", "What do I bring to the exam?", "Is a calculator allowed?")


@pytest.fixture
def four_questions(fast_collection, ingest_upload, client_for, owner, ollama):
    """Four questions over a one-passage file; every curation call reports 100 tokens, so each
    curated question costs exactly 100."""
    from tests.fake_ollama import Reply

    source = ingest_upload(fast_collection, EXAM_ONLY, "exam.md")
    assert source.status == FileStatus.READY, source.error
    for question in QUESTIONS:
        assert add(client_for(owner), fast_collection, question, file_id=source.pk).status_code == 201
    verdict = '{"score": 9, "include": true, "reason": "It answers the question."}'
    ollama.responder = lambda body: Reply(content=verdict, prompt_tokens=100, completion_tokens=0)
    return fast_collection


def curated_questions(ollama) -> list[str]:
    """The test questions the curation model was asked about, in the order asked, each once."""
    asked: list[str] = []
    for body in ollama.chat_requests():
        text = body["messages"][-1]["content"]
        asked += [q for q in QUESTIONS if f"Query: {q}" in text and q not in asked]
    return asked


def test_a_curated_run_stops_at_the_first_question_the_budget_refuses(four_questions, client_for, owner, ollama,
                                                                     settings):  # fmt: skip
    settings.USER_WEEKLY_TOKEN_BUDGET = 200  # room for two questions' curation
    api = client_for(owner)
    done = run(api, four_questions, curate=True)
    assert curated_questions(ollama) == list(QUESTIONS[:2])  # the third was never sent to the model
    assert (done["stopped"], done["ran"], done["total"]) == ("budget", 2, 4)
    assert len(done["results"]) == 2 and done["passed"] == 2
    page = api.get(f"/collections/{four_questions.pk}/checks/").content.decode()
    assert "The run stopped after 2 of 4 questions: your weekly token budget had no room" in page
    # The budget is spent now: the next curated run is refused before its first question.
    refused = api.post(f"/api/v1/collections/{four_questions.pk}/checks/run", {"curate": True},
                       content_type="application/json")  # fmt: skip
    assert refused.status_code == 429 and "allowance" in refused.json()["detail"]
    assert curated_questions(ollama) == list(QUESTIONS[:2])


def test_a_curated_run_checks_at_most_the_configured_number_of_questions(four_questions, client_for, owner, ollama,
                                                                        settings):  # fmt: skip
    settings.CHECKS_MAX_CURATED_PER_RUN = 3
    api = client_for(owner)
    done = run(api, four_questions, curate=True)
    assert curated_questions(ollama) == list(QUESTIONS[:3])
    assert (done["stopped"], done["ran"], done["total"]) == ("limit", 3, 4)
    page = api.post(f"/collections/{four_questions.pk}/checks/", {"action": "run", "curate": "on"}, follow=True)
    text = page.content.decode()
    assert "3 of 3 test questions found their passage in the top 15." in text
    assert "The run stopped after 3 of 4 questions: a curated run checks at most 3 questions." in text
    # Without curation no model is asked and every question runs.
    requests = len(ollama.chat_requests())
    plain = run(api, four_questions)
    assert (plain["stopped"], plain["ran"], plain["total"]) == (None, 4, 4)
    assert len(ollama.chat_requests()) == requests


def test_a_gap_becomes_a_test_question_with_no_file_yet_which_runs_skip(course, client_for, owner):
    """A material gap has no file that answers it: the form offers "no file yet", chosen when the
    gap's link opens the form; the question is kept, shown as waiting for its file, and skipped by
    runs (and by the API's runs), which count only the questions a file can answer."""
    collection, source = course
    page = client_for(owner)
    url = f"/collections/{collection.pk}/checks/"
    form = page.get(url + "?question=Is+there+a+resit%3F&file=none").content.decode()
    assert '<option value="none" selected>' in form and "data-focus-on-load" in form
    assert "data-focus-on-load" not in page.get(url).content.decode()  # a plain visit chooses a file
    assert page.post(url, {"action": "add", "question": "Is there a resit?", "file_id": "none"}).status_code == 302
    api = client_for(owner)
    add(api, collection, "When is the exam?", file_id=source.pk, section="Exam")
    assert add(api, collection, "Can I bring notes?", file_id=None).status_code == 201

    listed = {c["question"]: c for c in api.get(f"/api/v1/collections/{collection.pk}/checks").json()}
    assert listed["Is there a resit?"]["expect"]["file_id"] is None
    assert listed["Can I bring notes?"]["expect"]["file_id"] is None
    done = run(api, collection)
    assert (done["passed"], done["total"], done["ran"]) == (1, 1, 1)
    text = page.get(url).content.decode()
    assert text.count('data-testid="check-no-file"') == 2
