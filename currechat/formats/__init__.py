"""How each language of the interface writes dates, times and numbers (Django format modules,
found through settings.FORMAT_MODULE_PATH; kernel/formats.py is how the app writes with them).

Each language has one date format and one date-time format: the "short" and the long names point to
the same shape, so a page, a sentence, the admin and a student's usage line never mix two ways of
writing the same moment. The shapes are those the browser's Intl.DateTimeFormat writes for the
same language (static/js/formats.js), so a time written by the page's script reads like one the
server wrote."""

# Typed date-times every language also accepts, after its own: ISO 8601, as a date-time input or a
# program sends them.
ISO_INPUT_FORMATS = [
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d",
]
