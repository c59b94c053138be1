from django.core.management.base import BaseCommand, CommandError

from accounts.models import ApiToken, User


def _when(moment) -> str:
    return f"{moment:%Y-%m-%d %H:%M}" if moment else "-"


class Command(BaseCommand):
    help = "List a user's API tokens, or revoke one (by its prefix) or all of them."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--revoke", metavar="PREFIX", help="Revoke the token whose prefix this is (e.g. cc_AbCdE).")
        parser.add_argument("--revoke-all", action="store_true", help="Revoke every token of the user.")

    def handle(self, username, revoke, revoke_all, **options):
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"There is no user '{username}'.")
        tokens = ApiToken.objects.filter(user=user)
        if revoke_all:
            count, _ = tokens.delete()
            self.stdout.write(f"Revoked {count} token{'s' if count != 1 else ''} of '{username}'.")
            return
        if revoke:
            matches = tokens.filter(prefix=revoke.rstrip("…."))
            if matches.count() != 1:
                raise CommandError(f"'{username}' has no single token with the prefix '{revoke}'.")
            matches.delete()
            self.stdout.write(f"Revoked token {revoke} of '{username}'.")
            return
        self.stdout.write(f"{'prefix':10} {'name':20} {'created':16} {'last used':16} {'expires':16}")
        for t in tokens:
            expires = _when(t.expires) + (" (expired)" if t.expired else "")
            self.stdout.write(f"{t.prefix:10} {t.name[:20]:20} {_when(t.created):16} {_when(t.last_used):16} {expires}")
