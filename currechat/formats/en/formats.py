"""English: "Mar 5, 2025", "Mar 5, 2025, 2:30 PM", "1,234.5".

Django's own English module has two of each ("March 5, 2025" and "03/05/2025"; "2:30 p.m."). A
numeric month first is misread by every reader who writes the day first, as Finnish and Swedish
readers of the English interface do, so the one shape spells the month. It is Intl's English
"medium" date and "short" time, which static/js/formats.js writes in the browser."""

from currechat.formats import ISO_INPUT_FORMATS

DATE_FORMAT = SHORT_DATE_FORMAT = "M j, Y"
DATETIME_FORMAT = SHORT_DATETIME_FORMAT = "M j, Y, g:i A"
TIME_FORMAT = "g:i A"
DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
# Typed date-times (schedule fields): the first is how a field shows its value.
DATETIME_INPUT_FORMATS = [
    "%b %d, %Y, %I:%M %p",
    "%b %d, %Y %I:%M %p",
    "%b %d, %Y, %H:%M",
    "%b %d, %Y",
    *ISO_INPUT_FORMATS,
]
