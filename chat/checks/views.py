"""The "Answer checks" pages of a prompt: the list with the live and the draft run side by side,
adding (by hand or from a starting point), running, trying and applying a draft, the run history,
and a check's detail with its unsupported sentences marked. Permission as for the prompt's settings
(owners and co-teachers, as they are now), then one domain function per action, as the API does.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from access.rules import get_prompt_for_edit
from chat.checks import expect as check_writes
from chat.checks import reading, runs, starters
from chat.checks.grounded import sentences
from chat.checks.verdicts import GROUNDED_FLOOR
from chat.course.forms import chat_model_choices
from chat.course.writes import attachable_collections
from chat.models import AnswerCheck, AnswerCheckRun, RunStop
from collections_app.models import FileStatus, SourceFile
from kernel.errors import CurreChatError
from rag.providers import available_models


def _form_spec(post) -> dict:
    """The page form's fields as the one write path reads them (facts: one per line, `|` between
    alternatives; forbidden: one phrase per line)."""
    expect: dict = {"facts": post.get("facts", ""), "forbidden": post.get("forbidden", "")}
    if post.get("file_id"):
        expect["cites"] = {"file_id": post.get("file_id"), "page": post.get("page"), "section": post.get("section")}
    for name in ("refuses", "searches"):
        if post.get(name) in ("yes", "no"):
            expect[name] = post.get(name) == "yes"
    return {"question": post.get("question", ""), "expect": expect}


def _draft_spec(post) -> dict:
    return {
        "model": post.get("model", "").strip() or None,
        "system_prompt": post.get("system_prompt", ""),
        "curation": post.get("curation") == "on",
        "collection_ids": [int(i) for i in post.getlist("collection_ids") if i.isdigit()],
    }


def _row_id(value: str | None) -> int:
    """A row's id as the page's form sends it; 0, which no row has, for anything but digits."""
    return int(value) if value and value.isdigit() else 0


def _act(request, prompt, action: str) -> str:
    """Do the page's action; the sentence the teacher reads."""
    if action == "add":
        check_writes.create_check(request.user, prompt, _form_spec(request.POST))
        return _("Answer check added.")
    if action == "start":
        starters.add_start(request.user, prompt, request.POST.get("kind", ""), _row_id(request.POST.get("key")))
        return _("Answer check added; change its expectations below if they are not what you want.")
    if action == "adversarial":
        added = starters.add_adversarial(request.user, prompt)
        return _("%(count)s adversarial checks added.") % {"count": len(added)}
    if action == "delete":
        get_object_or_404(AnswerCheck, prompt=prompt, pk=_row_id(request.POST.get("check_id"))).delete()
        return _("Answer check removed.")
    if action == "run":
        runs.start_run(request.user, prompt)
        return _("The answer checks are running; their results appear here when each question is answered.")
    if action == "draft":
        runs.start_run(request.user, prompt, draft=_draft_spec(request.POST))
        return _("The draft is being tried; the live assistant is unchanged.")
    if action == "apply":
        run = get_object_or_404(AnswerCheckRun, prompt=prompt, pk=request.POST.get("run_id") or 0)
        runs.apply_draft(request.user, run)
        return _("The draft is now the live assistant; its answer checks run again.")
    raise CurreChatError(_("Unknown action."))


@login_required
@require_http_methods(["GET", "POST"])
def answer_checks(request, pk: int):
    prompt = get_prompt_for_edit(request.user, pk)
    if request.method == "POST":
        try:
            messages.success(request, _act(request, prompt, request.POST.get("action", "")))
            return redirect("answer_checks", pk=prompt.pk)
        except CurreChatError as exc:
            messages.error(request, str(exc))
    live = reading.latest_live(prompt)
    chosen = request.GET.get("run")
    if chosen and chosen.isdigit():
        live = get_object_or_404(AnswerCheckRun, prompt=prompt, pk=int(chosen), draft__isnull=True)
    draft = reading.latest_draft(prompt)
    context = {
        "prompt": prompt,
        "rows": reading.rows(prompt, live, draft),
        "live": live,
        "draft": draft,
        "under_way": runs.under_way(prompt).order_by("created").first(),
        "history": prompt.answer_check_runs.all()[:12],
        "offers": starters.offers(prompt),
        "files": SourceFile.objects.filter(collection__in=prompt.collections.all(), status=FileStatus.READY)
        .select_related("collection")
        .order_by("original_name"),
        "collections": attachable_collections(request.user, prompt).order_by("name"),
        "draft_ids": set((draft.draft or {}).get("collection_ids", [])) if draft else set(),
        "live_ids": set(prompt.collections.values_list("pk", flat=True)),
        "models": chat_model_choices(available_models(), [prompt.chat_model]),
        "floor": round(GROUNDED_FLOOR * 100),
        "stop_budget": RunStop.BUDGET,
        "stop_limit": RunStop.LIMIT,
        "form": request.POST if request.method == "POST" else {"question": request.GET.get("question", "")[:500]},
    }
    return render(request, "prompts/answer_checks.html", context)


@login_required
def answer_check_detail(request, pk: int, check_id: int):
    """A check's answer in a run (the latest live one unless `?run=`), its unsupported sentences marked."""
    prompt = get_prompt_for_edit(request.user, pk)
    check = get_object_or_404(AnswerCheck, prompt=prompt, pk=check_id)
    results = check.results.select_related("run").order_by("-run__created", "-run_id")
    chosen = request.GET.get("run")
    if chosen and chosen.isdigit():
        results = results.filter(run_id=int(chosen))
    else:
        results = results.filter(run__draft__isnull=True)
    result = results.first()
    marked = []
    if result is not None:
        unsupported = set(result.unsupported)
        marked = [(s, s in unsupported) for s in sentences(result.answer, quoted=result.mode == "extractive")]
    names = dict(SourceFile.objects.filter(collection__prompts=prompt).values_list("pk", "original_name"))
    context = {
        "prompt": prompt,
        "check": check,
        "result": result,
        "marked": marked,
        "cites_name": names.get(int((check.expect.get("cites") or {}).get("file_id") or 0)),
        "history": check.results.select_related("run").order_by("-run__created")[:10],
    }
    return render(request, "prompts/answer_check_detail.html", context)
