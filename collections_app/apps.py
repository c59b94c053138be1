from django.apps import AppConfig


class CollectionsAppConfig(AppConfig):
    name = "collections_app"
    verbose_name = "Source material"
