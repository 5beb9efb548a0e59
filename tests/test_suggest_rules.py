"""The suggestion rules on hand-made profiles (plain Python, no Spark): each rule's edge, and the draft stays valid.

The profiles are what a profiling run would measure; the expected suggestions follow the rules as
docs/engine.md ("Suggestion rules") states them, computed here by hand.
"""

from __future__ import annotations

import datetime as dt
import math

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine.suggest.model import ColumnProfile, Profile
from airflow_dq_contracts.engine.suggest.render import render_yaml
from airflow_dq_contracts.engine.suggest.rules import draft_contract

REFERENCE = dt.datetime(2024, 3, 2, 2, tzinfo=dt.timezone.utc)


def column(name: str, family: str, declared: str, rows: int = 1000, **fields: object) -> ColumnProfile:
    nulls = int(fields.pop("nulls", 0))  # type: ignore[call-overload]
    return ColumnProfile(name, declared, declared, family, nulls=nulls, non_null=rows - nulls, **fields)  # type: ignore[arg-type]


def draft(*columns: ColumnProfile, rows: int = 1000, **settings: object) -> tuple[dict, str]:
    profile = Profile(rows=rows, columns=list(columns), reference_time=REFERENCE, **settings)  # type: ignore[arg-type]
    result = draft_contract(profile, name="t")
    text = render_yaml(result)
    load_contract(text)  # every draft is a valid contract
    return result.document, text


def by_name(document: dict) -> dict:
    return {c["name"]: c for c in document["columns"]}


def test_integer_keys_need_structural_evidence() -> None:
    n = 1000
    dense = column("seq", "integral", "long", duplicates=0, minimum=1, maximum=n, approx_distinct=n)
    # random draws from 1…1,000,000: no duplicate in 1,000 rows could be luck (birthday bound)
    lucky = column("ref", "integral", "long", duplicates=0, minimum=5, maximum=999_000, approx_distinct=n)
    vast = column("snowflake", "integral", "long", duplicates=0, minimum=1, maximum=2**62, approx_distinct=n)
    document, text = draft(dense, lucky, vast, rows=n)
    columns = by_name(document)
    assert columns["seq"].get("primary_key") is True
    assert "unique" not in columns["ref"] and "primary_key" not in columns["ref"]
    assert columns["ref"]["nullable"] is False and "could be duplicate-free by chance" in text
    assert columns["snowflake"].get("unique") is True
    assert "min_value" not in columns["seq"] and "min_value" in columns["ref"]


def test_string_keys_by_name_or_uuid() -> None:
    n = 500
    named = column("order_code", "string", "string", rows=n, duplicates=0, approx_distinct=n)
    uuid = column("token", "string", "string", rows=n, duplicates=0, approx_distinct=n, conforming={"uuid": n})
    other = column("email", "string", "string", rows=n, duplicates=0, approx_distinct=n, conforming={"email": n})
    columns = by_name(draft(named, uuid, other, rows=n)[0])
    assert columns["order_code"].get("primary_key") is True
    assert columns["token"].get("unique") is True and columns["token"]["format"] == "uuid"
    assert "unique" not in columns["email"] and columns["email"]["format"] == "email"


def test_allowed_values_only_without_singletons_and_few_values() -> None:
    settled = column("status", "string", "string", values={"a": 500, "b": 499}, min_length=1, max_length=1)
    rare = column("kind", "string", "string", values={"a": 998, "b": 1, "c": 1}, min_length=1, max_length=1)
    many = column("city", "string", "string", values={f"c{i}": 25 for i in range(35)}, min_length=2, max_length=3)
    document, text = draft(settled, rare, many)
    columns = by_name(document)
    assert columns["status"]["allowed_values"] == ["a", "b"]
    assert "allowed_values" not in columns["kind"] and "2 seen only once" in text
    assert "allowed_values" not in columns["city"] and "35 distinct values: too many" in text


def test_format_share_between_999_and_100_percent_is_a_flagged_floor() -> None:
    n = 10_000
    mostly = column("mail", "string", "string", rows=n, conforming={"email": n - 5}, min_length=8, max_length=30)
    below = column("phone", "string", "string", rows=n, conforming={"phone": n - 50}, min_length=8, max_length=15)
    columns = by_name(draft(mostly, below, rows=n)[0])
    (floor,) = [c for c in columns["mail"]["checks"] if c["type"] == "pattern"]
    rate = (n - 5) / n
    assert floor["format"] == "email" and floor["return"] == "pct" and floor["severity"] == "P2"
    assert floor["min"] == math.floor((rate - 0.01 - 5 * math.sqrt(rate * (1 - rate) / n)) * 1000) / 1000
    assert "format" not in columns["mail"]
    assert "format" not in columns["phone"] and not [c for c in columns["phone"]["checks"] if c["type"] == "pattern"]


def test_sampled_profile_says_its_uncertainty_and_widens_the_volume_band() -> None:
    rows, fraction = 10_000, 0.1
    amount = column("amount", "fractional", "double", rows=rows, minimum=1.0, maximum=99.0)
    document, text = draft(amount, rows=rows, sample=fraction)
    estimated = round(rows / fraction)
    spread = 3 * math.sqrt(estimated * (1 - fraction) / fraction)
    (volume,) = document["checks"]
    assert volume["between"] == [math.floor(0.6 * (estimated - spread)), math.ceil(2 * (estimated + spread))]
    assert "Sampled: a value rarer than about 1 in 3,333 rows may be" in text
    assert f"≈ {estimated:,} rows (from {rows:,} sampled at 0.1" in text
    assert "NULL share below 0.0003 at 95 %" in text


def test_volume_band_from_history_covers_its_quietest_and_busiest_days() -> None:
    amount = column("amount", "fractional", "double", minimum=1.0, maximum=99.0)
    days = [REFERENCE - dt.timedelta(days=d) for d in range(1, 6)]
    counts = [900.0, 1000.0, 1100.0, 1000.0, 1000.0]
    history = [(moment, value, "Daily volume") for moment, value in zip(days, counts)]
    document, text = draft(amount, history=history, history_source="/r")
    (volume,) = document["checks"]
    mean = sum(counts) / len(counts)
    assert volume["name"] == "Daily volume"  # continues the history's own check id
    assert volume["baseline"] == {
        "lookback_days": 28,
        "min_history": 5,
        "band": [
            min(0.8, math.floor(0.8 * 900 / mean * 100) / 100),
            max(1.25, math.ceil(1.25 * 1100 / mean * 100) / 100),
        ],
    }
    # too little history: a static band, and the comment says why
    document, text = draft(amount, history=history[:2], history_source="/r")
    assert document["checks"][0]["between"] == [600, 2000] and "2 earlier runs in /r: too few" in text


def test_freshness_from_span_age_and_daily_batches() -> None:
    end = REFERENCE.timestamp() - 3600
    hourly = column("ts", "timestamp", "timestamp", minimum=end - 2 * 3600, maximum=end)
    assert draft(hourly)[0]["sla"] == {"freshness_hours": 3, "timestamp_column": "ts"}  # 1.5 × 2 h
    # a reference time given and an older newest value: 1.5 × its age
    stale = column("ts", "timestamp", "timestamp", minimum=end - 2 * 3600 - 20 * 3600, maximum=end - 20 * 3600)
    assert draft(stale, reference_given=True)[0]["sla"]["freshness_hours"] == math.ceil(1.5 * 21)
    # a day's batch: at least 36 h; a date column spans its whole day
    day = column("day", "date", "date", minimum=end - 10 * 86400, maximum=end - 10 * 86400)
    assert draft(day)[0]["sla"] == {"freshness_hours": 36, "timestamp_column": "day"}


def test_awkward_values_round_trip_through_the_yaml() -> None:
    odd = column("flag", "string", "string", values={"yes": 10, "on": 10, "a: b": 10, "1e3": 10, "#x": 10})
    document, text = draft(odd, rows=50)
    assert load_contract(text).columns[0].constraints[-1].params["values"] == ["#x", "1e3", "a: b", "on", "yes"]


def test_identifier_names_make_keys_with_the_chance_as_a_comment() -> None:
    n = 20_095
    span = 999_756_405  # neither dense (≤ rows²/10) nor vast (≥ 500·rows²): luck could explain it
    assert n * n / 10 < span < 500 * n * n
    names = ("order_id", "id", "ORDER_KEY", "uuid", "shipment_uuid", "orderId", "customerKey", "key", "paid", "ticket")
    columns = [
        column(name, "integral", "long", rows=n, duplicates=0, minimum=1000, maximum=1000 + span - 1, approx_distinct=n)
        for name in names
    ]
    document, text = draft(*columns, rows=n)
    drafted = by_name(document)
    keys = [name for name in names if drafted[name].get("primary_key") or drafted[name].get("unique")]
    assert keys == list(names[:-2])  # 'paid' and 'ticket' are not identifier names: today's rule
    assert drafted["order_id"].get("primary_key") is True
    for name in keys:
        assert {("missing", 0, "P0"), ("duplicates", 0, "P0")} <= {
            (c["type"], c.get("max"), c["severity"]) for c in drafted[name]["checks"]
        }
    caveat = f"# caveat: {n:,} random draws from a range of {span:,} could be duplicate-free by chance"
    assert text.count(caveat) == len(keys)
    assert text.count(f"# not suggested as a key: {n:,} random draws from a range of {span:,}") == 2
    # a dense identifier needs no caveat
    dense = column("row_id", "integral", "long", duplicates=0, minimum=1, maximum=1000, approx_distinct=1000)
    assert "caveat" not in draft(dense)[1]


def test_null_values_are_declared_with_their_evidence() -> None:
    n = 344
    bill = column(
        "bill_length_mm",
        "fractional",
        "double",
        rows=n,
        nulls=2,
        minimum=32.1,
        maximum=59.6,
        read_from="string",
        token_nulls={"NA": 2},
    )
    mass = column(
        "body_mass_g",
        "integral",
        "int",
        rows=n,
        nulls=7,
        minimum=2700,
        maximum=6300,
        read_from="string",
        token_nulls={"NA": 2, "-": 5},
    )
    sex = column(
        "sex",
        "string",
        "string",
        rows=n,
        nulls=11,
        values={"female": 165, "male": 168},
        min_length=4,
        max_length=6,
        token_nulls={"NA": 11},
    )
    profile = Profile(rows=n, columns=[bill, mass, sex], reference_time=REFERENCE, null_tokens=["NA", "-"])
    result = draft_contract(profile, name="p", dataset={"path": "/d/p.csv", "format": "csv"})
    text = render_yaml(result)
    contract = load_contract(text)
    assert result.document["dataset"] == {"path": "/d/p.csv", "format": "csv", "null_values": ["NA", "-"]}
    assert "  # 'NA' in 3 columns: 2 of 344 values of bill_length_mm, 2 of body_mass_g, 11 of sex\n" in text
    assert "  # '-' in 1 column: 5 of 344 values of body_mass_g\n" in text
    assert "  null_values: [NA, '-']\n" in text
    assert "Spark type string in the data; every value but the missing-value tokens ('NA' 2, '-' 5" in text
    assert [c.type.describe() if c.type else None for c in contract.columns] == ["double", "int", "string"]
    assert by_name(result.document)["sex"]["allowed_values"] == ["female", "male"]
    # without a dataset to declare them on, the header says what to declare
    bare_draft = draft_contract(profile, name="p")
    bare = render_yaml(bare_draft)
    assert "dataset" not in bare_draft.document and load_contract(bare).name == "p"
    assert "# Missing-value tokens read as NULL: 'NA', '-'" in bare


def test_a_token_left_in_allowed_values_is_pointed_out() -> None:
    kept = column("sex", "string", "string", values={"female": 160, "male": 170, "NA": 10}, min_length=2, max_length=6)
    document, text = draft(kept, rows=340)
    assert by_name(document)["sex"]["allowed_values"] == ["NA", "female", "male"]
    assert "'NA' may mean a missing value: if so, list it in dataset.null_values" in text
