from django.core.management.base import BaseCommand, CommandError

from currechat.health import check_model_server, check_redis


class Command(BaseCommand):
    help = "Check that Redis has the search module, and report the model server. Fails if Redis can't serve."

    def handle(self, **options):
        state = check_redis()
        if not state.ok:
            raise CommandError(state.detail)
        self.stdout.write(state.detail)
        models, _ = check_model_server()
        self.stdout.write(models.detail + ("" if models.ok else " Chat answers will quote passages without an LLM."))
