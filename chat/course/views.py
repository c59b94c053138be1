"""The pages of running a course: a prompt's settings, join code, students and their budgets."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from access.resets import student_for_reset
from access.rules import (
    get_prompt_for_edit,
    get_prompt_for_owner,
    is_prompt_owner,
    require_teacher,
    state_sentence,
)
from accounts.invitation_views import InvitationViews
from accounts.picker import invited_addresses
from accounts.reset_requests import mail_reset_to_student
from accounts.resets import mail_configured
from chat.course import allowances, enrollment, roster, writes
from chat.course.forms import PromptForm
from chat.metering import usage
from chat.models import ChatSession, EnrollmentStatus
from kernel.errors import InvalidInput, NotFound
from kernel.framing import embeddable


@login_required
@require_http_methods(["GET", "POST"])
def prompt_create(request):
    require_teacher(request.user)
    form = PromptForm(request.POST or None, request.FILES or None, actor=request.user)
    if request.method == "POST" and form.is_valid():
        prompt = writes.create_prompt(request.user, form.changes())
        messages.success(
            request, _("Prompt “%(name)s” created. Share its join link with your students.") % {"name": prompt.name}
        )
        _invitations.invite_after_save(request, prompt, invited_addresses(request.POST, "co_teachers"))
        return redirect("prompt_detail", pk=prompt.pk)
    return render(request, "prompts/form.html", {"form": form})


@embeddable  # an instructor's launch from a learning platform lands here, inside the platform's frame
@login_required
@require_http_methods(["GET", "POST"])
def prompt_detail(request, pk: int):
    prompt = get_prompt_for_edit(request.user, pk)
    form = PromptForm(request.POST or None, request.FILES or None, instance=prompt, actor=request.user)
    if request.method == "POST" and form.is_valid():
        writes.update_prompt(request.user, prompt, form.changes())
        messages.success(request, _("Prompt saved."))
        _invitations.invite_after_save(request, prompt, invited_addresses(request.POST, "co_teachers"))
        return redirect("prompt_detail", pk=prompt.pk)
    return _invitations.page_with_form(request, prompt, form, "co_teachers")


def _detail_page(request, prompt, form=None, *, status: int = 200, invitations: dict | None = None):
    form = PromptForm(instance=prompt, actor=request.user) if form is None else form  # None: unbound
    join_url = request.build_absolute_uri(f"/join/{prompt.join_code}/")
    # What students asked: their chats on this prompt, newest first, as the privacy level allows.
    chats = (
        ChatSession.objects.readable_by(request.user)
        .filter(prompt=prompt)
        .exclude(user=request.user)
        .select_related("user")[:100]
    )
    students = roster.roster(prompt)
    context = {
        "prompt": prompt,
        "form": form,
        "join_url": join_url,
        "embed_code": _embed_code(join_url, prompt.name),
        "embedding_enabled": bool(settings.EMBED_ALLOWED_ORIGINS),
        "students": students,
        # Counted as the teacher's home counts them: enrolled now (removed and blocked are listed apart).
        "enrolled_count": sum(1 for s in students if s.status == EnrollmentStatus.ENROLLED),
        "not_started_count": sum(1 for s in students if s.not_started),
        "exempt": usage.budget_for(prompt, request.user.pk)[1],
        "chats": list(zip(chats, roster.chat_labels(prompt, chats), strict=True)),
        "state": prompt.state(),
        "state_sentence": state_sentence(prompt),
        "is_owner": is_prompt_owner(request.user, prompt),
        "unavailable": list(prompt.unavailable_collections()),
        "invitations": invitations,  # the owner's: who else is invited (None: no section)
    }
    return render(request, "prompts/detail.html", context, status=status)


_invitations = InvitationViews(writes.PROMPT_INVITATIONS, "prompt_detail", find=get_prompt_for_edit, page=_detail_page)
invitation_urls = _invitations.urls()  # routed by urls.py


def _embed_code(join_url: str, title: str) -> str:
    """An iframe for a learning platform's page: the join link enrolls the student and opens the chat."""
    # A plain str (escaped values, not marked safe): the page shows it as text in an input.
    return (
        f'<iframe src="{escape(join_url)}" title="{escape(title)}" width="100%" height="720" '
        'style="border:0" allow="clipboard-write"></iframe>'
    )


@login_required
@require_POST
def prompt_delete(request, pk: int):
    prompt = get_prompt_for_owner(request.user, pk)
    name = prompt.name
    prompt.delete()
    messages.success(request, _("Prompt “%(name)s” deleted.") % {"name": name})
    return redirect("home")


@login_required
@require_POST
def prompt_duplicate(request, pk: int):
    copy = writes.duplicate_prompt(request.user, get_prompt_for_edit(request.user, pk))
    messages.success(
        request,
        _("“%(name)s” created: same settings and collections, a new join code, no students.") % {"name": copy.name},
    )
    return redirect("prompt_detail", pk=copy.pk)


@login_required
@require_POST
def prompt_rotate_code(request, pk: int):
    prompt = get_prompt_for_edit(request.user, pk)
    enrollment.rotate_join_code(prompt)
    messages.success(request, _("New join code made; the old code and link no longer work."))
    return redirect("prompt_detail", pk=pk)


_STUDENT_ACTIONS = {
    "remove": (
        lambda e: enrollment.remove_student(e),
        gettext_lazy("%(label)s removed; they can join again with the code."),
    ),
    "block": (
        lambda e: enrollment.remove_student(e, block=True),
        gettext_lazy("%(label)s removed and blocked from joining again."),
    ),
    "readmit": (enrollment.readmit_student, gettext_lazy("%(label)s enrolled again.")),
}


@login_required
@require_POST
def student_action(request, pk: int, number: int, action: str):
    prompt = get_prompt_for_edit(request.user, pk)
    if action not in _STUDENT_ACTIONS:
        raise NotFound(_("There is no such action."))
    found = roster.enrollment_by_number(prompt, number)
    act, sentence = _STUDENT_ACTIONS[action]
    act(found)
    messages.success(request, sentence % {"label": roster.label_for(prompt, found)})
    return redirect("prompt_detail", pk=pk)


@login_required
@require_POST
def student_budget(request, pk: int, number: int):
    """The roster's budget buttons: reset the student's week, or give them a weekly budget of
    their own (empty: the prompt's again), through the write the API makes."""
    prompt = get_prompt_for_edit(request.user, pk)
    found = roster.enrollment_by_number(prompt, number)
    label = roster.label_for(prompt, found)
    if request.POST.get("action") == "reset":
        allowances.change_student_budget(prompt, found.student_id, reset=True)
        messages.success(request, _("%(label)s can use their whole weekly budget again.") % {"label": label})
    else:
        raw = "".join(request.POST.get("weekly_token_budget", "").split())
        try:
            allowances.change_student_budget(prompt, found.student_id, weekly_token_budget=int(raw) if raw else None)
        except (ValueError, InvalidInput):
            messages.error(request, _("Give the weekly budget as a whole number of tokens, 0 or more."))
        else:
            messages.success(request, _("%(label)s's weekly budget changed.") % {"label": label})
    return redirect(f"{reverse('prompt_detail', args=[pk])}#students")


@login_required
@require_POST
def exempt_myself(request, pk: int):
    """A teacher of the prompt switches its budgets off (or on again) for their own chats."""
    prompt = get_prompt_for_edit(request.user, pk)
    exempt = request.POST.get("exempt") == "1"
    allowances.set_exempt(request.user.pk, prompt, exempt)
    if exempt:
        messages.success(request, _("The weekly budget no longer applies to your own chats here."))
    else:
        messages.success(request, _("The weekly budget applies to your own chats here again."))
    return redirect(f"{reverse('prompt_detail', args=[pk])}#students")


# --- A student's password -------------------------------------------------------------------------
class ResetForm(forms.Form):
    username = forms.CharField(
        label=gettext_lazy("Username"), max_length=150, help_text=gettext_lazy("The student tells you their username.")
    )


@login_required
@require_http_methods(["GET", "POST"])
def start_reset(request):
    """A teacher asks CurreChat to mail one of their students a link to choose a new password. The
    link goes only to the student's own address and the page answers the same whoever the username
    is (superusers make links in the admin)."""
    require_teacher(request.user)
    form = ResetForm(request.POST or None) if mail_configured() else None
    asked_for = ""
    if form is not None and request.method == "POST" and form.is_valid():
        asked_for = form.cleaned_data["username"].strip()
        mail_reset_to_student(request, student_for_reset(request.user, asked_for))
        form = ResetForm()
    return render(request, "accounts/start_reset.html", {"form": form, "asked_for": asked_for})
