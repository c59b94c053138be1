"""Users with a role, and API tokens for programs."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from kernel.errors import InvalidInput


class Role(models.TextChoices):
    TEACHER = "teacher", _("Teacher")
    STUDENT = "student", _("Student")
    # Made by accepting an invitation to co-teach (accounts/invitations.py): co-teaches what it was
    # invited to, and nothing else a teacher may (no prompts or collections of its own).
    GUEST = "guest", _("Co-teacher by invitation")


# Usernames a campus sign-in (sso/provision.py) or a platform launch (lti/provision.py) makes from a
# hash: nobody knows a person by them.
MADE_USERNAME_PREFIXES = ("sso-", "lti-")


class User(AbstractUser):
    """A CurreChat user. Teachers own collections and prompts; students join prompts."""

    role = models.CharField(_("role"), max_length=16, choices=Role.choices, default=Role.STUDENT)
    # Empty: follow the browser (Accept-Language). Set by the language switcher (accounts/views.py).
    language = models.CharField(
        _("interface language"), max_length=8, blank=True, default="", choices=settings.LANGUAGES
    )
    # The address its owner proved to CurreChat by following a link CurreChat mailed to it
    # (accounts/confirmation.py), exactly as it was then; emptied by `save` whenever `email` changes.
    # Only this address may link a campus sign-in to the account (sso/provision.py): an address
    # merely typed on a profile, or set by an administrator or a platform, proves nothing.
    email_confirmed = models.EmailField(_("confirmed email address"), blank=True, default="", editable=False)
    # When the last link was followed: a link made before it no longer works (single use).
    email_confirmed_at = models.DateTimeField(_("address last confirmed"), null=True, blank=True, editable=False)

    def save(self, *args, **kwargs) -> None:
        # One home for "a changed address is unconfirmed", whichever form, admin or sign-in changed it.
        if self.email_confirmed and self.email_confirmed != self.email:
            self.email_confirmed = ""
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "email_confirmed"}
        super().save(*args, **kwargs)

    @property
    def email_is_confirmed(self) -> bool:
        return bool(self.email) and self.email_confirmed == self.email

    @property
    def display_name(self) -> str:
        """How pages show this person: the name they, their university or their learning platform
        gave; else, for an account made by a sign-in (whose username is a hash, "sso-37cb…"), the
        address it gave; else the username. The one helper for headers, rosters and suggestions."""
        if full := self.get_full_name():
            return full
        if self.email and self.username.startswith(MADE_USERNAME_PREFIXES):
            return self.email
        return self.username

    @property
    def picker_label(self) -> str:
        """The display name, with the username when that is one a person chose (so two colleagues of
        the same name stay apart): "Outi Opettaja (outi)", "Sami Virtanen"."""
        shown = self.display_name
        if shown == self.username or self.username.startswith(MADE_USERNAME_PREFIXES):
            return shown
        return f"{shown} ({self.username})"

    @property
    def is_teacher(self) -> bool:
        # Superusers run the instance and may do everything a teacher does.
        return self.role == Role.TEACHER or self.is_superuser

    @property
    def may_co_teach(self) -> bool:
        """Whether the user may teach what they were made a co-teacher of: an active teacher, or a
        co-teacher by invitation (Role.GUEST), who may teach nothing else."""
        return self.is_active and (self.is_teacher or self.role == Role.GUEST)

    @property
    def sees_api_tokens(self) -> bool:
        """Whether the account page has an API-token section: teachers' and staff's programs use the
        API. A student's page has none; the API itself still answers a student's token (an operator
        may make one with `manage.py create_api_token`), under the student's own permissions."""
        return self.is_active and (self.is_teacher or self.is_staff)


def active_teachers() -> models.QuerySet[User]:
    """Users who may own and co-own collections and prompts: active teachers and superusers."""
    return User.objects.filter(models.Q(role=Role.TEACHER) | models.Q(is_superuser=True), is_active=True)


def teachers_named(values: list, *, field: str, may: str, current: frozenset[int] = frozenset()) -> list[User]:
    """The users named (User objects, usernames or email addresses), all active teachers; refuses
    unknown names and anyone else with a sentence naming them as they were typed ("Only active
    teachers can {may}: …"), for `field`. A username wins over an address that looks the same."""
    typed = list(dict.fromkeys(v.username if isinstance(v, User) else str(v).strip() for v in values))
    typed = [name for name in typed if name]
    by_username = {u.username: u for u in User.objects.filter(username__in=typed)}
    found: dict[int, tuple[User, str]] = {}
    missing, no_account, several = [], [], []
    for name in typed:
        user = by_username.get(name)
        if user is None and "@" in name:
            matches = list(User.objects.filter(email__iexact=name)[:2])
            if len(matches) > 1:
                several.append(name)
                continue
            if not matches:
                no_account.append(name)
                continue
            user = matches[0]
        if user is None:
            missing.append(name)
        else:
            found.setdefault(user.pk, (user, name))
    if missing:
        raise InvalidInput(gettext("No such user: %(names)s.") % {"names": ", ".join(missing)}, field=field)
    if no_account:
        sentence = gettext(
            "Nobody has an account with the address %(addresses)s yet. Invite them to co-teach instead: "
            "they get a link by mail to sign up."
        )
        raise InvalidInput(sentence % {"addresses": ", ".join(no_account)}, field=field)
    if several:
        sentence = gettext("Several accounts have the address %(address)s; add the person by their username instead.")
        raise InvalidInput(sentence % {"address": ", ".join(several)}, field=field)
    # A co-teacher by invitation stays where they were invited (`current`), and is added nowhere else.
    not_teachers = sorted(
        name
        for user, name in found.values()
        if not (user.is_teacher and user.is_active) and not (user.pk in current and user.may_co_teach)
    )
    if not_teachers:
        sentence = gettext("Only active teachers can %(action)s: %(names)s is not one.")
        raise InvalidInput(sentence % {"action": may, "names": ", ".join(not_teachers)}, field=field)
    return [user for user, _name in found.values()]


LOOKUP_MIN_CHARS = 3
LOOKUP_MOST = 5


def find_teachers(text: str, *, asked_by: User) -> list[User]:
    """At most LOOKUP_MOST active teachers whose username, address, first or last name is `text` or
    begins with it (case-insensitive), exact matches first; never the asker. Names count because a
    campus account's username is a hash nobody can type. Shorter text than LOOKUP_MIN_CHARS
    finds nobody: the co-teacher picker never lists every teacher."""
    text = text.strip()
    if len(text) < LOOKUP_MIN_CHARS:
        return []
    exact = models.Q(username__iexact=text) | models.Q(email__iexact=text)
    begins = (
        models.Q(username__istartswith=text)
        | models.Q(email__istartswith=text)
        | models.Q(first_name__istartswith=text)
        | models.Q(last_name__istartswith=text)
    )
    ranked = (
        active_teachers()
        .filter(exact | begins)
        .exclude(pk=asked_by.pk)
        .annotate(rank=models.Case(models.When(exact, then=0), default=1))
        .order_by("rank", "username")
    )
    return list(ranked[:LOOKUP_MOST])


def _hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def live(self) -> ApiTokenQuerySet:
        """Tokens that have not expired."""
        return self.filter(models.Q(expires__isnull=True) | models.Q(expires__gt=timezone.now()))

    def user_for(self, raw: str) -> User | None:
        """The active user a raw bearer token belongs to, or None (unknown, revoked or expired)."""
        token = self.live().select_related("user").filter(key_hash=_hash_token(raw)).first()
        if token is None or not token.user.is_active:
            return None
        # Touch at most once a minute so busy programs don't write on every request.
        now = timezone.now()
        if token.last_used is None or (now - token.last_used).total_seconds() > 60:
            type(self)(self.model).filter(pk=token.pk).update(last_used=now)
        return token.user


class ApiToken(models.Model):
    """A bearer token. Only its hash is stored; the raw value is shown once, at creation."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(_("name"), max_length=100, blank=True)
    key_hash = models.CharField(_("key hash"), max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        _("prefix"), max_length=8, editable=False, help_text=_("First characters, to tell tokens apart.")
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    last_used = models.DateTimeField(_("last used"), null=True, blank=True)
    expires = models.DateTimeField(
        _("expires"), null=True, blank=True, help_text=_("Refused from then on; empty: never expires.")
    )

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def expired(self) -> bool:
        return self.expires is not None and self.expires <= timezone.now()

    @classmethod
    def issue(cls, user: User, name: str = "", *, days: int | None = None) -> tuple[ApiToken, str]:
        """A new token and its raw value (shown once). It expires after `days` days (default:
        API_TOKEN_DEFAULT_DAYS; 0: never)."""
        days = settings.API_TOKEN_DEFAULT_DAYS if days is None else days
        if days < 0:
            raise ValueError("A token's lifetime cannot be negative.")
        expires = timezone.now() + timedelta(days=days) if days else None
        raw = "cc_" + secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, name=name, key_hash=_hash_token(raw), prefix=raw[:8], expires=expires)
        return token, raw
