"""The weekly mail of a prompt's topics, for the teachers who opted in, in each one's language.

The worker runs `mail_weekly` once a day (`chat.tasks.schedule_mail`, as the chat purge is scheduled): each
subscription gets last week's topics once (`last_sent_week`), so a worker that was down on Monday
sends them on its next run. The digest is built on the subscriber's budget when no one opened the
week's topics yet (chat/insight/topics.py). A teacher who no longer teaches the prompt, or has no
address, gets nothing. Every mail carries a link that unsubscribes without signing in (a random
token per subscription): the link's page asks, with one button, and a POST to it stops the mail, so a
mail program's one-click unsubscribe (RFC 8058's headers) stops it too, but a scanner that opens every
link of a mail does not.
"""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _

from accounts import mail
from chat.insight import topics
from chat.models import DigestSubscription, Prompt

log = logging.getLogger(__name__)

RUN_EVERY = timedelta(days=1)


def subscribe(user, prompt: Prompt, site: str) -> DigestSubscription:
    """Opt `user` (who teaches `prompt`: the caller checked) in; `site` is where links point."""
    row, _created = DigestSubscription.objects.get_or_create(
        user=user, prompt=prompt, defaults={"token": secrets.token_urlsafe(32), "site": site.rstrip("/")}
    )
    return row


def unsubscribe(user, prompt: Prompt) -> None:
    DigestSubscription.objects.filter(user=user, prompt=prompt).delete()


def subscription_by_token(token: str) -> DigestSubscription | None:
    """The subscription a mail's link is for, or None for an unknown or used token."""
    return DigestSubscription.objects.select_related("prompt").filter(token=token).first() if token else None


def unsubscribe_by_token(token: str) -> DigestSubscription | None:
    """The link in a mail: the subscription it ended, or None for an unknown or used token."""
    row = subscription_by_token(token)
    if row is not None:
        row.delete()
    return row


def mail_weekly(now=None) -> int:
    """Mail last week's topics to every subscriber not yet sent them; returns the mails sent."""
    week = topics.week_of(now).before()
    due = DigestSubscription.objects.exclude(last_sent_week=week.label).select_related("user", "prompt")
    sent = 0
    for row in due:
        if not row.user.email or not row.prompt.is_taught_by(row.user):
            continue
        try:
            done = mail_one(row, week)
        except topics.TopicsUnavailable:
            log.warning("The topics of prompt %s wait for the model server: mailed on a later run", row.prompt_id)
            continue
        if done:
            DigestSubscription.objects.filter(pk=row.pk).update(last_sent_week=week.label)
            sent += 1
    return sent


def mail_one(row: DigestSubscription, week: topics.Week) -> bool:
    """One subscriber's mail of `week`; False (logged) when the mail server failed."""
    prompt, user = row.prompt, row.user
    language = mail.language_of(user)
    with translation.override(language):
        before = topics.digest(prompt, week.before(), user)  # first: this week's topics follow it
        found = topics.digest(prompt, week, user)
        context = {
            "prompt": prompt,
            "week": week,
            "last_day": week.end - timedelta(days=1),
            "topics": topics.shown(prompt, found),
            "now": topics.totals(found),
            "before": topics.totals(before),
            "insight_url": row.site + reverse("prompt_insight", args=[prompt.pk]) + "#topics",
            "unsubscribe_url": row.site + reverse("digest_unsubscribe", args=[row.token]),
        }
        subject = _("The week's topics in “%(prompt)s”") % {"prompt": prompt.name}
        body = render_to_string("prompts/topics_mail.txt", context)
    headers = {
        "Content-Language": language,
        "List-Unsubscribe": f"<{context['unsubscribe_url']}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    }
    return mail.send(user, subject, body, about=f"the week's topics of prompt {prompt.pk}", headers=headers)
