from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = _("Prompts and chats")

    def ready(self) -> None:
        # A teacher's answer expires when a file it cites changes. The collections app announces
        # that through signals, since it may not import the chat app (docs/ARCHITECTURE.md).
        from django.db.models.signals import post_delete

        from chat.insight import answers
        from collections_app.models import SourceFile
        from collections_app.signals import file_changed

        file_changed.connect(answers.on_file_changed, dispatch_uid="teacher_answers_file_changed")
        post_delete.connect(answers.on_file_deleted, sender=SourceFile, dispatch_uid="teacher_answers_file_deleted")
        # Answer checks run after a re-index of a prompt's collection, once its last file is done.
        from chat.checks import auto
        from collections_app.signals import ingestion_ended, reindex_started

        reindex_started.connect(auto.on_reindex_started, dispatch_uid="answer_checks_reindex_started")
        ingestion_ended.connect(auto.on_ingestion_ended, dispatch_uid="answer_checks_ingestion_ended")
