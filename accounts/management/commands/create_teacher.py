import getpass

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.models import Role, User


class Command(BaseCommand):
    help = "Create a teacher account (or make an existing user a teacher)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument("--password", help="Asked for interactively when left out.")

    def handle(self, username, email, password, **options):
        user = User.objects.filter(username=username).first()
        if user is not None:
            user.role = Role.TEACHER
            user.save(update_fields=["role"])
            self.stdout.write(f"'{username}' is now a teacher.")
            return
        if password is None:
            password = getpass.getpass("Password: ")
        candidate = User(username=username, email=email)
        try:
            validate_password(password, candidate)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        User.objects.create_user(username=username, email=email, password=password, role=Role.TEACHER)
        self.stdout.write(f"Teacher '{username}' created.")
