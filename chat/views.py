"""Prompt pages for teachers, and the chat pages of a prompt."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.permissions import get_prompt_for_chat, get_prompt_for_edit, get_session_for_read, require_teacher
from chat import writes
from chat.agent import fail_orphaned_replies, new_session
from chat.forms import PromptForm
from chat.models import ChatSession
from chat.serializers import message_dict
from currechat.errors import NotFound
from currechat.health import get_health


@login_required
@require_http_methods(["GET", "POST"])
def prompt_create(request):
    require_teacher(request.user)
    form = PromptForm(request.POST or None, actor=request.user)
    if request.method == "POST" and form.is_valid():
        prompt = writes.create_prompt(request.user, form.changes())
        messages.success(request, f"Prompt “{prompt.name}” created. Share its join link with your students.")
        return redirect("prompt_detail", pk=prompt.pk)
    return render(request, "prompts/form.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def prompt_detail(request, pk: int):
    prompt = get_prompt_for_edit(request.user, pk)
    form = PromptForm(request.POST or None, instance=prompt, actor=request.user)
    if request.method == "POST" and form.is_valid():
        writes.update_prompt(request.user, prompt, form.changes())
        messages.success(request, "Prompt saved.")
        return redirect("prompt_detail", pk=prompt.pk)
    join_url = request.build_absolute_uri(f"/join/{prompt.join_code}/")
    enrollments = prompt.enrollments.select_related("student")
    # What students asked: their chats on this prompt, newest first (read-only for the teacher).
    chats = prompt.sessions.exclude(user=request.user).select_related("user")[:100]
    context = {"prompt": prompt, "form": form, "join_url": join_url, "enrollments": enrollments, "chats": chats}
    return render(request, "prompts/detail.html", context)


@login_required
@require_POST
def prompt_delete(request, pk: int):
    prompt = get_prompt_for_edit(request.user, pk)
    name = prompt.name
    prompt.delete()
    messages.success(request, f"Prompt “{name}” deleted.")
    return redirect("home")


# --- Chat pages ------------------------------------------------------------------------------------


def _model_status(prompt) -> dict:
    """The status line of a chat: is the prompt's model connected, or do answers quote passages?"""
    health = get_health()
    connected = health.has_model(prompt.chat_model)
    if connected:
        text = f"Model {prompt.chat_model} connected."
    elif health.model_server.ok:
        text = f"Model {prompt.chat_model} is not on the model server: answers quote the material without it."
    else:
        text = "No language model connected: answers quote the course material without a language model."
    return {"connected": connected, "model": prompt.chat_model, "text": text}


def _chat_page(request, prompt, session):
    owner = session.user if session else request.user
    sessions = ChatSession.objects.filter(prompt=prompt, user=owner)
    config = {
        "session_id": session.id if session else None,
        "ws_path": f"/ws/chats/{session.id}/" if session else None,
        "api_path": f"/api/v1/chats/{session.id}" if session else None,
        "writable": bool(session and session.is_writable_by(request.user)),
        "messages": [message_dict(m) for m in session.messages.all()] if session else [],
        "model_status": _model_status(prompt),
    }
    context = {
        "prompt": prompt,
        "session": session,
        "sessions": sessions,
        "read_only_owner": owner if owner.id != request.user.id else None,
        "can_start": prompt.active and owner.id == request.user.id,
        "chat_config": config,
    }
    return render(request, "chat/chat.html", context)


@login_required
def chat_home(request, pk: int):
    """A prompt's chats: straight into the latest one, so a student can ask at once.

    A first visit opens a fresh chat (only when the user has none, so reloading creates nothing).
    """
    prompt = get_prompt_for_chat(request.user, pk)
    latest = ChatSession.objects.filter(prompt=prompt, user=request.user).first()
    if latest is None and prompt.active:
        latest = new_session(request.user, pk)
    if latest is not None:
        return redirect("chat_session", pk=pk, session_id=latest.pk)
    return _chat_page(request, prompt, None)


@login_required
@require_POST
def chat_new(request, pk: int):
    session = new_session(request.user, pk)
    return redirect("chat_session", pk=pk, session_id=session.pk)


@login_required
def chat_session(request, pk: int, session_id: int):
    """One conversation: its student writes in it; the prompt's teacher reads it."""
    session = get_session_for_read(request.user, session_id)
    if session.prompt_id != pk:
        raise NotFound("There is no such chat.")
    fail_orphaned_replies(session)
    return _chat_page(request, session.prompt, session)
