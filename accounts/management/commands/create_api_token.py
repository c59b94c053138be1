from django.core.management.base import BaseCommand, CommandError

from accounts.models import ApiToken, User


class Command(BaseCommand):
    help = "Create an API token for USER and print it once (use it as 'Authorization: Bearer <token>')."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label to tell tokens apart.")

    def handle(self, username, name, **options):
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"There is no user '{username}'.")
        if not user.is_active:
            raise CommandError(f"User '{username}' is inactive; activate them first.")
        _, raw = ApiToken.issue(user, name=name)
        self.stdout.write(raw)
