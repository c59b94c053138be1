"""Students join prompts by code."""

from __future__ import annotations

from accounts.permissions import Forbidden, require_login
from chat.models import Enrollment, Prompt
from currechat.errors import NotFound


def join_prompt(user, code: str) -> Prompt:
    """Enroll a student in the active prompt with this join code (idempotent)."""
    require_login(user)
    prompt = Prompt.objects.filter(join_code=code.strip().upper()).first()
    if prompt is None or not prompt.active:
        raise NotFound("No active assistant has this join code. Check the code with your teacher.")
    if prompt.owner_id == user.id:
        raise Forbidden("This is your own prompt; teachers don't need to join their own prompts.")
    Enrollment.objects.get_or_create(student=user, prompt=prompt)
    return prompt
