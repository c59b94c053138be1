"""Demo data for a fresh instance: a teacher, a student, a collection and a prompt the student joined.

Running it again reuses what exists and prints the same passwords (kept in var/demo_credentials).
"""

import secrets
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app.models import Collection

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
        user, _ = User.objects.get_or_create(username=username, defaults={"role": role, **extra})
        user.role = role
        for key, value in extra.items():
            setattr(user, key, value)
        user.set_password(password)
        user.save()
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
        self.stdout.write(
            "Demo accounts:\n"
            f"  teacher (also admin): demo-teacher / {teacher_pw}\n"
            f"  student:              demo-student / {student_pw}\n"
            f"  demo prompt join code: {prompt.join_code}"
        )
