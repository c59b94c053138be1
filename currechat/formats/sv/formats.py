"""Swedish: "2025-03-05", "2025-03-05 14:30", "1 234,5" (a no-break space between thousands).

Django's own Swedish module writes a date two ways ("5 mars 2025" and "2025-03-05"). Swedish writes
dates in numbers year first (Språkrådet; SS-ISO 8601), as Intl's Swedish "short" style does."""

from currechat.formats import ISO_INPUT_FORMATS

DATE_FORMAT = SHORT_DATE_FORMAT = "Y-m-d"
DATETIME_FORMAT = SHORT_DATETIME_FORMAT = "Y-m-d H:i"
TIME_FORMAT = "H:i"
DECIMAL_SEPARATOR = ","
THOUSAND_SEPARATOR = "\xa0"  # no-break space: "1 234" never splits over two lines
NUMBER_GROUPING = 3
# Typed date-times (schedule fields): the first is how a field shows its value; Swedish writes ISO 8601.
DATETIME_INPUT_FORMATS = ISO_INPUT_FORMATS
