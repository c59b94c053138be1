from django.conf import settings
from django.core.management.base import BaseCommand

from chat.insight.retention import purge_expired


class Command(BaseCommand):
    help = (
        "Delete chats older than their retention (CHAT_RETENTION_DAYS, or a prompt's shorter value). "
        "Statistics and material gaps keep their counts. The worker also runs this once a day."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Only say how many chats would be deleted.")

    def handle(self, **options):
        report = purge_expired(dry_run=options["dry_run"])
        verb = "Would delete" if options["dry_run"] else "Deleted"
        site = settings.CHAT_RETENTION_DAYS
        kept = f"{site} days" if site else "forever"
        self.stdout.write(
            f"{verb} {report.chats} chat(s) with {report.messages} message(s) "
            f"(the site keeps chats {kept}; some prompts keep them less)."
        )
