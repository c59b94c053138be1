"""The insight page: a prompt's statistics, material gaps and feedback for its teachers; the week at a
glance on it (topics this week against last, the teachers' own answers, the weekly mail); and the
mail's unsubscribe link, which needs no sign-in."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from access.rules import (
    get_prompt_for_edit,
    search_page,
)
from chat.insight import answers, digest_mail, feedback, topics
from chat.insight import chart as insight_chart
from chat.insight import csv_export as insight_csv
from chat.insight import stats as insight
from chat.models import (
    AnswerMode,
    ChatVisibility,
    DigestSubscription,
    Message,
    MessageRole,
    MessageStatus,
    Prompt,
    TeacherAnswer,
    TopicDigest,
    TutorMode,
)
from collections_app.models import Collection, FileStatus, SourceFile
from kernel.errors import CurreChatError

# --- Teacher insight -------------------------------------------------------------------------------
INSIGHT_PERIODS = (7, 30, 90, 365)


@login_required
def prompt_insight(request, pk: int):
    """Statistics, material gaps and feedback of a prompt, for its teachers (the privacy level of
    each chat decides what of its text is shown; see chat/insight/stats.py and chat/insight/feedback.py)."""
    prompt = get_prompt_for_edit(request.user, pk)
    try:
        days = int(request.GET.get("days", 30))
    except ValueError:
        days = 30
    days = days if days in INSIGHT_PERIODS else 30
    stats = insight.statistics(prompt, days)
    search = search_page(request.user, prompt)
    gap_rows = [(gap, insight_csv.search_url(search, gap.query)) for gap in insight.gaps(prompt, limit=200)]
    context = {
        "prompt": prompt,
        "days": days,
        "periods": INSIGHT_PERIODS,
        "stats": stats,
        "chart": insight_chart.messages_chart(stats.by_day, _("Messages per day, last %(days)s days") % {"days": days}),
        "busy_days": [d for d in reversed(stats.by_day) if d.messages],
        "gaps": gap_rows,
        "open_gaps": sum(1 for gap, _ in gap_rows if not gap.handled),
        "feedback": feedback.feedback_rows(prompt, limit=50),
        "visibility": ChatVisibility(prompt.chat_visibility),
        # Students' questions (gaps, rated answers) can become a collection's test questions.
        "checks_page": _checks_page(request.user, prompt),
        "min_students": settings.TOPICS_MIN_STUDENTS,
        **guard_context(prompt, stats),
        **week_context(request, prompt),
    }
    return render(request, "prompts/insight.html", context)


def guard_context(prompt: Prompt, stats: insight.Statistics) -> dict[str, bool]:
    """Which of the guards' counts the page shows: the leak guard's for a guided prompt, the safety
    check's where the site has one, and either wherever it has counted something (a prompt switched
    back to off keeps its history)."""
    guided = prompt.tutor_mode == TutorMode.GUIDE
    moderated = bool(settings.MODERATION_MODEL)
    counted = any(stats.leak_guard.values()) or any(stats.moderation.values())
    return {"guided": guided, "moderated": moderated, "safety_shown": guided or moderated or counted}


def _checks_page(user, prompt) -> str | None:
    """The test-questions page of the first of the prompt's collections `user` may edit, if any."""
    collection = prompt.collections.filter(pk__in=Collection.objects.editable_by(user).values("pk")).first()
    return reverse("collection_checks", args=[collection.pk]) if collection else None


@login_required
@require_POST
def gap_handled(request, pk: int, gap_id: int):
    prompt = get_prompt_for_edit(request.user, pk)
    handled = request.POST.get("handled", "1") == "1"
    row = insight.mark_gap_handled(prompt, gap_id, handled=handled)
    if handled:
        sentence = _("“%(query)s” marked handled; it comes back if students ask it again.")
    else:
        sentence = _("“%(query)s” open again.")
    messages.success(request, sentence % {"query": row.query})
    return redirect(f"{reverse('prompt_insight', args=[pk])}#gaps")


# --- The week at a glance ---------------------------------------------------------------------------
def week_context(request, prompt: Prompt) -> dict[str, Any]:
    """What the page's week sections show: `?week=` or this week, against the week before."""
    try:
        week = topics.parse_week(request.GET.get("week"))
    except CurreChatError:
        week = topics.week_of()
    # The week before first: each topic of this week is followed back into it as it is built.
    try:
        before = topics.digest(prompt, week.before(), request.user)
        found = topics.digest(prompt, week, request.user)
    except topics.TopicsUnavailable as exc:  # the rest of the page still helps
        messages.warning(request, str(exc))
        before = found = TopicDigest(prompt=prompt, week=week.label, questions=0, topics=[])
    rows = TeacherAnswer.objects.filter(prompt=prompt)
    question = request.GET.get("question", "")
    return {
        "week": week,
        "week_before": week.before(),
        "week_after": None if week == topics.week_of() else topics.week_of(week.end),
        "topics": topics.shown(prompt, found),
        "week_now": topics.totals(found),
        "week_then": topics.totals(before),
        "teacher_answers": sorted(rows, key=lambda r: (not r.expired, -r.updated.timestamp())),
        "expired_answers": sum(1 for r in rows if r.expired),
        "answer_question": question,
        "answer_draft": model_draft(prompt, question) if question else "",
        "citable_files": citable_files(prompt),
        "subscribed": DigestSubscription.objects.filter(user=request.user, prompt=prompt).exists(),
    }


def citable_files(prompt: Prompt):
    usable = prompt.usable_collections()
    return SourceFile.objects.filter(collection__in=usable, status=FileStatus.READY).order_by("original_name")[:200]


def model_draft(prompt: Prompt, question: str) -> str:
    """The assistant's latest complete answer to this very question in a chat its teachers may read:
    the model's draft a teacher may accept (it cost its student's call; this one costs nothing)."""
    key = answers.question_key(question)
    asked = (
        Message.objects.filter(session__prompt=prompt, role=MessageRole.USER, content__iexact=question.strip())
        .exclude(session__visibility=ChatVisibility.NONE)
        .order_by("-id")[:20]
    )
    for message in asked:
        if answers.question_key(message.content) != key:
            continue
        reply = (
            Message.objects.filter(session_id=message.session_id, role=MessageRole.ASSISTANT, id__gt=message.id)
            .exclude(mode=AnswerMode.TEACHER)
            .order_by("id")
            .first()
        )
        if reply is not None and reply.status == MessageStatus.COMPLETE and reply.content.strip():
            return reply.content
    return ""


@login_required
@require_POST
def save_teacher_answer(request, pk: int):
    """Create (or with `answer_id` change) a teacher's answer from the page's form."""
    prompt = get_prompt_for_edit(request.user, pk)
    answer_id = request.POST.get("answer_id")
    instance = answers.get_answer(prompt, int(answer_id)) if answer_id and answer_id.isdigit() else None
    files: list[dict] | None = [{"file_id": int(f)} for f in request.POST.getlist("sources") if f.isdigit()]
    if instance is not None and {f["file_id"] for f in files or []} == {s["file_id"] for s in instance.sources}:
        files = None  # the same files: keep the passages it cites in them
    try:
        row = answers.save_answer(
            prompt,
            request.user,
            question=request.POST.get("question", ""),
            answer=request.POST.get("answer", ""),
            sources=files,
            instance=instance,
        )
    except CurreChatError as exc:
        messages.error(request, str(exc))
        return redirect(f"{reverse('prompt_insight', args=[pk])}#teacher-answers")
    messages.success(request, _("Students who ask “%(question)s” now get your answer.") % {"question": row.question})
    return redirect(f"{reverse('prompt_insight', args=[pk])}#teacher-answers")


@login_required
@require_POST
def delete_teacher_answer(request, pk: int, answer_id: int):
    prompt = get_prompt_for_edit(request.user, pk)
    row = answers.get_answer(prompt, answer_id)
    answers.delete_answer(row)
    messages.success(request, _("Your answer to “%(question)s” was deleted.") % {"question": row.question})
    return redirect(f"{reverse('prompt_insight', args=[pk])}#teacher-answers")


@login_required
@require_POST
def topics_mail(request, pk: int):
    """Opt in to (or out of) the weekly mail of the prompt's topics."""
    prompt = get_prompt_for_edit(request.user, pk)
    if request.POST.get("subscribe") == "1":
        if not request.user.email:
            messages.error(request, _("Add an email address to your account first; the mail goes there."))
        else:
            digest_mail.subscribe(request.user, prompt, request.build_absolute_uri("/"))
            messages.success(request, _("You will get the week's topics by mail every Monday."))
    else:
        digest_mail.unsubscribe(request.user, prompt)
        messages.success(request, _("You will no longer get the week's topics by mail."))
    return redirect(f"{reverse('prompt_insight', args=[pk])}#topics")


@csrf_exempt  # the mail's link, and mail programs' one-click POST (RFC 8058), come without a session
@require_http_methods(["GET", "POST"])
def unsubscribe(request, token: str) -> HttpResponse:
    """The mail's link: no sign-in. Opening it (GET) asks, with one button; only a POST stops the
    mail (the button, or a mail program's one-click unsubscribe): mail scanners and link previews
    open every link of a mail, and must not stop it. An unknown or used token says so plainly."""
    if request.method == "GET":
        row = digest_mail.subscription_by_token(token)
        context = {"prompt": row.prompt if row else None, "asking": row is not None}
        return render(request, "prompts/topics_unsubscribed.html", context)
    row = digest_mail.unsubscribe_by_token(token)
    return render(request, "prompts/topics_unsubscribed.html", {"prompt": row.prompt if row else None})
