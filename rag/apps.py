from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RagConfig(AppConfig):
    name = "rag"
    verbose_name = _("Retrieval")
