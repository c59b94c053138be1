from django.core.management.base import BaseCommand

from chat.insight.stats import backfill


class Command(BaseCommand):
    help = (
        "Count the answers stored before teacher statistics existed (prompts without any statistics yet). "
        "Run once after upgrading, before chats are purged; running it again counts nothing twice."
    )

    def handle(self, **options):
        self.stdout.write(f"Counted {backfill()} stored answer(s) into the statistics and material gaps.")
