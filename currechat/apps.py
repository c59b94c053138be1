from django.apps import AppConfig
from django.core.signals import request_finished
from django.db import connections


def close_request_connections(**_kwargs) -> None:
    """Close the database connections of the thread that served a request, at its end.

    Under ASGI each request runs in a thread of its own that ends with it (asgiref's per-request
    context), so a connection kept for DATABASE_CONN_MAX_AGE outlived its thread, open and unusable,
    until a garbage collection happened to close it: a rolling restart during 50 streaming chats ran
    PostgreSQL out of its 1,000 connections. Long-lived threads (the chat turns' pool, the stream
    saves) keep theirs. A connection inside a transaction (a test's) is left to its owner."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()


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
        # An id no key can be matches nothing in an `in` list too, as Django answers for `=` (kernel/records.py).
        from django.db.models import IntegerField

        from kernel.records import StorableIn

        IntegerField.register_lookup(StorableIn)
        request_finished.connect(close_request_connections, dispatch_uid="currechat.close_request_connections")
