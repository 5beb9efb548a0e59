"""``suggest`` on text files (issue 34, deliverable 4): reader options, missing-value tokens, identifier keys.

A CSV is generated in plain Python the way R and pandas exports write one: ``NA`` (and ``-`` in one
column) for missing numbers and dates, ``NA`` in a categorical column, measurements whose integer
values look like phone numbers, an ``order_id`` that is unique but drawn from a range where luck
could explain it, and a ``ticket`` column just as unique but not named like an identifier. The draft
(through the Python API that reads a path as ``run`` does) is compared with plain-Python statistics
of the same rows; the CLI reads a semicolon CSV through ``--input-option sep=;``.
"""

from __future__ import annotations

import csv
import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_dq_contracts.contract import load_contract

pytestmark = pytest.mark.spark

ROWS = 1500
SPAN = 999_756_405
SPECIES = ("Adelie", "Chinstrap", "Gentoo")
FIRST_DAY = dt.date(2024, 5, 1)


def make_rows(seed: int = 34) -> list[dict[str, str]]:
    """The CSV's rows as the text a file holds (every value a string, ``NA``/``-`` where missing)."""
    rng = random.Random(seed)
    order_ids = rng.sample(range(1, SPAN + 1), ROWS)
    tickets = rng.sample(range(1, SPAN + 1), ROWS)
    rows = []
    for i in range(ROWS):
        rows.append(
            {
                "order_id": str(order_ids[i]),
                "ticket": str(tickets[i]),
                "species": rng.choice(SPECIES),
                "bill_length_mm": "NA" if rng.random() < 0.05 else f"{rng.uniform(32.1, 59.6):.1f}",
                "flipper_length_mm": "NA" if rng.random() < 0.02 else str(rng.randint(172, 231)),
                "body_mass_g": ("NA" if rng.random() < 0.02 else "-")
                if rng.random() < 0.04
                else str(rng.randint(2700, 6300)),
                "sex": "NA" if rng.random() < 0.03 else rng.choice(("female", "male")),
                "observed_on": "NA"
                if rng.random() < 0.01
                else (FIRST_DAY + dt.timedelta(days=rng.randint(0, 9))).isoformat(),
            }
        )
    # the scan must see each token in its column (the seed makes this so; say it if it ever changes)
    assert any(r["body_mass_g"] == "-" for r in rows) and any(r["observed_on"] == "NA" for r in rows)
    return rows


def write_csv(rows: list[dict[str, str]], path: Path, sep: str = ",") -> str:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter=sep)
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {column["name"]: column for column in document["columns"]}


def numbers(rows: list[dict[str, str]], name: str) -> list[float]:
    return [float(r[name]) for r in rows if r[name] not in ("NA", "-")]


@pytest.fixture(scope="module")
def text_input(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, str]], str]:
    rows = make_rows()
    return rows, write_csv(rows, tmp_path_factory.mktemp("suggest_text") / "penguin_orders.csv")


@pytest.fixture(scope="module")
def suggestion(spark: Any, text_input: tuple[list[dict[str, str]], str]) -> Any:
    from airflow_dq_contracts.engine.suggest import suggest_input

    _, path = text_input
    return suggest_input(spark, path=path, input_format="csv", name="penguin_orders")


def test_missing_value_tokens_hide_no_type(suggestion: Any, text_input: tuple[list[dict[str, str]], str]) -> None:
    rows, path = text_input
    document = suggestion.document
    columns = by_name(document)
    n = len(rows)
    # the types the other values have (plain Python: every value but the tokens parses so)
    assert columns["bill_length_mm"]["type"] == "double"
    assert all(r["flipper_length_mm"] == "NA" or r["flipper_length_mm"].isdigit() for r in rows)
    assert columns["flipper_length_mm"]["type"] == "int" and columns["body_mass_g"]["type"] == "int"
    assert columns["observed_on"]["type"] == "date"
    assert columns["species"]["type"] == "string" and columns["sex"]["type"] == "string"
    # the tokens, most frequent first, counted over every column that holds them
    counts: dict[str, int] = {}
    for row in rows:
        for value in row.values():
            if value in ("NA", "-"):
                counts[value] = counts.get(value, 0) + 1
    expected_tokens = sorted(counts, key=lambda t: (-counts[t], t))
    assert document["dataset"] == {"path": path, "format": "csv", "null_values": expected_tokens}
    na_columns = [name for name in rows[0] if any(r[name] == "NA" for r in rows)]
    first = na_columns[0]
    first_count = sum(r[first] == "NA" for r in rows)
    assert f"# 'NA' in {len(na_columns)} columns: {first_count:,} of {n:,} values of {first}, " in suggestion.yaml
    dashes = sum(r["body_mass_g"] == "-" for r in rows)
    assert f"# '-' in 1 column: {dashes:,} of {n:,} values of body_mass_g" in suggestion.yaml
    # the tokens are NULLs of the profile: the NULL-share evidence, the ranges over the other values
    for name in ("bill_length_mm", "flipper_length_mm", "body_mass_g", "observed_on", "sex"):
        nulls = sum(r[name] in expected_tokens for r in rows)
        assert f"# {nulls:,} NULLs in {n:,} rows ({nulls / n:.2%})" in suggestion.yaml, name
        assert columns[name].get("nullable") is not False, name
    for name in ("bill_length_mm", "flipper_length_mm", "body_mass_g"):
        seen = numbers(rows, name)
        assert columns[name]["min_value"] <= min(seen) and columns[name]["max_value"] >= max(seen), name
        assert columns[name]["min_value"] >= min(seen) - (max(seen) - min(seen)) - 1, name
        # no text rule on numbers: no format, pattern or length
        assert not {"format", "pattern"} & set(columns[name]), name
        assert not {c["type"] for c in columns[name].get("checks", [])} & {"pattern", "min_length", "max_length"}
    assert "phone" not in suggestion.yaml
    # a categorical column: its values without the token
    assert columns["sex"]["allowed_values"] == sorted({r["sex"] for r in rows} - {"NA"})
    assert columns["species"]["allowed_values"] == sorted({r["species"] for r in rows})
    # the draft is a contract declaring those types and the tokens
    contract = load_contract(suggestion.yaml)
    declared = {c.name: c.type.describe() if c.type else None for c in contract.columns}
    assert declared["bill_length_mm"] == "double" and declared["flipper_length_mm"] == "int"
    assert declared["observed_on"] == "date"
    assert yaml.safe_load(suggestion.yaml)["dataset"]["null_values"] == expected_tokens


def test_the_draft_runs_on_its_own_data_as_declared(spark: Any, suggestion: Any, text_input: Any) -> None:
    """The draft read back as the contract it is: the CSV read with its declared types and tokens, nothing
    unparseable, no column string-typed, every check computed — the same day's data passes its own draft."""
    from airflow_dq_contracts.engine.runner import run_contract

    rows, _ = text_input
    contract = load_contract(suggestion.yaml)
    result = run_contract(spark, contract, reference_time="2024-05-11T00:00:00Z")
    by_id = {c.check_id: c for c in result.checks}
    assert result.row_count == len(rows)
    assert [c.check_id for c in result.checks if c.status != "passed"] == [], [
        (c.check_id, c.status, c.message) for c in result.checks if c.status != "passed"
    ]
    for name in ("bill_length_mm", "flipper_length_mm", "body_mass_g", "observed_on"):
        assert by_id[f"{name}/schema"].failed_rows == 0, by_id[f"{name}/schema"].message


def test_an_identifier_name_makes_a_key_with_its_caveat(
    suggestion: Any, text_input: tuple[list[dict[str, str]], str]
) -> None:
    rows, _ = text_input
    columns = by_name(suggestion.document)
    n = len(rows)
    ids = [int(r["order_id"]) for r in rows]
    tickets = [int(r["ticket"]) for r in rows]
    # both are duplicate-free (plain Python) in a range where that could be luck (the birthday rule)
    assert len(set(ids)) == n and len(set(tickets)) == n
    id_span = max(ids) - min(ids) + 1
    assert n * n / 10 < id_span < 500 * n * n
    # the one named like an identifier is the key, its checks gate, the chance is a comment
    assert columns["order_id"].get("primary_key") is True
    key_checks = {(c["type"], c.get("max"), c["severity"]) for c in columns["order_id"]["checks"]}
    assert {("missing", 0, "P0"), ("duplicates", 0, "P0")} <= key_checks
    assert f"# caveat: {n:,} random draws from a range of {id_span:,} could be duplicate-free by chance" in (
        suggestion.yaml
    )
    # the other keeps today's rule: no key, the reason said
    assert "unique" not in columns["ticket"] and "primary_key" not in columns["ticket"]
    ticket_span = max(tickets) - min(tickets) + 1
    assert (
        f"# not suggested as a key: {n:,} random draws from a range of {ticket_span:,} could be duplicate-free"
        in suggestion.yaml
    )
    contract = load_contract(suggestion.yaml)
    loaded = {c.name: c for c in contract.columns}
    assert {(c.type, c.severity) for c in loaded["order_id"].checks} >= {("missing", "P0"), ("duplicates", "P0")}
    assert not any(c.type == "duplicates" for c in loaded["ticket"].checks + loaded["ticket"].constraints)


def test_cli_reads_with_input_options(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--input-option sep=;`` reads a semicolon CSV as its columns and goes into the draft's dataset.options."""
    from airflow_dq_contracts.cli.main import main

    rows = [
        {k: v for k, v in row.items() if k in ("order_id", "species", "bill_length_mm")} for row in make_rows()[:300]
    ]
    for row in rows:
        row["bill_length_mm"] = row["bill_length_mm"].replace(".", ",") if row["bill_length_mm"] != "NA" else "NA"
    source = write_csv(rows, tmp_path / "semicolon.csv", sep=";")
    out = tmp_path / "semicolon.yaml"
    argv = ["suggest", "--input", source, "--input-format", "csv", "--input-option", "sep=;"]
    code = main([*argv, "--input-option", "header=true", "--name", "semi", "-o", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    assert main(["validate", str(out)]) == 0
    contract = load_contract(str(out))
    assert contract.dataset.options == {"sep": ";", "header": "true"} and contract.dataset.format == "csv"
    assert [c.name for c in contract.columns] == ["order_id", "species", "bill_length_mm"]
    # "41,3" is text (a decimal comma): the column stays a string, and NA is no token where nothing is hidden
    columns = by_name(yaml.safe_load(out.read_text()))
    assert columns["order_id"]["type"] == "int" and columns["bill_length_mm"]["type"] == "string"
    assert "null_values" not in yaml.safe_load(out.read_text())["dataset"]
    assert "format" not in columns["bill_length_mm"]
    # a malformed option is an invalid argument (exit 1) before any Spark work
    assert main(["suggest", "--input", source, "--input-format", "csv", "--input-option", "sep"]) == 1
    assert "--input-option expects KEY=VALUE, got 'sep'" in capsys.readouterr().err
