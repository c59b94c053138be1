"""What a sign-in from outside (a campus identity provider: `sso.SsoIdentity`; a learning platform's
launch: `lti.LtiIdentity`) knows of a person: the stable subject its issuer gives them, the account
it reaches, and the university's person identifier, on which the two may join one account."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

from django.db import IntegrityError, models, transaction
from django.utils.translation import gettext_lazy as _


class ExternalIdentity(models.Model):
    """Which CurreChat user an issuer's subject is. The account is found through this row at every
    later sign-in, never through a name or an address that may change or be reused. A subclass
    names the issuer (`issuer`), declares `user` (a related name as its migrations have it, which a
    "%(app_label)s" here would not keep), its unique constraint and its verbose names."""

    subject = models.CharField(_("subject"), max_length=255)
    # The university's person identifier, where the issuer sends one (a campus sign-in: the claim or
    # attribute the deployment names; a platform: its lis.person_sourcedid, Moodle's "ID number"):
    # a campus sign-in and a launch carrying the same value reach one account (sso/provision.py).
    person_id = models.CharField(_("person identifier"), max_length=255, blank=True, db_index=True)

    issuer: str
    user: models.ForeignKey

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.subject} @ {self.issuer} → {self.user}"

    @classmethod
    def reach(
        cls,
        key: dict[str, Any],
        person_id: str,
        make: Callable[[], dict[str, Any]],
        vet: Callable[[Self], None] | None = None,
    ) -> tuple[Self, bool] | None:
        """(the identity `key` names, whether it was made now). A found one is first shown to `vet`,
        which raises if it may not open its account, then keeps `person_id` as the issuer sends it
        now (when it sends one). A new one takes its other fields, the account among them, from
        `make()`, inside the transaction that writes it. Two first sign-ins at once: the one that
        loses reads the winner's row. None when that race was lost three times."""
        for _attempt in range(3):
            found = cls._default_manager.select_related("user").filter(**key).first()
            if found is not None:
                if vet is not None:
                    vet(found)
                if person_id and found.person_id != person_id:
                    cls._default_manager.filter(pk=found.pk).update(person_id=person_id)
                return found, False
            try:
                with transaction.atomic():
                    return cls._default_manager.create(**key, person_id=person_id, **make()), True
            except IntegrityError:
                continue
        return None
