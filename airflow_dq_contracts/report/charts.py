"""Trend charts of the report: matplotlib's SVG backend, inlined into the HTML.

Why matplotlib: a pip wheel with no browser, JavaScript runtime or network at render time (the
report must be built on an Airflow worker and open offline), a long-maintained SVG backend that
escapes its text, and an object API (:class:`matplotlib.figure.Figure`, no ``pyplot`` state) that
is safe to use from a task. Text is kept as SVG ``<text>`` (``svg.fonttype: none``), so charts
stay small and readable by the browser's own fonts.

The chart carries numbers and dates only — never a check name or any data value — so no author or
data text can reach matplotlib's mathtext parser or the SVG.

Example::

    svg = trend_svg(history)   # '<svg …>…</svg>', or '' when there is nothing to draw
"""

from __future__ import annotations

import io
import math
import re
from typing import Any

from .data import CheckHistory

__all__ = ["trend_svg"]

PASS_COLOR = "#2e7d32"
FAIL_COLOR = "#c62828"
LINE_COLOR = "#607d8b"
BAND_COLOR = "#90caf9"

_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)

_RC: Any = {  # matplotlib types the keys as literals
    "svg.fonttype": "none",
    "font.size": 7,
    "font.family": "sans-serif",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
}


def _finite(value: Any) -> bool:
    return value is not None and isinstance(value, (int, float)) and math.isfinite(value)


def trend_svg(history: CheckHistory, *, width: float = 3.6, height: float = 1.25) -> str:
    """An inline ``<svg>`` of one check's metric over time: a line, green/red marks for
    passed/failed runs, and the expected band (``expected_min``/``expected_max``) where a baseline set one.

    Returns ``''`` when no run has a numeric metric (nothing to plot is not an error).

    Example::

        trend_svg(CheckHistory(at=[t1, t2], metric_value=[0.0, 3.0], status=["passed", "failed"],
                               expected_min=[None, None], expected_max=[None, None], run_id=["a", "b"]))
    """
    import matplotlib
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure

    points = [
        (at, value, status, low, high)
        for at, value, status, low, high in zip(
            history.at, history.metric_value, history.status, history.expected_min, history.expected_max
        )
        if at is not None
    ]
    drawn = [p for p in points if _finite(p[1])]
    if not drawn:
        return ""
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height))
        ax = fig.add_axes((0.13, 0.2, 0.85, 0.75))
        # matplotlib's stubs know no datetimes or None: the lists go in as they are (it converts both).
        times: Any = [p[0] for p in drawn]
        values: Any = [p[1] for p in drawn]
        ax.plot(times, values, color=LINE_COLOR, linewidth=0.8, zorder=1)
        band = [(p[0], p[3], p[4]) for p in points if _finite(p[3]) or _finite(p[4])]
        if band:
            lows: Any = [low if _finite(low) else float("nan") for _, low, _ in band]
            highs: Any = [high if _finite(high) else float("nan") for _, _, high in band]
            band_times: Any = [b[0] for b in band]
            ax.fill_between(
                band_times, lows, highs, color=BAND_COLOR, alpha=0.45, linewidth=0, zorder=0, label="expected"
            )
        # One scatter for all marks (green passed, red otherwise): one artist to draw, not one per status.
        ax.scatter(
            times,
            values,
            s=9,
            zorder=2,
            linewidths=0,
            c=[PASS_COLOR if p[2] == "passed" else FAIL_COLOR for p in drawn],
        )
        locator = AutoDateLocator(minticks=2, maxticks=5)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(ConciseDateFormatter(locator, show_offset=False))
        ax.tick_params(length=2, pad=1)
        ax.margins(x=0.03, y=0.15)
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    # Inline SVG: drop the XML declaration and DOCTYPE, and the RDF metadata block (bytes per chart
    # that say nothing to a reader); keep the <svg> element.
    text = _METADATA.sub("", text[text.index("<svg") :], count=1)
    return text
