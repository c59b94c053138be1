from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = _("Prompts and chats")

    def ready(self) -> None:
        # Imported here: these modules import models, which Django loads only after this module.
        from django.db.models.signals import post_delete

        from chat.checks import auto
        from chat.course.answer_changes import answers_changed
        from chat.insight import answers
        from collections_app.models import SourceFile
        from collections_app.signals import file_changed, ingestion_ended, reindex_started

        # A teacher's answer expires when a file it cites changes. The collections app announces
        # that through signals, since it may not import the chat app (docs/ARCHITECTURE.md).
        file_changed.connect(answers.on_file_changed, dispatch_uid="teacher_answers_file_changed")
        post_delete.connect(answers.on_file_deleted, sender=SourceFile, dispatch_uid="teacher_answers_file_deleted")
        # Answer checks run after a re-index of a prompt's collection, once its last file is done,
        # and after a change of what a prompt's answers depend on (the course room sits below them).
        reindex_started.connect(auto.on_reindex_started, dispatch_uid="answer_checks_reindex_started")
        ingestion_ended.connect(auto.on_ingestion_ended, dispatch_uid="answer_checks_ingestion_ended")
        answers_changed.connect(auto.on_answers_changed, dispatch_uid="answer_checks_answers_changed")
