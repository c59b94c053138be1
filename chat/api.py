"""REST endpoints for prompts and joining them."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from ninja import Field, Router, Schema

from accounts.permissions import get_prompt_for_edit, require_teacher
from chat.enrollment import join_prompt
from chat.models import Prompt
from collections_app.models import Collection
from currechat.errors import CurreChatError

router = Router(tags=["prompts"])


class PromptIn(Schema):
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    system_prompt: str = ""
    model: str | None = None
    collection_ids: list[int] = Field(default_factory=list)
    curation_enabled: bool = True
    active: bool = True


class PromptPatch(Schema):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = None
    system_prompt: str | None = None
    model: str | None = None
    collection_ids: list[int] | None = None
    curation_enabled: bool | None = None
    active: bool | None = None


class PromptOut(Schema):
    id: int
    name: str
    description: str
    system_prompt: str
    model: str
    collection_ids: list[int]
    curation_enabled: bool
    active: bool
    join_code: str
    join_url: str
    student_count: int
    created: datetime


class JoinIn(Schema):
    code: str = Field(min_length=1, max_length=32)


class JoinedOut(Schema):
    id: int
    name: str
    description: str


def prompt_out(request, prompt: Prompt) -> dict:
    return {
        "id": prompt.id,
        "name": prompt.name,
        "description": prompt.description,
        "system_prompt": prompt.system_prompt,
        "model": prompt.chat_model,
        "collection_ids": sorted(c.id for c in prompt.collections.all()),
        "curation_enabled": prompt.curation_enabled,
        "active": prompt.active,
        "join_code": prompt.join_code,
        "join_url": request.build_absolute_uri(f"/join/{prompt.join_code}/"),
        "student_count": prompt.enrollments.count(),
        "created": prompt.created,
    }


def _own_collections(user, ids: list[int]) -> list[Collection]:
    found = list(Collection.objects.editable_by(user).filter(pk__in=ids))
    missing = sorted(set(ids) - {c.pk for c in found})
    if missing:
        raise CurreChatError(f"You cannot connect collection(s) {missing}: they don't exist or aren't yours.")
    return found


@router.get("/prompts", response=list[PromptOut])
def list_prompts(request):
    require_teacher(request.user)
    return [prompt_out(request, p) for p in Prompt.objects.editable_by(request.user).prefetch_related("collections")]


@router.post("/prompts", response={201: PromptOut})
def create_prompt(request, data: PromptIn):
    require_teacher(request.user)
    collections = _own_collections(request.user, data.collection_ids)
    with transaction.atomic():
        prompt = Prompt.objects.create(
            owner=request.user,
            name=data.name.strip(),
            description=data.description,
            system_prompt=data.system_prompt,
            chat_model=data.model or Prompt._meta.get_field("chat_model").get_default(),
            curation_enabled=data.curation_enabled,
            active=data.active,
        )
        prompt.collections.set(collections)
    return 201, prompt_out(request, prompt)


@router.get("/prompts/{int:prompt_id}", response=PromptOut)
def get_prompt(request, prompt_id: int):
    return prompt_out(request, get_prompt_for_edit(request.user, prompt_id))


@router.patch("/prompts/{int:prompt_id}", response=PromptOut)
def update_prompt(request, prompt_id: int, data: PromptPatch):
    prompt = get_prompt_for_edit(request.user, prompt_id)
    changes = data.dict(exclude_unset=True)
    with transaction.atomic():
        for field, attr in [
            ("name", "name"),
            ("description", "description"),
            ("system_prompt", "system_prompt"),
            ("model", "chat_model"),
            ("curation_enabled", "curation_enabled"),
            ("active", "active"),
        ]:
            if changes.get(field) is not None:
                setattr(prompt, attr, changes[field])
        prompt.save()
        if changes.get("collection_ids") is not None:
            prompt.collections.set(_own_collections(request.user, changes["collection_ids"]))
    return prompt_out(request, prompt)


@router.delete("/prompts/{int:prompt_id}", response={204: None})
def delete_prompt(request, prompt_id: int):
    get_prompt_for_edit(request.user, prompt_id).delete()
    return 204, None


@router.post("/prompts/join", response=JoinedOut)
def join(request, data: JoinIn):
    prompt = join_prompt(request.user, data.code)
    return {"id": prompt.id, "name": prompt.name, "description": prompt.description}
