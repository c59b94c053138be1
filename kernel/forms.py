"""The one way a form (pages and admin) runs a resource's write rules in its `clean`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms

from kernel.errors import Forbidden, InvalidInput


class WriteRulesForm(forms.ModelForm):
    """A ModelForm whose `clean` asks the resource's write module (`check`) about the change, so a
    page, the admin and the API refuse it with the same sentence, attached to the field it names.

    Subclasses set `check` (e.g. `collections_app.writes.check_collection`) and say who acts and
    which fields they change (`actor()`, `write_fields`)."""

    check: Callable[..., Any]
    write_fields: tuple[str, ...] | None = None  # None: every field of the form

    def actor(self):
        raise NotImplementedError

    def changes(self) -> dict:
        """The submitted values, in the shape the write functions take."""
        names = self.write_fields if self.write_fields is not None else tuple(self.fields)
        return {name: self.cleaned_data[name] for name in names if name in self.cleaned_data}

    def clean(self):
        cleaned = super().clean() or {}
        if not self.errors:
            try:
                type(self).check(self.actor(), self.instance if self.instance.pk else None, self.changes())
            except (InvalidInput, Forbidden) as exc:
                self.add_error(getattr(exc, "field", None), str(exc))
        return cleaned
