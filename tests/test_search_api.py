"""POST /api/v1/collections/{id}/search and the "Try a search" page: who may search, what they get."""

from __future__ import annotations

import json

import pytest

from accounts.models import ApiToken
from tests.fake_ollama import Reply
from tests.fixtures_search import index_texts

TEXTS = [
    "The median is the middle value of an ordered data set.",
    "The mean is the sum of the values divided by their count.",
    "<script>alert('x')</script> Outliers pull the mean but not the median.",
]


@pytest.fixture
def indexed(search_collection):
    index_texts(search_collection, TEXTS, file_id=4, file_name="averages.md", section="Ch 1 > Averages", page=3)
    return search_collection


def api_search(client, collection_id: int, **body):
    return client.post(f"/api/v1/collections/{collection_id}/search", json.dumps(body), content_type="application/json")


ALLOWED = {"owner": 200, "co_owner": 200, "other_teacher": 404, "student": 200, "other_student": 404}


@pytest.mark.parametrize("who", list(ALLOWED))
def test_api_search_is_for_owners_co_owners_and_joined_students_only(request, indexed, prompt, client_for, who):
    response = api_search(client_for(request.getfixturevalue(who)), indexed.id, query="median", curate=False)
    assert response.status_code == ALLOWED[who]
    if response.status_code == 200:
        assert response.json()["results"][0]["text"] == TEXTS[0]
    else:
        assert "median" not in response.content.decode()


def test_anonymous_api_search_is_refused(indexed, client_for):
    response = api_search(client_for(None), indexed.id, query="median")
    assert response.status_code == 401


def test_a_student_loses_search_when_the_prompt_is_switched_off(indexed, prompt, student, client_for):
    prompt.active = False
    prompt.save()
    assert api_search(client_for(student), indexed.id, query="median", curate=False).status_code == 404


def test_a_student_cannot_search_a_collection_of_a_prompt_they_did_not_join(
    make_collection, prompt, student, client_for
):
    unjoined = make_collection("Private notes")
    index_texts(unjoined, ["secret exam answers"])
    assert api_search(client_for(student), unjoined.id, query="exam answers", curate=False).status_code == 404


def test_api_search_returns_passages_with_sources_and_timings(indexed, owner, client_for):
    data = api_search(client_for(owner), indexed.id, query="middle value", curate=False, limit=2).json()
    assert data["status"] == "ok"
    assert len(data["results"]) == 2
    top = data["results"][0]
    assert {k: top[k] for k in ("file_id", "file_name", "page", "section")} == {
        "file_id": 4,
        "file_name": "averages.md",
        "page": 3,
        "section": "Ch 1 > Averages",
    }
    assert top["chunk_id"].endswith(":4:0") and top["score"] > 0
    assert top["sources"]["exact"] == 1 and "vector" in top["sources"]
    assert {"embed", "retrieve", "fuse", "fetch", "total"} <= set(data["timings_ms"])


def test_api_search_with_curation_reports_what_was_dropped(indexed, owner, client_for, ollama):
    ollama.responder = lambda r: Reply(
        content=json.dumps({"score": 8, "include": "middle value" in r["messages"][-1]["content"], "reason": "checked"})
    )
    data = api_search(client_for(owner), indexed.id, query="median").json()
    assert [r["text"] for r in data["results"]] == [TEXTS[0]]
    assert data["results"][0]["curation_score"] == 8
    assert {d["text"] for d in data["dropped"]} == {TEXTS[1], TEXTS[2]}
    assert all(d["included"] is False and d["curation_reason"] == "checked" for d in data["dropped"])


def test_programs_search_with_a_bearer_token(indexed, co_owner, client_for):
    _, raw = ApiToken.issue(co_owner)
    response = client_for(None).post(
        f"/api/v1/collections/{indexed.id}/search",
        json.dumps({"query": "mean", "curate": False}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert response.status_code == 200 and response.json()["results"]


@pytest.mark.parametrize(
    ("body", "status"), [({"query": ""}, 422), ({"query": "   "}, 400), ({"query": "x", "limit": 99}, 422)]
)
def test_api_search_rejects_bad_input_with_a_reason(indexed, owner, client_for, body, status):
    response = api_search(client_for(owner), indexed.id, **body)
    assert response.status_code == status
    assert response.json()["detail"]


PAGE = {"owner": 200, "co_owner": 200, "other_teacher": 404, "student": 200, "other_student": 404}


@pytest.mark.parametrize("who", list(PAGE))
def test_search_page_is_for_the_same_people_as_the_api(request, indexed, prompt, client_for, who):
    response = client_for(request.getfixturevalue(who)).get(f"/collections/{indexed.id}/search/?q=median")
    assert response.status_code == PAGE[who]
    assert (TEXTS[0] in response.content.decode()) == (PAGE[who] == 200)


def test_search_page_sends_anonymous_visitors_to_log_in(indexed, client_for):
    response = client_for(None).get(f"/collections/{indexed.id}/search/?q=median")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_search_page_shows_retrievers_and_curation_decisions(indexed, owner, client_for, ollama):
    ollama.responder = lambda r: Reply(
        content=json.dumps(
            {"score": 7, "include": "Outliers" not in r["messages"][-1]["content"], "reason": "Not about averages."}
        )
    )
    page = client_for(owner).get(f"/collections/{indexed.id}/search/?q=mean&curate=1").content.decode()
    assert "exact phrase (place 1)" in page and "meaning (place " in page
    assert "Place 1 of 2 after combining the searches." in page and "the curation model rated it 7 out of 10" in page
    assert "Left out (1)" in page and "Not about averages." in page
    assert "<script>" not in page and "Outliers pull the mean" in page  # passage HTML is sanitised


def test_search_page_renders_passages_as_markdown(search_collection, owner, client_for):
    index_texts(search_collection, ["The **median** resists outliers:\n\n| x | y |\n|---|---|\n| 1 | 2 |"])
    page = client_for(owner).get(f"/collections/{search_collection.id}/search/?q=median").content.decode()
    assert "<strong>median</strong>" in page and "<table>" in page and "**median**" not in page


def test_search_page_without_a_query_shows_only_the_form(indexed, owner, client_for, ollama):
    page = client_for(owner).get(f"/collections/{indexed.id}/search/").content.decode()
    assert 'name="q"' in page and "result" not in page.split('role="search"')[1].split("</form>")[1]
    assert ollama.requests == [] or all(path != "/api/chat" for path, _ in ollama.requests)


def test_search_page_unticked_curation_asks_no_model(indexed, owner, client_for, ollama):
    page = client_for(owner).get(f"/collections/{indexed.id}/search/?q=median").content.decode()
    assert TEXTS[0] in page
    assert ollama.chat_requests() == []
