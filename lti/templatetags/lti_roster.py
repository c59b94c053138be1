"""The roster page's panel of synced courses (the page is chat's; chat may not import lti, so the
panel comes in through this tag: `{% load lti_roster %}{% roster_sync_panel prompt %}`)."""

from __future__ import annotations

from django import template

from lti.models import Leavers
from lti.roster import latest_logs

register = template.Library()


@register.inclusion_tag("lti/_roster_sync.html", takes_context=True)
def roster_sync_panel(context, prompt):
    return {
        "prompt": prompt,
        "courses": latest_logs(prompt),
        "leavers_choices": Leavers.choices,
        "csrf_token": context.get("csrf_token"),
    }
