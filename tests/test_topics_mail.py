"""The weekly topics mail: opted in on the insight page, sent by the worker's task through a real
SMTP server in each teacher's language, once a week, and stopped by its link without signing in."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from chat.insight import topics
from chat.models import DigestSubscription
from kernel.formats import day
from tests.fake_smtp import SmtpServer
from tests.test_topics import EXAM, asks, students

MINILM = "local:all-MiniLM-L6-v2"


@pytest.fixture
def smtp(settings):
    server = SmtpServer().start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    yield server.inbox
    server.stop()


@pytest.fixture
def last_week(prompt, collection, ollama):
    """Three students asked about the exam last week; no model to name it (named by its words)."""
    ollama.models = []
    collection.embedding_model = MINILM
    collection.save()
    when = timezone.now() - timedelta(days=7)
    for user, text in zip(students(prompt, 3), EXAM, strict=False):
        asks(prompt, user, text, when=when)
    return topics.week_of(when)


@pytest.fixture
def teachers(prompt, owner, co_owner, other_teacher):
    """The owner reads Finnish, a co-teacher Swedish, another co-teacher English."""
    prompt.co_teachers.add(co_owner, other_teacher)
    for user, language in ((owner, "fi"), (co_owner, "sv"), (other_teacher, "en")):
        user.email, user.language = f"{user.username}@uni.example", language
        user.save()
    return {"fi": owner, "sv": co_owner, "en": other_teacher}


def test_each_teacher_gets_the_weeks_topics_in_their_language(
    teachers, last_week, prompt, client_for, smtp, run_worker, student
):
    from chat.tasks import mail_weekly_topics

    for user in teachers.values():
        response = client_for(user).post(f"/prompts/{prompt.pk}/insight/topics-mail/", {"subscribe": "1"})
        assert response.status_code == 302
    client_for(student).post(f"/prompts/{prompt.pk}/insight/topics-mail/", {"subscribe": "1"})  # refused
    assert DigestSubscription.objects.count() == 3

    mail_weekly_topics.enqueue()
    run_worker()
    by_address = {m["To"]: m for m in smtp.messages}
    assert sorted(by_address) == sorted(u.email for u in teachers.values())
    for language, user in teachers.items():
        mail = by_address[user.email]
        body = mail.get_body(preferencelist=("plain",)).get_content()
        with translation.override(language):
            assert mail["Subject"] == _("The week's topics in “%(prompt)s”") % {"prompt": prompt.name}
            assert day(last_week.start) in body, "the week's dates as the teacher's language writes them"
        assert mail["Content-Language"] == language
        assert "exam" in body and "When is the final exam?" in body
        link = DigestSubscription.objects.get(user=user).token
        assert f"http://testserver/prompts/topics-mail/stop/{link}/" in body
        assert str(mail["List-Unsubscribe"]).strip() == f"<http://testserver/prompts/topics-mail/stop/{link}/>"

    mail_weekly_topics.enqueue()
    run_worker()
    assert len(smtp.messages) == 3, "a week's topics are mailed once"


def test_the_link_stops_the_mail_in_one_click_without_signing_in(teachers, last_week, prompt, client, smtp):
    from chat.insight import digest_mail

    row = digest_mail.subscribe(teachers["en"], prompt, "http://testserver/")
    link = f"/prompts/topics-mail/stop/{row.token}/"
    # Opening the link asks (a mail scanner or a link preview opens every link of a mail)...
    page = client.get(link).content.decode()
    assert "Stop the mail of the week's topics" in page and 'data-testid="stop-mail"' in page
    assert DigestSubscription.objects.count() == 1
    # ...its button (or a mail program's one-click POST, RFC 8058) stops the mail.
    stopped = client.post(link)
    assert stopped.status_code == 200 and "You will no longer get the week's topics" in stopped.content.decode()
    assert not DigestSubscription.objects.exists()
    again = client.post(link)
    assert again.status_code == 200 and "used already" in again.content.decode()
    assert "used already" in client.get(link).content.decode()
    assert client.put(link).status_code == 405
    assert digest_mail.mail_weekly() == 0 and smtp.messages == []


def test_a_teacher_who_left_the_prompt_gets_no_mail(teachers, last_week, prompt, smtp):
    from chat.insight import digest_mail

    digest_mail.subscribe(teachers["sv"], prompt, "http://testserver")
    prompt.co_teachers.remove(teachers["sv"])
    assert digest_mail.mail_weekly() == 0 and smtp.messages == []
