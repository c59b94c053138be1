"""The insight page: a prompt's statistics, material gaps and feedback for its teachers."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from access.rules import (
    get_prompt_for_edit,
    search_page,
)
from chat.insight import chart as insight_chart
from chat.insight import csv_export as insight_csv
from chat.insight import feedback
from chat.insight import stats as insight
from chat.models import ChatVisibility

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
    }
    return render(request, "prompts/insight.html", context)


def _checks_page(user, prompt) -> str | None:
    """The test-questions page of the first of the prompt's collections `user` may edit, if any."""
    from collections_app.models import Collection

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
