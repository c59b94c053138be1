"""The Django admin is usable for every model."""

from __future__ import annotations

import pytest
from django.contrib import admin

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
