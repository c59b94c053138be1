"""Demo data for a fresh instance: a teacher, a student, a collection with one small course file
(queued for ingestion) and a prompt the student joined.

Running it again reuses what exists and prints the same passwords (kept in var/demo_credentials);
the demo file is uploaded once (a later run queues it again only if its ingestion failed).
"""

import secrets
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app import files
from collections_app.models import Collection, FileStatus
from kernel.errors import CurreChatError

# An excerpt of OpenStax's "Introduction to Python Programming" (CC BY 4.0; see demo/README.md).
DEMO_FILE = Path(settings.BASE_DIR) / "demo" / "python-loops.md"

DEMO_SYSTEM_PROMPT = (
    "You are a friendly teaching assistant for an introductory course. Answer the student's questions "
    "from the course material, explain step by step, and ask a question back when the student seems stuck."
)


class Command(BaseCommand):
    help = "Create (or reuse) the demo teacher, student, collection and prompt, and print the logins."

    def _password(self, username: str) -> str:
        store = Path(settings.VAR_DIR) / "demo_credentials"
        store.parent.mkdir(parents=True, exist_ok=True)
        known = (
            dict(line.split(" ", 1) for line in store.read_text().splitlines() if " " in line) if store.exists() else {}
        )
        if username not in known:
            known[username] = secrets.token_urlsafe(9)
            store.write_text("".join(f"{k} {v}\n" for k, v in known.items()))
            store.chmod(0o600)
        return known[username]

    def _user(self, username: str, role: str, **extra) -> tuple[User, str]:
        password = self._password(username)
        user, created = User.objects.get_or_create(username=username, defaults={"role": role, **extra})
        user.role = role
        for key, value in extra.items():
            setattr(user, key, value)
        # The password only when the account is made: setting it again at every `make run` would
        # sign everyone out (a session is checked against the password's hash, new salt each time)
        # and undo a password its user chose.
        if created:
            user.set_password(password)
        user.save()
        if not created and not user.check_password(password):
            return user, "(changed since it was made; reset it with manage.py changepassword)"
        return user, password

    @transaction.atomic
    def handle(self, **options):
        teacher, teacher_pw = self._user("demo-teacher", Role.TEACHER, is_staff=True, is_superuser=True)
        student, student_pw = self._user("demo-student", Role.STUDENT)
        collection, _ = Collection.objects.get_or_create(
            owner=teacher,
            name="Demo course material",
            defaults={"description": "Upload your course files here.", "language": "english"},
        )
        prompt, _ = Prompt.objects.get_or_create(
            owner=teacher,
            name="Demo course assistant",
            defaults={"description": "Ask about the demo course material.", "system_prompt": DEMO_SYSTEM_PROMPT},
        )
        prompt.collections.add(collection)
        Enrollment.objects.get_or_create(student=student, prompt=prompt)
        transaction.on_commit(lambda: self._demo_file(collection, teacher))
        self.stdout.write(
            "Demo accounts:\n"
            f"  teacher (also admin): demo-teacher / {teacher_pw}\n"
            f"  student:              demo-student / {student_pw}\n"
            f"  demo prompt join code: {prompt.join_code}"
        )

    def _demo_file(self, collection: Collection, teacher: User) -> None:
        """Upload the demo file once; queue it again only when an earlier ingestion failed."""
        existing = collection.files.filter(original_name=DEMO_FILE.name).first()
        try:
            if existing is None:
                with DEMO_FILE.open("rb") as handle:
                    files.add_file(collection, File(handle, name=DEMO_FILE.name), teacher)
                self.stdout.write(f"Demo file {DEMO_FILE.name} queued for ingestion.")
            elif existing.status in (FileStatus.FAILED, FileStatus.CANCELLED):
                files.requeue(existing)
                self.stdout.write(f"Demo file {DEMO_FILE.name} queued again (it was {existing.status}).")
        except CurreChatError as exc:  # no queue yet: the rest of the demo is still usable
            self.stderr.write(f"Demo file not queued: {exc}")
