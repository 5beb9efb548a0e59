"""The ``stream`` key of a contract: the event-time column, tumbling window and watermark of a stream run.

Plain Python (the Spark side is :mod:`airflow_dq_contracts.engine.streams`). A contract checked as a
stream (``dq-contracts stream``) evaluates its table-level checks once per event-time window, when
the watermark (the largest event time seen, minus ``watermark``) has passed the window's end::

    stream:
      event_time: ts          # a timestamp column of the dataset
      window: 10 minutes      # tumbling window length
      watermark: 5 minutes    # how late a row may arrive and still count in its window (default 0)

Durations are a number and a unit (``seconds``, ``minutes``, ``hours``, ``days``; singular and the
short forms ``s``, ``sec``, ``min``, ``h``, ``d`` too).

Example::

    >>> parse_duration("10 minutes")
    600
    >>> parse_duration("1 h")
    3600
    >>> parse_duration("ten minutes") is None
    True
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

__all__ = ["STREAM_KEYS", "StreamSettings", "parse_duration", "read_stream"]

STREAM_KEYS = ("event_time", "window", "watermark")

_UNITS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}
_DURATION = re.compile(r"^\s*(\d+)\s*([a-zA-Z]+)\s*$")


def parse_duration(text: Any) -> int | None:
    """Seconds of a duration like ``"10 minutes"`` (None when it is not one)."""
    if not isinstance(text, str):
        return None
    match = _DURATION.match(text)
    if not match or match.group(2).lower() not in _UNITS:
        return None
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


@dataclasses.dataclass(frozen=True)
class StreamSettings:
    """A contract's ``stream`` key: windows of ``window_seconds`` on ``event_time``, ``watermark_seconds`` late."""

    event_time: str
    window_seconds: int
    watermark_seconds: int = 0

    def window_of(self, epoch_seconds: int) -> int:
        """The start (epoch seconds) of the tumbling window holding ``epoch_seconds``.

        >>> StreamSettings("ts", 600).window_of(1_000)
        600
        """
        return epoch_seconds - epoch_seconds % self.window_seconds


def read_stream(raw: Any, add: Callable[[tuple, str], None]) -> StreamSettings | None:
    """The ``stream`` mapping as :class:`StreamSettings`; each problem reported by ``add(sub_path, message)``."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        add((), f"'stream' must be a mapping with event_time, window and watermark, got {raw!r}")
        return None
    ok = True
    for key in raw:
        if key not in STREAM_KEYS and not str(key).startswith("x-"):
            add((key,), f"unknown key {key!r} in 'stream'; allowed: {', '.join(STREAM_KEYS)}")
            ok = False
    event_time = raw.get("event_time")
    if not isinstance(event_time, str) or not event_time.strip():
        add(("event_time",) if "event_time" in raw else (), "'event_time' (the event-time column) is required")
        ok = False
    window = parse_duration(raw.get("window"))
    if "window" not in raw:
        add((), "'window' (the tumbling window length, e.g. \"10 minutes\") is required")
        ok = False
    elif not window:
        add(("window",), f"'window' must be a positive duration like \"10 minutes\", got {raw.get('window')!r}")
        ok = False
    watermark = 0
    if raw.get("watermark") is not None:
        parsed = parse_duration(raw["watermark"])
        if parsed is None:
            add(("watermark",), f"'watermark' must be a duration like \"5 minutes\", got {raw['watermark']!r}")
            ok = False
        else:
            watermark = parsed
    if not ok:
        return None
    assert isinstance(event_time, str) and window
    return StreamSettings(event_time=event_time, window_seconds=window, watermark_seconds=watermark)
