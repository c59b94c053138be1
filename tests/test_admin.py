"""The Django admin is usable for every model."""

from __future__ import annotations

import pytest
from django.contrib import admin

from collections_app.models import FileStatus
from kernel.redis_client import get_redis
from rag.index import CollectionIndex
from tests.fixtures_ingest import scanned

MODELS = [m for m in admin.site._registry if m._meta.app_label in ("accounts", "collections_app", "chat")]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m._meta.label)
def test_admin_lists_and_opens_every_model(client_for, admin_user, prompt, model):
    client = client_for(admin_user)
    opts = model._meta
    changelist = client.get(f"/admin/{opts.app_label}/{opts.model_name}/")
    assert changelist.status_code == 200
    instance = model.objects.first()
    if instance is not None:
        assert client.get(f"/admin/{opts.app_label}/{opts.model_name}/{instance.pk}/change/").status_code == 200


def test_every_model_is_registered():
    from django.apps import apps

    for app in ("accounts", "collections_app", "chat"):
        for model in apps.get_app_config(app).get_models():
            assert model in admin.site._registry, model


def test_non_staff_cannot_open_admin(client_for, owner):
    assert client_for(owner).get("/admin/").status_code == 302


def test_changing_a_collections_language_in_the_admin_reindexes_its_files(
    fast_collection, ingest_upload, client_for, admin_user, run_worker
):
    source = ingest_upload(fast_collection, "Taloissa asuu ihmisiä.".encode(), "talot.txt")
    form = {
        "name": fast_collection.name,
        "description": "",
        "language": "finnish",
        "embedding_model": fast_collection.embedding_model,
        "owner": fast_collection.owner.pk,
        "files-TOTAL_FORMS": "1",
        "files-INITIAL_FORMS": "1",
        "files-MIN_NUM_FORMS": "0",
        "files-MAX_NUM_FORMS": "1000",
        "files-0-id": str(source.pk),
        "files-0-collection": str(fast_collection.pk),
    }
    response = client_for(admin_user).post(f"/admin/collections_app/collection/{fast_collection.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    source.refresh_from_db()
    assert source.status == FileStatus.QUEUED
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY
    scanned(fast_collection)
    index = CollectionIndex.index_name(fast_collection.pk)
    assert get_redis().ft(index).search("talo").total == 1, "Finnish stemming finds the inflected word"
