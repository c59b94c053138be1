"""Invitations to co-teach a prompt, for someone without a teacher account yet (accounts/invitations.py)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.invitations import Invitation
from chat.models.prompts import Prompt


class PromptInvitation(Invitation):
    """A link inviting someone without an account to co-teach one prompt."""

    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="invitations")

    class Meta(Invitation.Meta):
        verbose_name = _("invitation to co-teach")
        verbose_name_plural = _("invitations to co-teach")

    @property
    def target(self) -> Prompt:
        return self.prompt
