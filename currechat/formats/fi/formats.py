"""Finnish: "5.3.2025", "5.3.2025 klo 14.30", "1 234,5" (a no-break space between thousands).

Django's own Finnish module writes a date two ways ("5. maaliskuuta 2025" and "5.3.2025") and a
moment without "klo" ("5.3.2025 14.30") or with "kello" spelled out. Finnish writes a date with a
clock time as "5.3.2025 klo 14.30" (Kielitoimiston ohjepankki), as Intl's Finnish does."""

from currechat.formats import ISO_INPUT_FORMATS

DATE_FORMAT = SHORT_DATE_FORMAT = "j.n.Y"
DATETIME_FORMAT = SHORT_DATETIME_FORMAT = r"j.n.Y \k\l\o G.i"
TIME_FORMAT = "G.i"
DECIMAL_SEPARATOR = ","
THOUSAND_SEPARATOR = "\xa0"  # no-break space: "1 234" never splits over two lines
NUMBER_GROUPING = 3
# Typed date-times (schedule fields): the first is how a field shows its value; "klo" may be left out.
DATETIME_INPUT_FORMATS = [
    "%d.%m.%Y klo %H.%M",
    "%d.%m.%Y %H.%M",
    "%d.%m.%Y klo %H:%M",
    "%d.%m.%Y %H:%M",
    "%d.%m.%Y",
    *ISO_INPUT_FORMATS,
]
