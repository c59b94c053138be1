from django.core.management.base import BaseCommand, CommandError

from currechat.health import (
    ServiceState,
    bundled_redis_warning,
    check_model_server,
    check_openai_server,
    check_redis,
)
from rag.providers.registry import why_unreachable


class Command(BaseCommand):
    help = "Check that Redis has the search module, and report the model server. Fails if Redis can't serve."

    def handle(self, **options):
        state = check_redis()
        if not state.ok:
            raise CommandError(state.detail)
        self.stdout.write(state.detail)
        bundled = bundled_redis_warning()
        if bundled:
            self.stdout.write(self.style.WARNING(bundled))
        stale = _stale_collections()
        if stale:
            self.stdout.write(
                self.style.WARNING(
                    f"{len(stale)} collection index(es) were built by an older CurreChat ({', '.join(stale)}): "
                    "some words are not found until they are rebuilt with `python manage.py reindex --stale`."
                )
            )
        servers: list[tuple[str, ServiceState | None]] = [
            ("ollama", check_model_server()),
            ("openai", check_openai_server()),
        ]
        for kind, server in servers:
            if server is None:  # no such server configured
                continue
            if server.ok:
                self.stdout.write(server.detail)
                continue
            # Why, in the sentence a chat would give (a certificate not trusted, a refusal, ...).
            self.stdout.write(self.style.WARNING(f"{server.detail} {why_unreachable(kind) or ''}".strip()))
            if kind == "ollama":
                self.stdout.write("Chat answers will quote passages without an LLM.")


def _stale_collections() -> list[str]:
    """Collections whose index has an older storage format; none before the first `migrate`."""
    from django.db import DatabaseError

    from collections_app.management.commands.reindex import stale_collection_ids
    from collections_app.models import Collection

    try:
        ids = stale_collection_ids(Collection.objects.all())
    except DatabaseError:  # check_services runs before migrate on a fresh install
        return []
    return [f"{c.name} (#{c.pk})" for c in Collection.objects.filter(pk__in=ids).order_by("pk")]
