"""The statistics chart, drawn on the server as SVG: no script, no CDN, works offline and prints.

Bars are messages per day; the same numbers are in the table beside the chart, which is what
screen readers use (the SVG is one labelled image). Only numbers and dates go into the markup: the
geometry as plain digits, what a person reads (axis labels, bar titles) as their language writes it
(kernel/formats.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import ngettext

from chat.insight.stats import DayRow
from kernel.formats import chart_day, day, number

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 220, 44, 24, 12
LABEL_HALF = 40  # about half the width of the longest day label ("21. marrask.") at the axis' type size


def _nice_max(value: int) -> int:
    """A round axis maximum at or above `value` (1, 2, 5 times a power of ten)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= max(value, 1):
                return step * factor
        step *= 10


def _n(value: float) -> str:
    # Geometry, read by the browser: always a decimal point. (format_html escapes its arguments into
    # strings, so numbers are written out first.)
    return f"{value:.1f}"


def messages_chart(days: Sequence[DayRow], title: str) -> SafeString:
    top = _nice_max(max((d.messages for d in days), default=0))
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    slot = plot_w / max(len(days), 1)
    bar_w = max(slot * 0.7, 1.0)
    bars = format_html_join(
        "",
        '<rect class="bar" x="{}" y="{}" width="{}" height="{}"><title>{}</title></rect>',
        (
            (
                _n(LEFT + i * slot + (slot - bar_w) / 2),
                _n(TOP + plot_h - plot_h * d.messages / top),
                _n(bar_w),
                _n(plot_h * d.messages / top),
                ngettext("%(day)s: %(n)s message", "%(day)s: %(n)s messages", d.messages)
                % {"day": day(d.date), "n": number(d.messages)},
            )
            for i, d in enumerate(days)
        ),
    )
    every = max(1, len(days) // 6)  # about six date labels, whatever the period
    centres = [(LEFT + i * slot + slot / 2, d) for i, d in enumerate(days) if i % every == 0]
    labels = format_html_join(
        "",
        '<text class="axis day" x="{}" y="{}" text-anchor="{}">{}</text>',
        # A label too near the right edge to be centred on its day ends there instead: "21. marrask."
        # is twice as long as "Nov 21", and half of it would be cut off.
        ((_n(x), HEIGHT - 6, "end" if x > WIDTH - LABEL_HALF else "middle", chart_day(d.date)) for x, d in centres),
    )
    return format_html(
        '<svg class="chart" viewBox="0 0 {w} {h}" role="img" aria-labelledby="chart-title" data-testid="chart">'
        '<title id="chart-title">{title}</title>'
        '<line class="grid" x1="{left}" y1="{top}" x2="{right}" y2="{top}"/>'
        '<line class="grid" x1="{left}" y1="{base}" x2="{right}" y2="{base}"/>'
        '<text class="axis" x="{lx}" y="{ty}" text-anchor="end">{max}</text>'
        '<text class="axis" x="{lx}" y="{by}" text-anchor="end">0</text>'
        "{bars}{labels}</svg>",
        w=WIDTH,
        h=HEIGHT,
        title=title,
        left=LEFT,
        right=WIDTH - 8,
        top=TOP,
        base=TOP + plot_h,
        lx=LEFT - 6,
        ty=TOP + 4,
        by=TOP + plot_h + 4,
        max=number(top),
        bars=bars,
        labels=labels,
    )
