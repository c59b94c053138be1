"""The co-teacher picker of the collection and prompt forms.

Today's co-teachers are ticked boxes (untick one to remove them when the form is saved) and a box
takes more by username or email address, several separated by commas. That is the whole form
without JavaScript; `static/js/teacher_picker.js` turns the box into a search as you type over
`GET /api/v1/teachers` (accounts/api.py), which finds a few teachers by the start of their username
or address and never lists them all. The names are checked by the resource's write rules
(`accounts.models.teachers_named` through `collections_app.writes` / `chat.course.writes`).
"""

from __future__ import annotations

import re

from django import forms
from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from accounts.models import User

ADD_SUFFIX = "_add"
INVITE_SUFFIX = "_invite"  # addresses nobody has, ticked to be invited when the form is saved


def split_names(text: str) -> list[str]:
    """Usernames and addresses typed in one box: separated by commas, semicolons or white space."""
    return [part for part in re.split(r"[,;\s]+", text or "") if part]


def _label(user: User) -> str:
    return user.picker_label


class TeacherPicker(forms.Widget):
    template_name = "accounts/teacher_picker.html"

    def value_from_datadict(self, data, files, name):
        kept = data.getlist(name) if hasattr(data, "getlist") else list(data.get(name) or [])
        # An address ticked to be invited is not a co-teacher yet: the view invites it after saving.
        self.invited = invited_addresses(data, name)
        skipped = {a.lower() for a in self.invited}
        typed = [n for n in split_names(data.get(name + ADD_SUFFIX, "")) if n.lower() not in skipped]
        return [*kept, *typed]

    def value_omitted_from_data(self, data, files, name):
        return False  # every box unticked sends nothing: no co-teachers, not "left out"

    def id_for_label(self, id_):
        return f"{id_}{ADD_SUFFIX}" if id_ else id_

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        users, typed = _resolve(value or [])
        context["entries"] = [{"username": u.username, "label": _label(u)} for u in users]
        context["add_value"] = ", ".join(typed)
        context["disabled"] = bool(context["widget"]["attrs"].get("disabled"))
        context["add_name"] = name + ADD_SUFFIX
        # The action the error names, right under the box: invite each address nobody has.
        invited = getattr(self, "invited", [])
        unknown = [t for t in typed if "@" in t and not User.objects.filter(email__iexact=t).exists()]
        context["invite_name"] = name + INVITE_SUFFIX
        context["invite_offers"] = [(a, False) for a in unknown] + [(a, True) for a in invited]
        context["lookup_url"] = reverse("api:teacher_lookup")
        return context

    def render(self, name, value, attrs=None, renderer=None):
        # With the project's template engine (templates/ lives outside the apps, where Django's
        # default form renderer does not look); the template escapes every value, and the result is
        # marked safe as Django's own `Widget.render` marks its renderer's.
        html = render_to_string(self.template_name, self.get_context(name, value, attrs))
        return mark_safe(html)  # noqa: S308


def _resolve(values: list) -> tuple[list[User], list[str]]:
    """The users the values name (User objects, usernames or addresses), and what named nobody
    (shown again in the box, so a typo can be mended rather than lost)."""
    users = [v for v in values if isinstance(v, User)]
    names = [str(v).strip() for v in values if not isinstance(v, User) and str(v).strip()]
    by_username = {u.username: u for u in User.objects.filter(username__in=names)}
    typed = []
    for name in names:
        user = by_username.get(name)
        if user is None and "@" in name:
            matches = list(User.objects.filter(email__iexact=name)[:2])
            user = matches[0] if len(matches) == 1 else None
        if user is None:
            typed.append(name)
        else:
            users.append(user)
    return list({u.pk: u for u in users}.values()), list(dict.fromkeys(typed))


class TeacherPickerField(forms.Field):
    """A list of usernames and addresses; whether they are teachers is the write rules' to say."""

    widget = TeacherPicker

    def to_python(self, value) -> list[str]:
        names = [v.username if isinstance(v, User) else str(v).strip() for v in value or []]
        return list(dict.fromkeys(name for name in names if name))

    def has_changed(self, initial, data) -> bool:
        return set(self.to_python(initial)) != set(self.to_python(data))


def invitations_section(
    request, invitations, *, invite_url: str, withdraw_url, new=None, error: str = "", email: str = ""
) -> dict:
    """What the owner's "Invite someone without an account" section shows: the pending invitations
    (each with its withdraw address), the link just made (`new`: the invitation and its raw token,
    shown on this response only, never stored or redirected), and the address in the box (`email`:
    one refused, with why, or one the co-teacher box could not find)."""
    made = None
    if new is not None:
        invitation, raw = new
        made = {"invitation": invitation, "url": request.build_absolute_uri(reverse("invitation", args=[raw]))}
    return {
        "pending": [(invitation, withdraw_url(invitation)) for invitation in invitations.pending()],
        "invite_url": invite_url,
        "new": made,
        "error": error,
        "email": email,
        "days": settings.TEACHER_INVITATION_DAYS,
    }


def invited_addresses(data, name: str) -> list[str]:
    """The addresses ticked under a picker named `name` to be invited when its form is saved."""
    values = data.getlist(name + INVITE_SUFFIX) if hasattr(data, "getlist") else data.get(name + INVITE_SUFFIX) or []
    return list(dict.fromkeys(v.strip() for v in values if "@" in v))


def unfound_address(form, name: str) -> str:
    """The first address typed in the co-teacher box of a form refused for it: offered for an
    invitation, so it need not be typed twice."""
    if not form.is_bound or name not in form.errors:
        return ""
    return next((typed for typed in split_names(form.data.get(name + ADD_SUFFIX, "")) if "@" in typed), "")
