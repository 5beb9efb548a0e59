"""The freshness/completeness time logic (plain Python): hand-computed expectations.

Every expected value here was worked out by hand (calendar in front of me) or by an independent
brute-force oracle below, never by calling the code under test.
"""

from __future__ import annotations

import datetime as dt
import random
import sys

import pytest

from airflow_dq_contracts.contract.timeliness import (
    FUTURE_SKEW,
    GRANULARITIES,
    PartitionValueError,
    age_hours,
    count_gaps,
    expected_periods,
    freshness_age,
    next_period,
    period_label,
    to_utc,
    truncate,
)

UTC = dt.timezone.utc


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


def tz(hours: float) -> dt.timezone:
    return dt.timezone(dt.timedelta(hours=hours))


# ----------------------------------------------------------------------------------- imports


def test_plain_python_module_imports_neither_spark_nor_airflow():
    import subprocess

    code = (
        "import sys, airflow_dq_contracts.contract.timeliness as t; "
        "bad = [m for m in ('pyspark', 'airflow', 'deltalake') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# ----------------------------------------------------------------------------------- to_utc


@pytest.mark.parametrize(
    "value, expected",
    [
        (dt.datetime(2024, 1, 2, 3, 4, 5), utc(2024, 1, 2, 3, 4, 5)),  # naive = UTC
        (dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=tz(5.5)), utc(2024, 1, 1, 21, 34, 5)),
        (dt.date(2024, 2, 29), utc(2024, 2, 29)),
        ("2024-01-02", utc(2024, 1, 2)),
        ("20240102", utc(2024, 1, 2)),
        ("2024-01-02T03:04:05Z", utc(2024, 1, 2, 3, 4, 5)),
        ("2024-01-02 03:04:05", utc(2024, 1, 2, 3, 4, 5)),
        ("2024-01-02T03:04:05.123456-08:00", utc(2024, 1, 2, 11, 4, 5, 123456)),
        ("2024-01-02T10", utc(2024, 1, 2, 10)),
        ("  2024-01-02  ", utc(2024, 1, 2)),
        ("2024-W01", utc(2024, 1, 1)),  # ISO week 1 of 2024 starts Monday 1 January
        ("2021-W01", utc(2021, 1, 4)),  # ... of 2021 on Monday 4 January
        ("2020-W53-5", utc(2021, 1, 1)),  # Friday of week 53 of 2020
        ("2024-02", utc(2024, 2, 1)),
    ],
)
def test_to_utc_accepts_dates_datetimes_and_iso_strings(value, expected):
    result = to_utc(value)
    assert result == expected
    assert result.utcoffset() == dt.timedelta(0)


@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "2024-00", "", "31/01/2024", 20240101, 1.5])
def test_to_utc_rejects_what_is_not_a_time_and_names_it(value):
    with pytest.raises(PartitionValueError) as info:
        to_utc(value)
    assert repr(value) in str(info.value)


# ----------------------------------------------------------------------------------- age_hours


def test_age_hours_basic_and_fractional():
    assert age_hours(utc(2024, 1, 10, 12), utc(2024, 1, 10, 6)) == 6.0
    # 1 h 29 min 59.999999 s = 5399.999999 s
    assert age_hours(utc(2024, 1, 10, 12), utc(2024, 1, 10, 10, 30, 0, 1)) == pytest.approx(
        5399.999999 / 3600, rel=1e-15
    )
    assert age_hours(utc(2024, 1, 10), utc(2024, 1, 8)) == 48.0


def test_age_hours_is_negative_for_a_timestamp_after_the_reference():
    assert age_hours(utc(2024, 1, 10, 0), utc(2024, 1, 10, 1, 30)) == -1.5


def test_freshness_age_clamps_within_the_skew_and_names_a_reference_before_the_data():
    reference = utc(2024, 1, 10, 0)
    assert dt.timedelta(minutes=5) == FUTURE_SKEW
    assert freshness_age(reference, utc(2024, 1, 9, 22)).age_hours == 2.0
    within = freshness_age(reference, reference + FUTURE_SKEW)  # exactly the skew: still "now"
    assert within.age_hours == 0.0 and within.problem is None
    beyond = freshness_age(reference, reference + FUTURE_SKEW + dt.timedelta(seconds=1), "max(ts)")
    assert beyond.age_hours == -(301 / 3600)
    assert beyond.problem is not None
    assert beyond.problem.startswith(
        "max(ts) = 2024-01-10T00:05:01Z is 0.084 h after the reference time 2024-01-10T00:00:00Z"
    )
    assert "airflow dags test" in beyond.problem


def test_age_hours_naive_is_utc_and_aware_is_converted():
    naive_ref = dt.datetime(2024, 6, 1, 12, 0)
    assert age_hours(naive_ref, dt.datetime(2024, 6, 1, 10, 0)) == 2.0
    # 10:00 at +02:00 is 08:00 UTC → 4 h before 12:00 UTC
    assert age_hours(naive_ref, dt.datetime(2024, 6, 1, 10, 0, tzinfo=tz(2))) == 4.0
    # strings and dates: midnight UTC of 1 June is 12 h before noon
    assert age_hours("2024-06-01T12:00:00Z", dt.date(2024, 6, 1)) == 12.0


def test_age_hours_is_dst_irrelevant_because_utc():
    # Europe switched to summer time on 2024-03-31 at 01:00 UTC. Wall clocks say 03:00 CEST vs
    # 00:00 CET (3 h apart), but the instants are 01:00Z and 23:00Z the day before: 2 h apart.
    ref = dt.datetime(2024, 3, 31, 3, 0, tzinfo=tz(2))
    stamp = dt.datetime(2024, 3, 31, 0, 0, tzinfo=tz(1))
    assert age_hours(ref, stamp) == 2.0


# ----------------------------------------------------------------------------------- truncate


@pytest.mark.parametrize(
    "value, granularity, expected",
    [
        (utc(2024, 1, 10, 13, 59, 59, 999999), "hourly", utc(2024, 1, 10, 13)),
        (utc(2024, 1, 10, 13, 59, 59, 999999), "daily", utc(2024, 1, 10)),
        # 01:00 at +05:00 is 20:00 UTC on 31 December
        (dt.datetime(2024, 1, 1, 1, 0, tzinfo=tz(5)), "daily", utc(2023, 12, 31)),
        (utc(2024, 1, 1, 5), "weekly", utc(2024, 1, 1)),  # a Monday
        (utc(2024, 1, 7, 23, 59), "weekly", utc(2024, 1, 1)),  # the Sunday after it
        (utc(2023, 1, 1), "weekly", utc(2022, 12, 26)),  # Sunday: ISO week 2022-W52
        (utc(2021, 1, 3), "weekly", utc(2020, 12, 28)),  # Sunday of ISO week 2020-W53
        (utc(2024, 12, 31), "weekly", utc(2024, 12, 30)),  # Tuesday of 2025-W01
        (utc(2024, 2, 29, 23, 59), "monthly", utc(2024, 2, 1)),
        (utc(2023, 12, 31, 23, 59, 59, 999999), "monthly", utc(2023, 12, 1)),
        (dt.date(2024, 3, 1), "monthly", utc(2024, 3, 1)),
        ("2024-05-31T22:00:00-03:00", "monthly", utc(2024, 6, 1)),  # 01:00Z on 1 June
    ],
)
def test_truncate(value, granularity, expected):
    assert truncate(value, granularity) == expected


def test_truncate_rejects_unknown_granularity():
    with pytest.raises(ValueError, match="yearly"):
        truncate(utc(2024, 1, 1), "yearly")


@pytest.mark.parametrize(
    "start, granularity, expected",
    [
        (utc(2024, 1, 31, 23), "hourly", utc(2024, 2, 1, 0)),
        (utc(2024, 2, 28), "daily", utc(2024, 2, 29)),
        (utc(2023, 2, 28), "daily", utc(2023, 3, 1)),
        (utc(2020, 12, 28), "weekly", utc(2021, 1, 4)),
        (utc(2024, 1, 1), "monthly", utc(2024, 2, 1)),
        (utc(2024, 12, 1), "monthly", utc(2025, 1, 1)),
    ],
)
def test_next_period(start, granularity, expected):
    assert next_period(start, granularity) == expected


@pytest.mark.parametrize(
    "start, granularity, label",
    [
        (utc(2024, 1, 5, 13), "hourly", "2024-01-05T13:00Z"),
        (utc(2024, 1, 5), "daily", "2024-01-05"),
        (utc(2020, 12, 28), "weekly", "2020-W53"),
        (utc(2024, 12, 30), "weekly", "2025-W01"),
        (utc(2024, 1, 1), "monthly", "2024-01"),
    ],
)
def test_period_label(start, granularity, label):
    assert period_label(start, granularity) == label


# ----------------------------------------------------------------------------------- expected_periods


def days(year: int, month: int, *day_numbers: int) -> list[dt.datetime]:
    return [utc(year, month, d) for d in day_numbers]


def test_expected_daily_periods_cover_every_day_touching_the_window():
    # window [01-03 09:00, 01-10 09:00]: 01-03 (partly) … 01-10 (partly) = 8 days
    assert expected_periods(utc(2024, 1, 10, 9), "daily", 7) == days(2024, 1, 3, 4, 5, 6, 7, 8, 9, 10)
    # reference exactly at midnight: window [01-03 00:00, 01-10 00:00] touches the same 8 days
    assert expected_periods(utc(2024, 1, 10), "daily", 7) == days(2024, 1, 3, 4, 5, 6, 7, 8, 9, 10)
    assert expected_periods(utc(2024, 1, 10, 9), "daily", 0) == [utc(2024, 1, 10)]


def test_expected_periods_across_leap_day_and_month_end():
    assert expected_periods(utc(2024, 3, 1), "daily", 2) == [utc(2024, 2, 28), utc(2024, 2, 29), utc(2024, 3, 1)]
    assert expected_periods(utc(2023, 3, 1), "daily", 2) == [utc(2023, 2, 27), utc(2023, 2, 28), utc(2023, 3, 1)]
    # 31 days before 2024-03-31 23:00 is 2024-02-29 23:00: February and March
    assert expected_periods(utc(2024, 3, 31, 23), "monthly", 31) == [utc(2024, 2, 1), utc(2024, 3, 1)]
    # 30 days before 2024-03-01 is 2024-01-31: January, February, March
    assert expected_periods(utc(2024, 3, 1), "monthly", 30) == [utc(2024, 1, 1), utc(2024, 2, 1), utc(2024, 3, 1)]


def test_expected_hourly_periods_for_one_day():
    periods = expected_periods(utc(2024, 1, 10, 10, 30), "hourly", 1)
    # [01-09 10:30, 01-10 10:30] touches 01-09 10:00 … 01-10 10:00: 25 clock hours
    assert len(periods) == 25
    assert periods[0] == utc(2024, 1, 9, 10)
    assert periods[-1] == utc(2024, 1, 10, 10)
    assert all(b - a == dt.timedelta(hours=1) for a, b in zip(periods, periods[1:]))


def test_expected_weekly_periods_are_iso_weeks_across_the_year_boundary():
    # 2021-01-10 is the Sunday of 2021-W01 (Monday 2021-01-04); 14 days earlier is Sunday
    # 2020-12-27, in 2020-W52 (Monday 2020-12-21). 2020 has 53 ISO weeks.
    periods = expected_periods(utc(2021, 1, 10, 12), "weekly", 14)
    assert periods == [utc(2020, 12, 21), utc(2020, 12, 28), utc(2021, 1, 4)]
    assert [period_label(p, "weekly") for p in periods] == ["2020-W52", "2020-W53", "2021-W01"]


def test_expected_periods_in_utc_whatever_the_reference_zone():
    # 12:00 at +02:00 (CEST, the day of the switch) is 10:00Z; one day back is 03-30 10:00Z
    periods = expected_periods(dt.datetime(2024, 3, 31, 12, tzinfo=tz(2)), "daily", 1)
    assert periods == [utc(2024, 3, 30), utc(2024, 3, 31)]


@pytest.mark.parametrize("lookback", [-1, float("nan"), float("inf"), True, "7", None])
def test_expected_periods_rejects_bad_lookback(lookback):
    with pytest.raises(ValueError, match="lookback_days"):
        expected_periods(utc(2024, 1, 10), "daily", lookback)


# ----------------------------------------------------------------------------------- count_gaps


REF = utc(2024, 1, 10, 9)  # window [01-03 09:00, 01-10 09:00]: days 3..10 expected


def test_gaps_inside_the_window_count_and_trailing_ones_are_not_yet_due():
    report = count_gaps(["2024-01-03", "2024-01-04", "2024-01-06", "2024-01-08"], REF, "daily", 7)
    assert report.expected_count == 8
    assert report.present_count == 4
    assert list(report.missing) == days(2024, 1, 5, 7)
    assert report.gap_count == 2
    assert list(report.not_yet_due) == days(2024, 1, 9, 10)
    assert report.newest_present == utc(2024, 1, 8)
    assert not report.passes(1) and report.passes(2)


def test_with_allow_future_gaps_false_every_missing_period_counts():
    report = count_gaps(
        ["2024-01-03", "2024-01-04", "2024-01-06", "2024-01-08"], REF, "daily", 7, allow_future_gaps=False
    )
    assert list(report.missing) == days(2024, 1, 5, 7, 9, 10)
    assert report.gap_count == 4
    assert report.not_yet_due == ()


def test_complete_window_has_no_gap():
    values = [dt.date(2024, 1, d) for d in range(3, 11)]
    for allow in (True, False):
        report = count_gaps(values, REF, "daily", 7, allow_future_gaps=allow)
        assert report.gap_count == 0 and report.passes(0)
        assert report.present_count == 8


def test_nothing_present_means_every_expected_period_is_a_gap():
    for values in ([], ["2023-12-01", "2023-12-31"]):  # empty, or only before the window
        for allow in (True, False):
            report = count_gaps(values, REF, "daily", 7, allow_future_gaps=allow)
            assert report.gap_count == 8, (values, allow)
            assert report.newest_present is None


def test_values_after_the_reference_never_count_and_never_fill_a_gap():
    values = ["2024-01-03", "2024-01-05", "2024-01-11", "2024-01-12", "2024-02-01"]
    report = count_gaps(values, REF, "daily", 7)
    assert report.after_reference == 3
    assert list(report.missing) == [utc(2024, 1, 4)]  # before the newest in-window value (05)
    assert list(report.not_yet_due) == days(2024, 1, 6, 7, 8, 9, 10)
    strict = count_gaps(values, REF, "daily", 7, allow_future_gaps=False)
    assert strict.gap_count == 6  # no credit from 11, 12 or February
    assert list(strict.missing) == days(2024, 1, 4, 6, 7, 8, 9, 10)


def test_a_partly_covered_first_period_is_expected_and_can_be_present():
    report = count_gaps([dt.date(2024, 1, 3)], REF, "daily", 7, allow_future_gaps=False)
    assert utc(2024, 1, 3) in report.present
    assert report.gap_count == 7


def test_mixed_value_types_and_time_zones():
    values = [
        dt.date(2024, 1, 3),
        dt.datetime(2024, 1, 4, 23, 59, 59),  # naive: UTC, still the 4th
        "2024-01-05T23:30:00-02:00",  # 01:30Z on the 6th: fills the 6th, not the 5th
        "20240107",
        "2024-01-08 13:00:00",
        dt.datetime(2024, 1, 9, 0, 30, tzinfo=tz(1)),  # 23:30Z on the 8th
        None,  # Hive's default partition: ignored
        "2024-01-10T00:00:00Z",
        "2024-01-10",  # same day twice counts once
    ]
    report = count_gaps(values, REF, "daily", 7, allow_future_gaps=False)
    assert list(report.missing) == days(2024, 1, 5, 9)
    assert report.present_count == 6


def test_unparseable_partition_value_raises_naming_it():
    with pytest.raises(PartitionValueError, match="not-a-date"):
        count_gaps(["2024-01-03", "not-a-date"], REF, "daily", 7)


def test_count_gaps_validates_its_parameters():
    with pytest.raises(ValueError, match="granularity"):
        count_gaps([], REF, "fortnightly", 7)
    with pytest.raises(ValueError, match="allow_future_gaps"):
        count_gaps([], REF, "daily", 7, allow_future_gaps="yes")
    with pytest.raises(ValueError, match="lookback_days"):
        count_gaps([], REF, "daily", -3)


def test_hourly_gaps():
    ref = utc(2024, 1, 10, 10, 30)  # 25 expected hours: 01-09 10:00 … 01-10 10:00
    start = utc(2024, 1, 9, 10)
    present = [start + dt.timedelta(hours=h) for h in range(25)]
    present.remove(utc(2024, 1, 9, 15))
    present.remove(utc(2024, 1, 10, 10))  # the current, still open hour
    # partitions as Spark writes hourly timestamps: "2024-01-09 10:00:00"
    values = [p.strftime("%Y-%m-%d %H:%M:%S") for p in present]
    report = count_gaps(values, ref, "hourly", 1)
    assert report.expected_count == 25
    assert list(report.missing) == [utc(2024, 1, 9, 15)]
    assert list(report.not_yet_due) == [utc(2024, 1, 10, 10)]
    assert count_gaps(values, ref, "hourly", 1, allow_future_gaps=False).gap_count == 2
    assert report.missing_labels() == ["2024-01-09T15:00Z"]


def test_weekly_gaps_across_the_year_boundary():
    ref = utc(2021, 1, 10, 12)  # expected weeks 2020-W52, 2020-W53, 2021-W01
    report = count_gaps(["2020-W52", "2021-W01"], ref, "weekly", 14)
    assert list(report.missing) == [utc(2020, 12, 28)]
    assert report.missing_labels() == ["2020-W53"]
    # any day of a week stands for the week: Thursday 2020-12-31 is in 2020-W53
    assert count_gaps(["2020-12-22", dt.date(2020, 12, 31), "2021-01-10"], ref, "weekly", 14).gap_count == 0


def test_monthly_gaps_with_short_months():
    ref = utc(2024, 3, 15)  # 60 days back: 2024-01-15 → Jan, Feb, Mar
    report = count_gaps(["2024-01", "2024-03-01"], ref, "monthly", 60)
    assert list(report.missing) == [utc(2024, 2, 1)]
    assert report.missing_labels() == ["2024-02"]
    assert count_gaps(["2024-01-31", "2024-02-29", "2024-03-31"], ref, "monthly", 60).gap_count == 0


def test_report_to_dict_is_json_ready():
    import json

    report = count_gaps(["2024-01-03", "2024-01-05"], REF, "daily", 7)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["gap_count"] == 1
    assert data["missing"] == ["2024-01-04T00:00:00Z"]
    assert data["missing_labels"] == ["2024-01-04"]
    assert data["reference_time"] == "2024-01-10T09:00:00Z"
    assert data["window_start"] == "2024-01-03T09:00:00Z"
    assert data["expected_count"] == 8 and data["present_count"] == 2
    assert len(data["not_yet_due"]) == 5
    assert "2024-01-04" in report.describe()


# ----------------------------------------------------------------------------------- oracle


def _oracle_period(moment: dt.datetime, granularity: str) -> dt.datetime:
    """Independent period start: built from calendar fields, not by subtracting."""
    if granularity == "hourly":
        return dt.datetime(moment.year, moment.month, moment.day, moment.hour, tzinfo=UTC)
    if granularity == "daily":
        return dt.datetime(moment.year, moment.month, moment.day, tzinfo=UTC)
    if granularity == "weekly":
        iso = moment.isocalendar()
        monday = dt.date.fromisocalendar(iso.year, iso.week, 1)
        return dt.datetime(monday.year, monday.month, monday.day, tzinfo=UTC)
    return dt.datetime(moment.year, moment.month, 1, tzinfo=UTC)


def _oracle_gaps(values, reference, granularity, lookback_days, allow_future_gaps):
    start = reference - dt.timedelta(days=lookback_days)
    # Every period overlapping [start, reference] contains a sampled minute (or the reference).
    expected = set()
    probe = start
    while probe <= reference:
        expected.add(_oracle_period(probe, granularity))
        probe += dt.timedelta(minutes=30)
    expected.add(_oracle_period(reference, granularity))
    present = {_oracle_period(v, granularity) for v in values} & expected
    missing = sorted(expected - present)
    if allow_future_gaps and present:
        newest = max(present)
        missing = [m for m in missing if m < newest]
    return missing


@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_count_gaps_matches_a_brute_force_oracle(granularity):
    rng = random.Random(20240110 + GRANULARITIES.index(granularity))
    spans = {"hourly": 3, "daily": 40, "weekly": 120, "monthly": 400}
    for _ in range(60):
        reference = utc(2020, 12, 1) + dt.timedelta(minutes=rng.randrange(0, 60 * 24 * 500))
        lookback = rng.choice([0, 1, 2, 7, 13.5, 30, spans[granularity]])
        lookback = min(lookback, spans[granularity])
        values = [
            reference - dt.timedelta(minutes=rng.randrange(-60 * 24 * 3, int(60 * 24 * (lookback + 5)) + 1))
            for _ in range(rng.randrange(0, 40))
        ]
        for allow in (True, False):
            report = count_gaps(values, reference, granularity, lookback, allow_future_gaps=allow)
            assert list(report.missing) == _oracle_gaps(values, reference, granularity, lookback, allow), (
                granularity,
                reference,
                lookback,
                allow,
            )
