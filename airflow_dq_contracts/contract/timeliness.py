"""Time-window logic of the ``freshness`` and ``completeness`` checks — plain Python.

Shared by the Spark engine (after it has collected the newest/oldest timestamp or the distinct
partition values) and by the Airflow sensors (which read the same facts from Delta metadata), so a
check and a sensor can never disagree about what "fresh" or "complete" means.

Everything is UTC. Naive datetimes are UTC (DESIGN §4); aware ones are converted; a ``date`` is
midnight UTC of that day. Periods are UTC periods, so daylight-saving changes play no part.

Freshness
    ``age_hours = (reference − timestamp) / 3600 s``; the check passes when
    ``age_hours ≤ max_age_hours``. A timestamp after the reference cannot be right: the data is newer
    than the instant it is measured against, so the reference time is wrong (``airflow dags test``,
    whose data interval may end before the data was written, or a ``reference_time`` meant for
    another run). Up to :data:`FUTURE_SKEW` (5 minutes: writers' and schedulers' clocks drift) the
    age is taken as 0; beyond it :func:`freshness_age` says so (:attr:`FreshnessAge.problem`) — the
    check is an ``error``, the sensor logs a warning. Never a silent pass on a negative age.

Completeness (decided here, DESIGN §4)
    * The *window* is ``[reference − lookback_days, reference]`` (both ends included).
    * The *expected periods* are the periods of the granularity that overlap the window: every
      period start ``p`` with ``truncate(reference − lookback_days) ≤ p ≤ truncate(reference)``.
      The current (still open) period is therefore expected too. ``hourly`` periods are clock
      hours, ``daily`` UTC days, ``weekly`` ISO weeks (Monday 00:00 UTC), ``monthly`` calendar
      months. Example: daily, lookback 7, reference 2024-01-10 09:00 → 8 periods, 01-03 … 01-10.
    * A partition value is *present* in the period it falls into (``truncate(value)``); several
      values in one period count once. ``None`` (Hive's ``__HIVE_DEFAULT_PARTITION__``) is ignored.
    * A *gap* is an expected period with no present value.
    * ``allow_future_gaps=True`` (the default): missing periods *after the newest present period
      of the window* are not yet due and are not counted (they are reported as ``not_yet_due``).
      If the window holds no partition at all nothing has arrived, so every expected period is a
      gap — an empty or long-stale table is never complete. Use ``freshness`` to bound how far
      the newest partition may lag. ``allow_future_gaps=False``: every missing period counts.
    * Partition values after the reference time are outside the window: they never count as
      gaps and never fill one (they are reported as ``after_reference``).
    * The check passes when ``gap_count ≤ max_gap_count``.

Example::

    >>> import datetime as dt
    >>> ref = dt.datetime(2024, 1, 10, 9, 30)
    >>> round(age_hours(ref, dt.datetime(2024, 1, 10, 3, 0)), 2)
    6.5
    >>> report = count_gaps(["2024-01-03", "2024-01-04", "2024-01-06", "2024-01-08"],
    ...                     reference_time=ref, granularity="daily", lookback_days=7)
    >>> report.gap_count, [p.day for p in report.missing], [p.day for p in report.not_yet_due]
    (2, [5, 7], [9, 10])
    >>> freshness_age(ref, dt.datetime(2024, 1, 10, 9, 33)).age_hours   # 3 minutes ahead: within the skew
    0.0
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterable
from typing import Any

from airflow_dq_contracts.timeutil import TimeValueError, format_time, to_utc

HOURLY = "hourly"
DAILY = "daily"
WEEKLY = "weekly"
MONTHLY = "monthly"
GRANULARITIES: tuple[str, ...] = (HOURLY, DAILY, WEEKLY, MONTHLY)
AGGREGATIONS: tuple[str, ...] = ("max", "min")


#: A partition value (or timestamp) that is not a date, a datetime or an ISO-8601 string.
PartitionValueError = TimeValueError


def check_granularity(granularity: str) -> str:
    """Return ``granularity`` if it is one of :data:`GRANULARITIES`, else raise ``ValueError``.

    >>> check_granularity("daily")
    'daily'
    """
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity {granularity!r} is not one of {', '.join(GRANULARITIES)}")
    return granularity


def _check_lookback(lookback_days: float) -> float:
    if isinstance(lookback_days, bool) or not isinstance(lookback_days, (int, float)):
        raise ValueError(f"lookback_days must be a number of days, got {lookback_days!r}")
    if not math.isfinite(lookback_days) or lookback_days < 0:
        raise ValueError(f"lookback_days must be a finite number ≥ 0, got {lookback_days!r}")
    return float(lookback_days)


def age_hours(reference_time: dt.datetime | dt.date | str, timestamp: dt.datetime | dt.date | str) -> float:
    """Hours from ``timestamp`` to ``reference_time`` (negative when the timestamp is later).

    >>> age_hours("2024-03-31T02:00:00Z", "2024-03-30T20:00:00-02:00")
    4.0
    """
    delta = to_utc(reference_time) - to_utc(timestamp)
    return delta.total_seconds() / 3600.0


#: How far the measured timestamp may lie after the reference time and still count as "now" (age 0).
FUTURE_SKEW = dt.timedelta(minutes=5)


@dataclasses.dataclass(frozen=True)
class FreshnessAge:
    """The age of a timestamp against a reference time, as freshness reads it (module docs).

    ``age_hours`` is ≥ 0 unless :attr:`problem` is set: then the timestamp lies more than
    :data:`FUTURE_SKEW` after the reference, ``age_hours`` is the (negative) raw age, and ``problem``
    says so in one sentence naming both times and the likely cause.
    """

    age_hours: float
    reference_time: dt.datetime
    timestamp: dt.datetime
    problem: str | None = None


def freshness_age(
    reference_time: dt.datetime | dt.date | str,
    timestamp: dt.datetime | dt.date | str,
    what: str = "the newest value",
) -> FreshnessAge:
    """:func:`age_hours` for freshness: clamped to 0 within :data:`FUTURE_SKEW`, a problem beyond it.

    ``what`` names the timestamp in the problem (``max(created_at)``).

    >>> age = freshness_age("2024-01-10T00:00:00Z", "2024-01-10T23:20:00Z", "max(created_at)")
    >>> round(age.age_hours, 3)
    -23.333
    >>> print(age.problem)  # doctest: +NORMALIZE_WHITESPACE
    max(created_at) = 2024-01-10T23:20:00Z is 23.333 h after the reference time 2024-01-10T00:00:00Z
    (more than the 5 min allowed for clock skew): the reference time is earlier than the data, so it is
    likely wrong — e.g. `airflow dags test`, whose data interval can end before the data was written,
    or a reference_time meant for another run
    """
    reference = to_utc(reference_time)
    moment = to_utc(timestamp)
    age = age_hours(reference, moment)
    if age >= 0:
        return FreshnessAge(age, reference, moment)
    if moment - reference <= FUTURE_SKEW:
        return FreshnessAge(0.0, reference, moment)
    skew_minutes = FUTURE_SKEW.total_seconds() / 60
    problem = (
        f"{what} = {format_time(moment)} is {-age:.3f} h after the reference time {format_time(reference)} "
        f"(more than the {skew_minutes:g} min allowed for clock skew): the reference time is earlier than the "
        "data, so it is likely wrong — e.g. `airflow dags test`, whose data interval can end before the data "
        "was written, or a reference_time meant for another run"
    )
    return FreshnessAge(age, reference, moment, problem)


def truncate(value: dt.datetime | dt.date | str, granularity: str) -> dt.datetime:
    """Start (UTC) of the period of ``granularity`` that contains ``value``.

    Weekly periods are ISO weeks, starting on Monday.

    >>> truncate("2024-01-03T17:45:00Z", "weekly").isoformat()
    '2024-01-01T00:00:00+00:00'
    >>> truncate("2024-02-29T23:59:59", "monthly").isoformat()
    '2024-02-01T00:00:00+00:00'
    """
    check_granularity(granularity)
    moment = to_utc(value)
    if granularity == HOURLY:
        return moment.replace(minute=0, second=0, microsecond=0)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if granularity == DAILY:
        return day
    if granularity == WEEKLY:
        return day - dt.timedelta(days=day.weekday())
    return day.replace(day=1)


def next_period(period_start: dt.datetime, granularity: str) -> dt.datetime:
    """Start of the period following the one that starts at ``period_start``.

    >>> next_period(dt.datetime(2024, 12, 1, tzinfo=dt.timezone.utc), "monthly").isoformat()
    '2025-01-01T00:00:00+00:00'
    """
    start = truncate(period_start, granularity)
    if granularity == HOURLY:
        return start + dt.timedelta(hours=1)
    if granularity == DAILY:
        return start + dt.timedelta(days=1)
    if granularity == WEEKLY:
        return start + dt.timedelta(weeks=1)
    if start.month == 12:
        return start.replace(year=start.year + 1, month=1)
    return start.replace(month=start.month + 1)


def period_label(period_start: dt.datetime, granularity: str) -> str:
    """Short human label of a period: ``2024-01-05T13:00Z``, ``2024-01-05``, ``2024-W01``, ``2024-01``.

    >>> period_label(dt.datetime(2024, 12, 30), "weekly")
    '2025-W01'
    """
    start = truncate(period_start, granularity)
    if granularity == HOURLY:
        return start.strftime("%Y-%m-%dT%H:00Z")
    if granularity == DAILY:
        return start.strftime("%Y-%m-%d")
    if granularity == WEEKLY:
        iso = start.isocalendar()
        return f"{iso.year}-W{iso.week:02d}"
    return start.strftime("%Y-%m")


def window_start(reference_time: dt.datetime | dt.date | str, lookback_days: float) -> dt.datetime:
    """``reference − lookback_days`` in UTC (the window's first instant)."""
    return to_utc(reference_time) - dt.timedelta(days=_check_lookback(lookback_days))


def expected_periods(
    reference_time: dt.datetime | dt.date | str, granularity: str, lookback_days: float
) -> list[dt.datetime]:
    """Starts of every period that overlaps the window ``[reference − lookback_days, reference]``.

    >>> [p.day for p in expected_periods("2024-01-10T09:00Z", "daily", 7)]
    [3, 4, 5, 6, 7, 8, 9, 10]
    """
    check_granularity(granularity)
    first = truncate(window_start(reference_time, lookback_days), granularity)
    last = truncate(reference_time, granularity)
    periods = []
    current = first
    while current <= last:
        periods.append(current)
        current = next_period(current, granularity)
    return periods


@dataclasses.dataclass(frozen=True)
class GapReport:
    """Outcome of :func:`count_gaps`: what was expected, what is missing, what is not yet due.

    >>> report = count_gaps([], "2024-01-10T00:00Z", "daily", 2)
    >>> report.gap_count, report.expected_count, report.passes(0)
    (3, 3, False)
    """

    granularity: str
    reference_time: dt.datetime
    window_start: dt.datetime
    allow_future_gaps: bool
    expected: tuple[dt.datetime, ...]
    present: tuple[dt.datetime, ...]
    missing: tuple[dt.datetime, ...]
    not_yet_due: tuple[dt.datetime, ...]
    after_reference: int
    newest_present: dt.datetime | None

    @property
    def gap_count(self) -> int:
        """Number of missing periods that count (``len(missing)``)."""
        return len(self.missing)

    @property
    def expected_count(self) -> int:
        return len(self.expected)

    @property
    def present_count(self) -> int:
        """Expected periods that have at least one partition."""
        return len(self.present)

    def passes(self, max_gap_count: int = 0) -> bool:
        """``gap_count ≤ max_gap_count``."""
        return self.gap_count <= max_gap_count

    def missing_labels(self, limit: int | None = None) -> list[str]:
        """Labels of the counted gaps (first ``limit`` of them), e.g. ``['2024-01-05']``."""
        chosen = self.missing if limit is None else self.missing[:limit]
        return [period_label(p, self.granularity) for p in chosen]

    def describe(self, limit: int = 10) -> str:
        """One line for logs: counts, window and the first missing periods."""
        text = (
            f"{self.present_count}/{self.expected_count} {self.granularity} periods present in "
            f"[{format_time(self.window_start)}, {format_time(self.reference_time)}]; gap_count={self.gap_count}"
        )
        if self.missing:
            more = f" (+{self.gap_count - limit} more)" if self.gap_count > limit else ""
            text += f"; missing: {', '.join(self.missing_labels(limit))}{more}"
        if self.not_yet_due and self.newest_present is not None:
            newest = period_label(self.newest_present, self.granularity)
            text += f"; {len(self.not_yet_due)} after the newest partition {newest} not yet due"
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (UTC ISO strings): suitable for XCom and trigger events."""
        return {
            "granularity": self.granularity,
            "reference_time": format_time(self.reference_time),
            "window_start": format_time(self.window_start),
            "allow_future_gaps": self.allow_future_gaps,
            "expected_count": self.expected_count,
            "present_count": self.present_count,
            "gap_count": self.gap_count,
            "missing": [format_time(p) for p in self.missing],
            "missing_labels": self.missing_labels(),
            "not_yet_due": [format_time(p) for p in self.not_yet_due],
            "after_reference": self.after_reference,
            "newest_present": format_time(self.newest_present),
        }


def count_gaps(
    present_values: Iterable[dt.date | dt.datetime | str | None],
    reference_time: dt.datetime | dt.date | str,
    granularity: str,
    lookback_days: float = 30,
    allow_future_gaps: bool = True,
) -> GapReport:
    """Count missing partitions in the lookback window (semantics in the module docstring).

    ``present_values`` are partition values: dates, datetimes (naive = UTC) or ISO strings;
    ``None`` is ignored. A value that cannot be read as a time raises :class:`PartitionValueError`.

    >>> count_gaps(["2024-01-01", "2024-01-03"], "2024-01-03T12:00Z", "daily", 2).gap_count
    1
    """
    check_granularity(granularity)
    if not isinstance(allow_future_gaps, bool):
        raise ValueError(f"allow_future_gaps must be true or false, got {allow_future_gaps!r}")
    reference = to_utc(reference_time)
    expected = expected_periods(reference, granularity, lookback_days)
    last_expected = expected[-1]

    present_periods: set[dt.datetime] = set()
    for value in present_values:
        if value is None:
            continue
        present_periods.add(truncate(value, granularity))

    present = tuple(p for p in expected if p in present_periods)
    after_reference = sum(1 for p in present_periods if p > last_expected)
    missing_all = [p for p in expected if p not in present_periods]

    newest = present[-1] if present else None
    if allow_future_gaps and newest is not None:
        counted = tuple(p for p in missing_all if p < newest)
        not_yet_due = tuple(p for p in missing_all if p > newest)
    else:
        counted = tuple(missing_all)
        not_yet_due = ()
    return GapReport(
        granularity=granularity,
        reference_time=reference,
        window_start=window_start(reference, lookback_days),
        allow_future_gaps=allow_future_gaps,
        expected=tuple(expected),
        present=present,
        missing=counted,
        not_yet_due=not_yet_due,
        after_reference=after_reference,
        newest_present=newest,
    )
