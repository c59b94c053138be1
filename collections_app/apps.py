from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CollectionsAppConfig(AppConfig):
    name = "collections_app"
    verbose_name = _("Source material")
