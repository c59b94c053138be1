from django.core.management.base import BaseCommand, CommandError

from accounts.models import ApiToken, User


class Command(BaseCommand):
    help = "Create an API token for USER and print it once (use it as 'Authorization: Bearer <token>')."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label to tell tokens apart.")
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="Expire after this many days (default API_TOKEN_DEFAULT_DAYS; 0: never).",
        )

    def handle(self, username, name, days, **options):
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"There is no user '{username}'.")
        if not user.is_active:
            raise CommandError(f"User '{username}' is inactive; activate them first.")
        if days is not None and days < 0:
            raise CommandError("--days must be 0 (never expires) or more.")
        token, raw = ApiToken.issue(user, name=name, days=days)
        self.stdout.write(raw)
        expiry = f"expires {token.expires:%Y-%m-%d %H:%M} UTC" if token.expires else "never expires"
        self.stderr.write(f"Token {token.prefix}… for '{username}' {expiry}. It is shown only once.")
