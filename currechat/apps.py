from django.apps import AppConfig


class CurreChatConfig(AppConfig):
    name = "currechat"

    def ready(self) -> None:
        # The library reads no Django settings: its configuration is handed in here, first, before
        # any app's start could reach a model server (rag/config.py).
        from currechat import ragconfig

        ragconfig.connect()
        # The shell wires the apps together: curated searches are charged to the chat app's weekly
        # budgets through the meter the collections app declares, since it may not import chat
        # (collections_app/metering.py, docs/ARCHITECTURE.md). Imported here: the chat app's
        # models load only after this module.
        from chat.metering.usage import reserve
        from collections_app import metering

        metering.plug_in(reserve)
