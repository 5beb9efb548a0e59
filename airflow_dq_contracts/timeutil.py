"""Time, once: UTC normalisation, ISO-8601 parsing and formatting, epoch microseconds.

The bottom of the package: every layer (contract, results, store, engine, operators, sensors)
takes its time handling from here, so "naive means UTC" (DESIGN §4), the one strict ISO-8601
parser and the ``Z`` suffix are each written exactly once.

Example::

    >>> format_time(parse_time("2024-01-02T05:00:00+05:30"))
    '2024-01-01T23:30:00Z'
    >>> to_epoch_micros(from_epoch_micros(1_500_000))
    1500000
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

UTC = dt.timezone.utc
#: 1970-01-01T00:00:00Z, the origin of epoch microseconds (Spark's and Arrow's timestamp unit).
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = dt.timedelta(microseconds=1)
_YEAR_FIRST = re.compile(r"^\d{4}")


class TimeValueError(ValueError):
    """A value that is not a date, a datetime or an ISO-8601 string."""


def utcnow() -> dt.datetime:
    """Timezone-aware current UTC time (microsecond precision, like Spark timestamps)."""
    return dt.datetime.now(UTC)


def to_utc(value: dt.datetime | dt.date | str) -> dt.datetime:
    """Return ``value`` as an aware UTC datetime.

    Accepts datetimes (naive = UTC, aware converted), dates (midnight UTC) and ISO-8601 strings
    (``2024-01-02``, ``2024-01-02T03:04:05Z``, ``2024-01-02 03:04:05+05:30``, ``2024-W03`` for an
    ISO week, ``2024-01`` for a month, ``20240102``). Anything else raises
    :class:`TimeValueError` naming the value.

    >>> to_utc("2024-01-02T05:00:00+05:30").isoformat()
    '2024-01-01T23:30:00+00:00'
    >>> to_utc(dt.date(2024, 1, 2)).isoformat()
    '2024-01-02T00:00:00+00:00'
    """
    if isinstance(value, dt.datetime):  # before date: datetime is a subclass of date
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        return parse_iso8601(value)
    raise TimeValueError(f"{value!r} ({type(value).__name__}) is not a date, a datetime or an ISO-8601 string")


def parse_iso8601(text: str) -> dt.datetime:
    """The one ISO-8601 parser of the package (operator, sensors, CLI, job): pendulum's, Airflow's own.

    It reads all of ISO 8601 (week and ordinal dates, months, basic format) and nothing else
    (strict: no guessing at ``31/01/2024``); durations, intervals and bare times are refused.

    >>> parse_iso8601("2024-W05").date().isoformat()
    '2024-01-29'
    """
    import pendulum  # imported here: most callers of this module never parse text

    raw = text.strip()
    parsed: Any = None
    if _YEAR_FIRST.match(raw):  # a bare time ("10:00") would otherwise become today's date
        try:
            parsed = pendulum.parse(raw, tz="UTC")
        except (ValueError, TypeError):
            parsed = None
    if not isinstance(parsed, dt.datetime):
        raise TimeValueError(
            f"{text!r} is not an ISO-8601 date or time (expected e.g. '2024-01-31', "
            "'2024-01-31T10:00:00Z', '2024-W05' or '2024-01')"
        )
    # A plain datetime in UTC, not a pendulum DateTime: results compare and serialise as stdlib values.
    plain = dt.datetime(
        parsed.year, parsed.month, parsed.day, parsed.hour, parsed.minute, parsed.second, parsed.microsecond
    )
    return (plain - (parsed.utcoffset() or dt.timedelta(0))).replace(tzinfo=UTC)


def parse_time(text: str | dt.datetime | None) -> dt.datetime | None:
    """Parse an ISO-8601 instant; naive means UTC; None or ``""`` give None.

    >>> parse_time("2024-01-02T03:04:05Z").isoformat()
    '2024-01-02T03:04:05+00:00'
    >>> parse_time("2024-01-02T05:00:00+05:30").isoformat()
    '2024-01-01T23:30:00+00:00'
    """
    if text is None or text == "":
        return None
    if isinstance(text, dt.datetime):
        return to_utc(text)
    try:
        return parse_iso8601(str(text))
    except ValueError as exc:
        raise ValueError(f"not an ISO-8601 time: {text!r}") from exc


def format_time(value: dt.datetime | None) -> str | None:
    """ISO-8601 in UTC with a ``Z`` suffix, or None.

    >>> format_time(dt.datetime(2024, 1, 2, 3, 4, 5)), format_time(None)
    ('2024-01-02T03:04:05Z', None)
    """
    if value is None:
        return None
    return to_utc(value).isoformat().replace("+00:00", "Z")


def from_epoch_micros(micros: int | None) -> dt.datetime | None:
    """Epoch microseconds (Spark's and Arrow's timestamp unit) → an aware UTC datetime; None stays None.

    >>> from_epoch_micros(1_000_000).isoformat(), from_epoch_micros(None)
    ('1970-01-01T00:00:01+00:00', None)
    """
    return None if micros is None else EPOCH + dt.timedelta(microseconds=int(micros))


def to_epoch_micros(moment: dt.datetime | dt.date | str) -> int:
    """An instant (naive = UTC) → epoch microseconds.

    >>> to_epoch_micros("1970-01-01T00:00:01Z")
    1000000
    """
    return (to_utc(moment) - EPOCH) // _MICROSECOND
