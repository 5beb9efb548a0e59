"""Issue 10: what a contract declares is enforced — schema conformance, column constraints, the SLA's
freshness, deprecation, ``_dq_flags`` on kept rows, column tags in the results.

Contract-side tests are plain Python. Engine tests run real Spark (the session fixture) on small
generated rows; every expected count is computed here from the same Python rows, by hand-written
rules, never read back from the engine.
"""

from __future__ import annotations

import collections
import datetime as dt
import difflib
import re

import pytest

from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.contract.conformance import compatible, rename_hint
from airflow_dq_contracts.contract.diff import diff_contracts
from airflow_dq_contracts.contract.model import ColumnType

UTC = dt.timezone.utc
REFERENCE = dt.datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def ids(contract) -> list[str]:
    return [c.check_id for c in contract.evaluated_checks()]


# --------------------------------------------------------------------------------------- contract side


CONSTRAINED = """
name: payments
version: 1.0.0
columns:
  - name: txn_id
    type: long
    primary_key: true
    tags: [keys]
  - name: currency
    type: string
    nullable: false
    allowed_values: [INR, USD, SGD]
  - name: phone
    type: string
    pattern: "^\\\\+91[0-9]{10}$"
  - name: email
    type: string
    format: email
  - name: amount
    type: double
    min_value: 0
    max_value: 1000
    tags: [finance, pii]
    checks:
      - {name: Amount mean, type: mean, max: 500, tags: [finance, stats]}
"""


def test_constraints_compile_to_checks_with_fixed_ids_and_the_default_severity():
    contract = load_contract(CONSTRAINED)
    by_id = {c.check_id: c for c in contract.evaluated_checks()}
    assert ids(contract) == [
        "txn_id/schema",
        "currency/schema",
        "phone/schema",
        "email/schema",
        "amount/schema",
        "txn_id/not_null",
        "txn_id/unique",
        "currency/not_null",
        "currency/allowed_values",
        "phone/pattern",
        "email/pattern",
        "amount/amount_mean",
        "amount/min_value",
        "amount/max_value",
    ]
    expected_types = {
        "txn_id/not_null": "missing",
        "txn_id/unique": "duplicates",
        "currency/not_null": "missing",
        "currency/allowed_values": "whitelist",
        "phone/pattern": "pattern",
        "email/pattern": "pattern",
        "amount/min_value": "min",
        "amount/max_value": "max",
    }
    for check_id, kind in expected_types.items():
        check = by_id[check_id]
        # P1 by default; every constraint reads single rows, so P1 quarantines them (DESIGN §6).
        assert (check.type, check.severity, check.action) == (kind, "P1", "quarantine"), check_id
    for check_id in ("txn_id/schema", "amount/schema"):
        assert (by_id[check_id].type, by_id[check_id].severity, by_id[check_id].action) == ("schema", "P0", "gate")
    # Column tags reach every check of the column, after the check's own, without repeats.
    assert by_id["amount/amount_mean"].tags == ("finance", "stats", "pii")
    assert by_id["amount/min_value"].tags == ("finance", "pii")
    assert by_id["txn_id/unique"].tags == ("keys",)
    # The written checks stay what the document wrote.
    assert [c.check_id for c in contract.all_checks()] == ["amount/amount_mean"]
    # Locations point at the declaring key.
    assert by_id["currency/allowed_values"].path == "columns[1].allowed_values"
    assert by_id["txn_id/not_null"].path == "columns[0].primary_key"


def test_enforcement_switches_and_severities():
    text = CONSTRAINED.replace(
        "version: 1.0.0",
        "version: 1.0.0\nenforcement: {schema: {mode: exact, severity: P2}, constraints: {severity: P0}}",
    )
    contract = load_contract(text)
    by_id = {c.check_id: c for c in contract.evaluated_checks()}
    assert by_id["_table_/schema"].severity == "P2" and by_id["_table_/schema"].action == "flag"
    assert (by_id["currency/allowed_values"].severity, by_id["currency/allowed_values"].action) == ("P0", "gate")
    # `off`, bare (YAML reads it as false) or quoted, disables.
    for spelling in ("off", "'off'", '"OFF"'):
        off = load_contract(
            CONSTRAINED.replace(
                "version: 1.0.0", f"version: 1.0.0\nenforcement: {{schema: {spelling}, constraints: {spelling}}}"
            )
        )
        assert ids(off) == ["amount/amount_mean"], spelling
        assert off.enforcement.schema_mode == "off" and off.enforcement.constraints is False


def test_explicit_checks_that_assert_the_same_thing_suppress_the_constraint():
    contract = load_contract("""
name: t
columns:
  - name: id
    type: long
    primary_key: true
    checks:
      - {name: present, type: missing, max: 0, severity: P0}
      - {name: not null in EU, type: missing, max: 0, filter: "region = 'eu'"}
  - name: code
    type: string
    allowed_values: [a, b, c]
    checks:
      - {name: strict codes, type: whitelist, values: [a, b]}
  - name: level
    type: int
    nullable: false
    min_value: 0
    max_value: 10
    checks:
      - {name: never negative, type: min, min: 1}
      - {name: loose max, type: max, max: 50}
      - {name: mostly present, type: missing, return: pct, max: 0.1}
checks:
  - {name: id unique, type: duplicates, columns: [id], max: 0}
""")
    # id: written `missing max 0` asserts not-null (the filtered one does not); the table-level
    # duplicates on [id] asserts unique. code: a stricter whitelist asserts the allowed values.
    # level: `min 1` is stricter than min_value 0; `max 50` is looser than 10, `pct ≤ 0.1` weaker than none.
    implicit = [
        i
        for i in ids(contract)
        if not i.endswith("/schema")
        and i.split("/")[1] in ("not_null", "unique", "allowed_values", "pattern", "min_value", "max_value")
    ]
    assert implicit == ["level/not_null", "level/max_value"]


def test_sla_freshness_becomes_a_check_unless_written():
    base = """
name: t
sla: {freshness_hours: 6, timestamp_column: ts}
columns:
  - {name: ts, type: timestamp}
"""
    contract = load_contract(base)
    check = {c.check_id: c for c in contract.evaluated_checks()}["_table_/sla_freshness"]
    assert (check.type, check.params["max_age_hours"], check.params["timestamp_column"]) == ("freshness", 6.0, "ts")
    assert (check.severity, check.action, check.validator.high) == ("P1", "gate", 6.0)
    written = load_contract(
        base + "checks:\n  - {name: fresh, type: freshness, max_age_hours: 2, timestamp_column: ts}\n"
    )
    assert "_table_/sla_freshness" not in ids(written)
    assert "_table_/sla_freshness" not in ids(load_contract(base + "enforcement: {sla: off}\n"))
    assert "_table_/sla_freshness" not in ids(load_contract("name: t\nsla: {freshness_hours: 6}\n"))


def test_deprecation_keys_read_a_bare_yaml_date_and_drop_the_column_constraints():
    contract = load_contract("""
name: t
columns:
  - {name: mcc, type: string, nullable: false, deprecated: true, deprecated_by: merchant_mcc, sunset: 2026-05-01}
  - {name: merchant_mcc, type: string}
""")
    column = contract.columns[0]
    assert (column.deprecated, column.deprecated_by, column.sunset) == (True, "merchant_mcc", dt.date(2026, 5, 1))
    assert ids(contract) == ["mcc/schema", "merchant_mcc/schema"]
    quoted = load_contract("name: t\ncolumns:\n  - {name: a, deprecated: true, sunset: '2026-05-01'}\n")
    assert quoted.columns[0].sunset == dt.date(2026, 5, 1)


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("enforcement: {schema: {mode: strict}}", ["enforcement.schema.mode: unknown schema mode 'strict'"]),
        ("enforcement: {constraints: {severity: P9}}", ["enforcement.constraints.severity: unknown severity 'P9'"]),
        ("enforcement: {schema: {mode: exact, level: 2}}", ["enforcement.schema.level: unknown key 'level'"]),
        ("enforcement: {constraint: off}", ["enforcement.constraint: unknown key 'constraint'"]),
        ("columns:\n  - {name: s, type: string, min_value: 3}", ["columns[0].min_value: 'min_value' needs a numeric"]),
        ("columns:\n  - {name: s, type: string, pattern: '[a-'}", ["columns[0].pattern: invalid regular expression"]),
        (
            "columns:\n  - {name: s, type: int, min_value: 5, max_value: 1}",
            ["columns[0].min_value: 'min_value' 5 is greater"],
        ),
        ("columns:\n  - {name: s, unique: yes please}", ["columns[0].unique: 'unique' must be true or false"]),
        (
            "columns:\n  - {name: s, allowed_values: []}",
            ["columns[0].allowed_values: 'allowed_values' must be a non-empty"],
        ),
        ("columns:\n  - {name: s, deprecated: true, sunset: soon}", ["columns[0].sunset: 'sunset' must be a date"]),
        (
            "columns:\n  - {name: s, deprecated_by: t}",
            [
                "columns[0].deprecated_by: 'deprecated_by' only applies",
                "columns[0].deprecated_by: column 't' is not declared",
            ],
        ),
        (
            "columns:\n  - {name: s, primary_key: true, nullable: true}",
            ["columns[0].nullable: a primary key is never NULL"],
        ),
        (
            "columns:\n  - name: s\n    nullable: false\n    checks: [{name: not null, type: count}]",
            ["columns[0].checks[0].name: check_id 's/not_null' is the id of the constraint"],
        ),
    ],
)
def test_bad_enforcement_and_constraint_keys_are_located_errors_all_at_once(text, fragments):
    with pytest.raises(ContractValidationError) as caught:
        load_contract("name: t\n" + text + "\n", filename="c.yaml")
    lines = [str(issue) for issue in caught.value.issues]
    assert len(lines) == len(fragments), lines
    for fragment in fragments:
        assert any(fragment in line and line.startswith("c.yaml:") for line in lines), (fragment, lines)


def test_rename_hint_finds_shared_name_tokens_where_difflib_does_not():
    # The seed's incident: difflib alone does not suggest merchant_mcc for mcc_code.
    assert difflib.SequenceMatcher(None, "mcc_code", "merchant_mcc").ratio() < 0.35
    assert difflib.get_close_matches("mcc_code", ["merchant_mcc", "ingest_batch"]) == []
    string = ColumnType("string")
    present = [("ingest_batch", ColumnType("long")), ("merchant_mcc", string), ("merchant_name", string)]
    assert rename_hint("mcc_code", string, present) == "merchant_mcc"
    # A type that cannot hold the column's values is no candidate, however similar the name.
    assert rename_hint("mcc_code", ColumnType("long"), [("merchant_mcc", string)]) is None
    assert rename_hint("customer_id", ColumnType("long"), [("customerid", ColumnType("long"))]) == "customerid"
    assert rename_hint("discount", ColumnType("double"), [("shipping_fee", ColumnType("double"))]) is None


@pytest.mark.parametrize(
    "declared, actual, ok",
    [
        (ColumnType("long"), ColumnType("int"), True),
        (ColumnType("int"), ColumnType("long"), False),
        (ColumnType("long"), ColumnType("string"), False),
        (ColumnType("double"), ColumnType("float"), True),
        (ColumnType("decimal"), ColumnType("decimal", precision=18, scale=4), True),
        (ColumnType("decimal", precision=10, scale=2), ColumnType("decimal", precision=12, scale=2), False),
        (ColumnType("decimal", precision=12, scale=2), ColumnType("decimal", precision=10, scale=2), True),
        (ColumnType("list", value_type=ColumnType("long")), ColumnType("list", value_type=ColumnType("int")), True),
        (ColumnType("list"), ColumnType("list", value_type=ColumnType("string")), True),
        (ColumnType("timestamp"), ColumnType("date"), False),
        (None, ColumnType("binary"), True),
    ],
)
def test_compatible_follows_the_widening_rules_of_diff(declared, actual, ok):
    assert compatible(declared, actual) is ok


def _diff(old: str, new: str, today: dt.date) -> list[tuple[str, str, str]]:
    return [
        (c.kind, c.category, c.description)
        for c in diff_contracts(load_contract(old), load_contract(new), today=today)
        if c.kind != "note"
    ]


def test_diff_removing_columns_respects_deprecation_and_sunset():
    old = """
name: t
version: 1.0.0
columns:
  - {name: a, type: long}
  - {name: b, type: string, deprecated: true, sunset: 2026-05-01}
  - {name: c, type: string, deprecated: true}
"""
    new = "name: t\nversion: 1.1.0\ncolumns:\n  - {name: a, type: long}\n"
    before = _diff(old, new, dt.date(2026, 4, 30))
    assert before == [
        ("breaking", "column_removed", "column 'b' removed before its sunset 2026-05-01"),
        ("compatible", "column_removed", "deprecated column 'c' removed"),
    ]
    after = _diff(old, new, dt.date(2026, 5, 1))
    assert after[0] == ("compatible", "column_removed", "deprecated column 'b' removed after its sunset 2026-05-01")
    plain = _diff(
        "name: t\ncolumns:\n  - {name: a}\n  - {name: b}\n", "name: t\ncolumns:\n  - {name: a}\n", dt.date(2026, 1, 1)
    )
    assert plain == [("breaking", "column_removed", "column 'b' removed")]


def test_diff_reports_a_rename_not_a_removal_and_an_addition():
    old = """
name: t
columns:
  - {name: mcc_code, type: string, deprecated: true, sunset: 2026-05-01}
"""
    new = "name: t\ncolumns:\n  - {name: merchant_mcc, type: string, renamed_from: mcc_code}\n"
    assert _diff(old, new, dt.date(2026, 4, 1)) == [
        ("breaking", "column_renamed", "column 'mcc_code' renamed to 'merchant_mcc' before its sunset 2026-05-01")
    ]
    assert _diff(old, new, dt.date(2026, 6, 1)) == [
        ("compatible", "column_renamed", "column 'mcc_code' renamed to 'merchant_mcc' after its sunset 2026-05-01")
    ]
    undeprecated = "name: t\ncolumns:\n  - {name: mcc_code, type: string}\n"
    widened = "name: t\ncolumns:\n  - {name: merchant_mcc, type: long, renamed_from: mcc_code}\n"
    assert _diff(undeprecated, widened, dt.date(2026, 6, 1)) == [
        ("breaking", "column_renamed", "column 'mcc_code' renamed to 'merchant_mcc'"),
        ("breaking", "column_retyped", "column 'merchant_mcc' type changed: string → long"),
    ]


# --------------------------------------------------------------------------------------- engine


def _frame(spark, rows: list[dict], ddl: str):
    names = [part.strip().split(" ")[0] for part in ddl.split(",")]
    return spark.createDataFrame([tuple(r.get(n) for n in names) for r in rows], ddl)


def _evaluate(contract, df, reference=REFERENCE):
    from airflow_dq_contracts.engine import evaluate

    return evaluate(contract, df, reference, progress=lambda message: None)


def _by_id(result) -> dict:
    return {r.check_id: r for r in result.checks}


TXNS = """
name: txns
version: 1.0.0
columns:
  - {name: txn_id, type: long}
  - {name: mcc_code, type: string, checks: [{name: mcc known, type: missing, max: 0, severity: P1}]}
  - {name: amount, type: long}
"""


def test_renamed_column_gates_with_the_rename_hint(spark):
    rows = [{"txn_id": i, "merchant_mcc": f"{5000 + i % 7}", "amount": 10 * i, "ingest_batch": 1} for i in range(20)]
    df = _frame(spark, rows, "txn_id long, merchant_mcc string, amount long, ingest_batch long")
    result = _evaluate(load_contract(TXNS), df)
    records = _by_id(result)
    record = records["mcc_code/schema"]
    assert (record.check_type, record.status, record.severity, record.action) == ("schema", "failed", "P0", "gate")
    assert record.message == "missing column mcc_code — did the producer rename it to merchant_mcc?"
    assert (records["txn_id/schema"].status, records["amount/schema"].status) == ("passed", "passed")
    # A check on the missing column still reports an error, as before.
    assert records["mcc_code/mcc_known"].status == "error"
    assert result.decision == "gate"


def test_retyped_column_fails_schema_and_exact_mode_names_extra_columns(spark):
    rows = [{"txn_id": i, "mcc_code": "5411", "amount": str(i), "note": "x"} for i in range(5)]
    df = _frame(spark, rows, "txn_id long, mcc_code string, amount string, note string")
    records = _by_id(_evaluate(load_contract(TXNS), df))
    assert records["amount/schema"].status == "failed"
    assert records["amount/schema"].message.startswith("column amount is string in the data but declared long")
    assert "_table_/schema" not in records  # contains: extra columns are allowed
    exact = load_contract(TXNS + "enforcement: {schema: {mode: exact}}\n")
    records = _by_id(_evaluate(exact, df))
    table = records["_table_/schema"]
    assert (table.status, table.metric_value, table.column) == ("failed", 1.0, None)
    assert "undeclared column(s) in the data: note" in table.message


def test_narrower_type_conforms_and_a_deprecated_absent_column_passes(spark):
    contract = load_contract("""
name: txns
columns:
  - {name: txn_id, type: long}
  - {name: mcc_code, type: string, deprecated: true, deprecated_by: merchant_mcc, sunset: 2026-05-01}
  - {name: merchant_mcc, type: string, nullable: false}
""")
    rows = [{"txn_id": i, "merchant_mcc": "5411"} for i in range(5)]
    result = _evaluate(contract, _frame(spark, rows, "txn_id int, merchant_mcc string"))
    records = _by_id(result)
    assert records["txn_id/schema"].status == "passed"  # int data under a long declaration widens
    assert records["mcc_code/schema"].status == "passed"
    assert (
        records["mcc_code/schema"].message == "deprecated column mcc_code is absent (replaced by merchant_mcc; "
        "sunset 2026-05-01)"
    )
    assert result.decision == "pass" and result.counts()["failed"] == result.counts()["error"] == 0


CONSTRAINT_CONTRACT = """
name: payments
columns:
  - {name: txn_id, type: long, primary_key: true}
  - {name: currency, type: string, allowed_values: [INR, USD, SGD]}
  - {name: phone, type: string, pattern: "^\\\\+91[0-9]{10}$"}
  - {name: amount, type: double, min_value: 0, max_value: 1000}
  - name: note
    type: string
    tags: [free-text]
    checks:
      - {name: note is short, type: max_length, max: 8, severity: P2, tags: [ux]}
"""
CONSTRAINT_DDL = "txn_id long, currency string, phone string, amount double, note string"


def _constraint_rows() -> list[dict]:
    rows = []
    for i in range(60):
        rows.append(
            {
                "txn_id": None if i == 7 else (i - 1 if i in (20, 21) else i),  # NULL once; 19 twice
                "currency": ["INR", "USD", "SGD", "XYZ", None][i % 5] if i % 11 else "inr",
                "phone": f"+91{9000000000 + i}" if i % 13 else "12345",
                "amount": -5.0 if i == 3 else float(i * 17 % 1100),  # 59 → 1003 > 1000
                "note": "ok" if i % 9 else "a long note",
            }
        )
    return rows


def _expected_violations(rows: list[dict]) -> list[set[str]]:
    """Per row, the constraints it breaks, by hand (DESIGN §4 semantics)."""
    ids_count = collections.Counter(r["txn_id"] for r in rows)
    out = []
    for r in rows:
        broken = set()
        if r["txn_id"] is None:
            broken.add("txn_id/not_null")
        if r["txn_id"] is None or ids_count[r["txn_id"]] > 1:  # NULLs count as duplicates
            broken.add("txn_id/unique")
        if r["currency"] is not None and r["currency"] not in ("INR", "USD", "SGD"):
            broken.add("currency/allowed_values")
        if r["phone"] is not None and not re.search(r"^\+91[0-9]{10}$", r["phone"]):
            broken.add("phone/pattern")
        if r["amount"] is not None and r["amount"] < 0:
            broken.add("amount/min_value")
        if r["amount"] is not None and r["amount"] > 1000:
            broken.add("amount/max_value")
        out.append(broken)
    return out


def test_each_constraint_quarantines_exactly_its_violating_rows_and_flags_are_kept(spark, tmp_path):
    from airflow_dq_contracts.engine.runner import run_contract

    rows = _constraint_rows()
    expected = _expected_violations(rows)
    for check_id in (
        "txn_id/not_null",
        "txn_id/unique",
        "currency/allowed_values",
        "phone/pattern",
        "amount/min_value",
        "amount/max_value",
    ):
        assert any(check_id in e for e in expected), f"the rows exercise {check_id}"
    source = str(tmp_path / "payments")
    _frame(spark, rows, CONSTRAINT_DDL).write.parquet(source)
    contract = load_contract(CONSTRAINT_CONTRACT)
    tables = {
        "results_table": str(tmp_path / "results"),
        "quarantine_table": str(tmp_path / "quarantine"),
        "valid_table": str(tmp_path / "valid"),
    }
    # A valid table written by the previous version (no _dq_flags): it gains the column.
    old = {"txn_id": 1000, "currency": "INR", "phone": "+919000000000", "amount": 1.0, "note": "old"}
    _frame(spark, [{**old, "_dq_run_id": "before"}], CONSTRAINT_DDL + ", _dq_run_id string").write.format("delta").save(
        tables["valid_table"]
    )
    result = run_contract(
        spark,
        contract,
        input_path=source,
        input_format="parquet",
        reference_time=REFERENCE,
        run_id="enforce-1",
        **tables,
    )
    records = _by_id(result)
    for check_id in (
        "txn_id/not_null",
        "txn_id/unique",
        "currency/allowed_values",
        "phone/pattern",
        "amount/min_value",
        "amount/max_value",
    ):
        want = sum(1 for e in expected if check_id in e)
        assert (records[check_id].status, records[check_id].failed_rows) == ("failed", want), check_id
        assert records[check_id].action == "quarantine"
    assert result.decision == "quarantine"

    quarantined = spark.read.format("delta").load(tables["quarantine_table"]).collect()
    everything = spark.read.format("delta").load(tables["valid_table"])
    assert everything.columns == CONSTRAINT_DDL.replace(" long", "").replace(" string", "").replace(
        " double", ""
    ).split(", ") + ["_dq_run_id", "_dq_flags"]
    assert [r["_dq_flags"] for r in everything.where("_dq_run_id = 'before'").collect()] == [None]
    valid = everything.where("_dq_run_id = 'enforce-1'").collect()
    key = lambda r: (r["txn_id"], r["currency"], r["phone"], r["amount"], r["note"])  # noqa: E731
    want_q = collections.Counter(key(r) for r, e in zip(rows, expected) if e)
    assert collections.Counter(key(r) for r in quarantined) == want_q
    assert len(valid) + len(quarantined) == len(rows)
    for row in quarantined:
        broken = {v["check_id"] for v in row["_dq_violations"]}
        index = next(i for i, r in enumerate(rows) if key(r) == key(row))
        assert broken - {"note/note_is_short"} == expected[index]
    # The valid table keeps each row's flags (the P2 max_length check flags long notes).
    for row in valid:
        flags = [(f["check_id"], f["action"]) for f in row["_dq_flags"]]
        assert flags == ([("note/note_is_short", "flag")] if len(row["note"]) > 8 else []), row

    # Tags: check tags then column tags, in the results table too.
    stored = {r["check_id"]: r for r in spark.read.format("delta").load(tables["results_table"]).collect()}
    assert stored["note/note_is_short"]["tags"] == ["ux", "free-text"]
    assert stored["note/schema"]["tags"] == ["free-text"]
    assert stored["txn_id/unique"]["tags"] == []


def test_sla_freshness_stale_and_fresh(spark):
    contract = load_contract("""
name: t
sla: {freshness_hours: 6, timestamp_column: ts}
columns:
  - {name: ts, type: timestamp}
""")
    newest = dt.datetime(2026, 3, 1, 3, 0, tzinfo=UTC)
    df = _frame(spark, [{"ts": newest - dt.timedelta(hours=h)} for h in range(5)], "ts timestamp")
    fresh = _by_id(_evaluate(contract, df, newest + dt.timedelta(hours=5)))["_table_/sla_freshness"]
    assert (fresh.status, fresh.metric_value) == ("passed", pytest.approx(5.0))
    stale = _evaluate(contract, df, newest + dt.timedelta(hours=7))
    record = _by_id(stale)["_table_/sla_freshness"]
    assert (record.status, record.metric_value, record.action) == ("failed", pytest.approx(7.0), "gate")
    assert stale.decision == "gate"


def test_tags_reach_a_results_table_written_by_the_previous_version(spark, tmp_path):
    from airflow_dq_contracts.results import RESULT_COLUMNS
    from airflow_dq_contracts.store import sinks

    first_wave = [
        (name, kind)
        for name, kind in RESULT_COLUMNS
        if name not in ("tags", "reference_time", "expected_min", "expected_max", "evaluated_from", "source_range")
    ]
    path = str(tmp_path / "results")
    ddl = ", ".join(f"`{name}` {kind}" for name, kind in first_wave)
    old_row = tuple("old" if kind == "string" else None for _, kind in first_wave)
    spark.createDataFrame([old_row], ddl).write.format("delta").partitionBy("contract_name").save(path)

    contract = load_contract(CONSTRAINT_CONTRACT)
    rows = [r for r in _constraint_rows() if r["txn_id"] is not None][:5]
    result = _evaluate(contract, _frame(spark, rows, CONSTRAINT_DDL))
    sinks.write_results(spark, result.checks, path, run_id=result.run_id)
    table = spark.read.format("delta").load(path)
    assert "tags" in table.columns
    by_run = collections.defaultdict(dict)
    for row in table.collect():
        by_run[row["run_id"]][row["check_id"]] = row["tags"]
    assert by_run["old"] == {"old": None}
    assert by_run[result.run_id]["note/note_is_short"] == ["ux", "free-text"]
    assert by_run[result.run_id]["currency/allowed_values"] == []
