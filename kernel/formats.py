"""Dates, times and numbers as the reader's language writes them: the one way the app writes them.

Every date, moment and quantity a person reads goes through these helpers (or their template
filters, `{% load formats %}`: `|day`, `|moment`, `|number`, `|percent`, `|file_size`). They use Django's
locale-aware formatting with the language's format module (currechat/formats/<lang>/formats.py),
so each language has one date format, one date-time format and one way of writing numbers:

    en  Mar 5, 2025   Mar 5, 2025, 2:30 PM   1,234.5   45%    Mar 5
    fi  5.3.2025      5.3.2025 klo 14.30     1 234,5   45 %   5. maalisk.
    sv  2025-03-05    2025-03-05 14:30       1 234,5   45 %   5 mars

(the last column is `chart_day`, the statistics chart's axis). Moments are written in the site's
time zone (kernel/zones.py: the browser's, else settings.TIME_ZONE); the pages' script writes a
student's reset time in their own.

What is not formatted here: identifiers that happen to be numbers (page numbers, ids, "Student 12",
years) are written as they are, as both languages write them; and what programs read (the REST API,
CSV and JSON Lines exports, HTML attributes) keeps ISO 8601 and plain digits.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

from django import template
from django.utils import formats, timezone
from django.utils.translation import gettext, ngettext, pgettext, pgettext_lazy

Number = int | float | Decimal

# The months beside a day on a chart's axis, abbreviated as each language abbreviates them: Django's
# own three-letter cuts ("b"/"M") give Finnish "Mar" for marraskuu (November) and capitalise Swedish
# months; its Associated Press ones ("N") give Finnish forms that stand alone, not after a day.
MONTH_ABBREVIATIONS = (
    pgettext_lazy("abbreviated month beside a day", "Jan"),
    pgettext_lazy("abbreviated month beside a day", "Feb"),
    pgettext_lazy("abbreviated month beside a day", "Mar"),
    pgettext_lazy("abbreviated month beside a day", "Apr"),
    pgettext_lazy("abbreviated month beside a day", "May"),
    pgettext_lazy("abbreviated month beside a day", "Jun"),
    pgettext_lazy("abbreviated month beside a day", "Jul"),
    pgettext_lazy("abbreviated month beside a day", "Aug"),
    pgettext_lazy("abbreviated month beside a day", "Sep"),
    pgettext_lazy("abbreviated month beside a day", "Oct"),
    pgettext_lazy("abbreviated month beside a day", "Nov"),
    pgettext_lazy("abbreviated month beside a day", "Dec"),
)


def _local(value: dt.datetime) -> dt.datetime:
    return timezone.localtime(value) if timezone.is_aware(value) else value


def day(value: dt.date | dt.datetime) -> str:
    """A date ("Mar 5, 2025", "5.3.2025", "2025-03-05"); a moment gives its day in the site's zone."""
    if isinstance(value, dt.datetime):
        value = _local(value).date()
    return formats.date_format(value, "DATE_FORMAT", use_l10n=True)


def moment(value: dt.datetime, *, zone: bool = False) -> str:
    """A date and time in the reader's time zone (kernel/zones.py; the site's without one): "5.3.2025
    klo 14.30"; `zone` adds its name where it matters, as schedules and resets ("... 14.30
    (Europe/Helsinki)")."""
    text = formats.date_format(_local(value), "DATETIME_FORMAT", use_l10n=True)
    return f"{text} ({timezone.get_current_timezone_name()})" if zone else text


def schedule_hint() -> str:
    """How to type a date and time in a form's field, in the page's language and the reader's zone:
    "For example 05.03.2026 klo 14.30, in your time zone (Europe/Helsinki)." The example is a date
    written as the field writes its own value (the language's first DATETIME_INPUT_FORMATS)."""
    example = dt.datetime(2026, 3, 5, 14, 30)
    written = formats.localize_input(example, formats.get_format("DATETIME_INPUT_FORMATS")[0])
    sentence = gettext("For example %(example)s, in your time zone (%(zone)s).")
    return sentence % {"example": written, "zone": timezone.get_current_timezone_name()}


def number(value: Number, decimals: int | None = None) -> str:
    """A quantity with the language's separators ("1,234", "1 234"); `decimals` fixes the places.

    Grouped here rather than through USE_THOUSAND_SEPARATOR (off in settings): that setting would
    also group every number a template writes into markup, form values and links."""
    if decimals is not None:  # rounded here: Django's number_format cuts the places off (1.5678 -> "1.56")
        value = Decimal(str(value)).quantize(Decimal(1).scaleb(-int(decimals)), rounding=ROUND_HALF_UP)
    return formats.number_format(value, decimals, use_l10n=True, force_grouping=True)


def whole_percent(share: Number, whole: Number = 1) -> int:
    """`share` of `whole` (0.29 of 1, 29 of 100) in whole percent, rounded down: a budget reads 100 only
    once it is used up, never at 99.6. Counted in decimals: 0.29 * 100 is 28.999999999999996 in floats."""
    return int(Decimal(str(share)) * 100 / Decimal(str(whole)) // 1)


def percent(share: Number, whole: Number = 1) -> str:
    """`whole_percent` as the language writes a percentage: "29%", "29 %"."""
    # Finnish and Swedish put a no-break space before the sign, English none.
    pattern = pgettext("a percentage; %(number)s is the number", "%(number)s%%")
    return pattern % {"number": number(whole_percent(share, whole))}


def file_size(n_bytes: int) -> str:
    """A size as people read it: "980 bytes", "1.5 MB", "50 MB" (Finnish "1,5 MB"). Units of 1,024 and
    their names as Django's filesizeformat has them, whole numbers from ten units on."""
    if n_bytes < 1024:
        return ngettext("%(size)s byte", "%(size)s bytes", n_bytes) % {"size": number(n_bytes)}
    value, units = n_bytes / 1024, [gettext("%s KB"), gettext("%s MB"), gettext("%s GB")]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    tenths = round(value, 1)
    return units[0] % (number(round(value)) if tenths >= 10 or tenths.is_integer() else number(tenths, 1))


def chart_day(value: dt.date) -> str:
    """A day on a chart's axis, short: "Mar 5", "5. maalisk.", "5 mars"."""
    pattern = pgettext("a day on a chart's axis: the abbreviated month and the day of the month", "%(month)s %(day)s")
    return pattern % {"month": MONTH_ABBREVIATIONS[value.month - 1], "day": value.day}


# --- Template filters (settings.TEMPLATES registers this module as the library "formats") -------------
# An empty value (a moment that never happened, a budget that is not set) writes nothing.
register = template.Library()


@register.filter("day")
def day_filter(value):
    return "" if value in (None, "") else day(value)


@register.filter("moment")
def moment_filter(value):
    return "" if value in (None, "") else moment(value)


@register.filter("moment_zone")
def moment_zone_filter(value):
    """`moment` with the zone named, for a schedule someone elsewhere reads."""
    return "" if value in (None, "") else moment(value, zone=True)


@register.filter("number")
def number_filter(value, decimals=None):
    return "" if value in (None, "") else number(value, decimals)


@register.filter("file_size")
def file_size_filter(value):
    return "" if value in (None, "") else file_size(value)


@register.filter("percent")
def percent_filter(value, whole=1):
    return "" if value in (None, "") else percent(value, whole)
