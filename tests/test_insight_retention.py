"""Retention: exactly the chats past their prompt's retention are deleted, by the daily job in the
worker and by `manage.py purge_chats`; statistics and gaps keep their counts."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from chat.insight import retention
from chat.insight import stats as insight
from chat.models import ChatSession, Enrollment, Feedback, Message, MessageRole, Prompt
from tests.test_insight import answer


def aged(prompt, user, days: float, question: str = "Q") -> ChatSession:
    chat = ChatSession.objects.create(prompt=prompt, user=user)
    answer(chat, question, searches=[(f"missing topic {question}", "nothing_relevant", 0, 0)], tokens=(10, 1))
    ChatSession.objects.filter(pk=chat.pk).update(updated=timezone.now() - timedelta(days=days))
    return chat


@pytest.fixture
def prompts(prompt, owner, student):
    short = Prompt.objects.create(owner=owner, name="Short", retention_days=7)
    longer = Prompt.objects.create(owner=owner, name="Longer than the site", retention_days=90)
    for p in (short, longer):
        Enrollment.objects.create(student=student, prompt=p)
    return prompt, short, longer


def test_purge_deletes_exactly_the_expired_chats(settings, prompts, student):
    settings.CHAT_RETENTION_DAYS = 30
    site, short, longer = prompts
    keep = [aged(site, student, 29), aged(short, student, 6), aged(longer, student, 29)]
    gone = [aged(site, student, 31), aged(short, student, 8), aged(longer, student, 31, "late")]
    before = {p.pk: insight.statistics(p, 365) for p in prompts}
    gaps_before = {p.pk: [(g.query, g.count) for g in insight.gaps(p)] for p in prompts}

    dry = retention.purge_expired(dry_run=True)
    assert (dry.chats, dry.messages) == (3, 6) and ChatSession.objects.count() == 6
    report = retention.purge_expired()
    assert (report.chats, report.messages) == (3, 6)
    assert set(ChatSession.objects.values_list("pk", flat=True)) == {c.pk for c in keep}
    assert not Message.objects.filter(session_id__in=[c.pk for c in gone]).exists()
    for p in prompts:
        assert insight.statistics(p, 365) == before[p.pk], "statistics keep their counts"
        assert [(g.query, g.count) for g in insight.gaps(p)] == gaps_before[p.pk]
    late = next(g for g in insight.gaps(longer) if g.query == "missing topic late")
    assert late.example is None, "a deleted chat's question is no longer shown as an example"


def test_without_a_site_limit_only_prompts_with_their_own_value_are_purged(settings, prompts, student):
    settings.CHAT_RETENTION_DAYS = 0
    site, short, longer = prompts
    aged(site, student, 4000)
    aged(short, student, 8)
    aged(longer, student, 91)
    assert retention.purge_expired().chats == 2
    assert list(ChatSession.objects.values_list("prompt_id", flat=True)) == [site.pk]


def test_retention_days_takes_the_shorter_value(settings, prompts):
    settings.CHAT_RETENTION_DAYS = 30
    site, short, longer = prompts
    assert [retention.retention_days(p) for p in prompts] == [30, 7, 30]
    settings.CHAT_RETENTION_DAYS = 0
    assert [retention.retention_days(p) for p in prompts] == [None, 7, 90]


def test_feedback_counts_survive_the_purge(settings, prompt, student):
    settings.CHAT_RETENTION_DAYS = 30
    from chat.insight.feedback import give_feedback

    chat = aged(prompt, student, 1)
    give_feedback(chat.messages.get(role=MessageRole.ASSISTANT), "up", "Nice")
    ChatSession.objects.filter(pk=chat.pk).update(updated=timezone.now() - timedelta(days=40))
    assert retention.purge_expired().chats == 1
    assert not Feedback.objects.exists()
    assert insight.statistics(prompt, 30).feedback == {"up": 1, "down": 0}


def test_purge_chats_command(settings, prompt, student):
    settings.CHAT_RETENTION_DAYS = 30
    aged(prompt, student, 40)
    out = StringIO()
    call_command("purge_chats", "--dry-run", stdout=out)
    assert "Would delete 1 chat(s) with 2 message(s)" in out.getvalue()
    assert ChatSession.objects.count() == 1
    call_command("purge_chats", stdout=out)
    assert "Deleted 1 chat(s)" in out.getvalue() and ChatSession.objects.count() == 0


def test_the_worker_schedules_one_daily_purge_that_reschedules_itself(settings, prompt, student, run_worker):
    import django_rq

    from chat.tasks import purge_expired_chats
    from currechat.worker import schedule_daily_jobs

    settings.CHAT_RETENTION_DAYS = 30
    queue = django_rq.get_queue("default")
    scheduled = queue.scheduled_job_registry

    def purges() -> int:  # the worker also schedules other daily chains (topics mail, roster sync)
        jobs = [queue.fetch_job(job_id) for job_id in scheduled.get_job_ids()]
        return sum(1 for job in jobs if job is not None and "purge_expired_chats" in repr(job.args) + job.func_name)

    schedule_daily_jobs()
    chains = scheduled.count
    schedule_daily_jobs()  # a second worker starting: no second chain
    assert scheduled.count == chains
    assert purges() == 1
    aged(prompt, student, 40)
    # Run the job now, on the real worker and queue, as the scheduler would when it is due.
    purge_expired_chats.enqueue()
    run_worker()
    assert ChatSession.objects.count() == 0
    assert purges() == 2, "the run queued the next one (the first is still waiting for its time)"


def test_backfill_counts_answers_stored_before_statistics_existed_once(prompt, student):
    chat = ChatSession.objects.create(prompt=prompt, user=student)
    Message.objects.create(session=chat, role=MessageRole.USER, content="Old question")
    Message.objects.create(
        session=chat,
        role=MessageRole.ASSISTANT,
        content="Old answer",
        tool_results=[{"query": "ancient topic", "status": "nothing_relevant", "passages": []}],
        token_usage={"prompt_tokens": 5, "completion_tokens": 2},
    )
    out = StringIO()
    call_command("backfill_insight", stdout=out)
    assert "Counted 1 stored answer(s)" in out.getvalue()
    call_command("backfill_insight", stdout=out)
    assert "Counted 0 stored answer(s)" in out.getvalue()
    stats = insight.statistics(prompt, 30)
    assert (stats.chats, stats.messages, stats.tokens) == (1, 2, 7)
    assert [(g.query, g.count, g.example) for g in insight.gaps(prompt)] == [("ancient topic", 1, "Old question")]
