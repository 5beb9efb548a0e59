"""Contract diff: breaking vs compatible changes between two contract versions (004_*.txt).

Each expectation is written by hand from the rules in the diff module's docstring (and 004's table);
contracts are small YAML documents built here, so every case isolates one change.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_dq_contracts.cli.main import main as cli_main
from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.contract.diff import Change, diff_contracts, widens
from airflow_dq_contracts.contract.model import ColumnType

EXAMPLES = Path(__file__).resolve().parent.parent / "dags_examples" / "contracts"


def contract(
    columns: str = "",
    *,
    version: str | None = None,
    sla: str | None = None,
    dataset: str | None = None,
    metadata: str | None = None,
):
    """A contract named `t` with the given YAML `columns:` items (flow mappings, one per line)."""
    text = "name: t\n"
    if version:
        text += f"version: {version}\n"
    if sla:
        text += f"sla: {sla}\n"
    if dataset:
        text += f"dataset: {dataset}\n"
    if metadata:
        text += f"metadata: {metadata}\n"
    if columns.strip():
        text += "columns:\n" + "".join(f"  - {line.strip()}\n" for line in columns.strip().splitlines())
    return load_contract(text)


def summary(changes: list[Change]) -> list[tuple[str, str, str | None]]:
    return [(c.kind, c.category, c.column) for c in changes]


def test_identical_contracts_have_no_changes() -> None:
    old = load_contract(EXAMPLES / "orders.yaml")
    assert diff_contracts(old, load_contract(EXAMPLES / "orders.yaml")) == []


def test_type_aliases_and_column_order_are_not_changes() -> None:
    old = contract("{name: a, type: int}\n{name: b, type: bigint}\n{name: c, type: varchar}")
    new = contract("{name: c, type: string}\n{name: b, type: long}\n{name: a, type: integer}")
    assert diff_contracts(old, new) == []


# ------------------------------------------------------------------------------------------ columns


def test_removed_column_is_breaking() -> None:
    changes = diff_contracts(
        contract("{name: a, type: int}\n{name: b, type: string}"), contract("{name: a, type: int}")
    )
    assert summary(changes) == [("breaking", "column_removed", "b")]
    assert changes[0].description == "column 'b' removed"
    assert changes[0].old == "string"


def test_retyped_column_is_breaking() -> None:
    changes = diff_contracts(contract("{name: a, type: long}"), contract("{name: a, type: string}"))
    assert summary(changes) == [("breaking", "column_retyped", "a")]
    assert changes[0].description == "column 'a' type changed: long → string"
    assert (changes[0].old, changes[0].new) == ("long", "string")


@pytest.mark.parametrize(
    "before, after",
    [
        ("int", "long"),
        ("byte", "short"),
        ("short", "long"),
        ("float", "double"),
        ("int", "double"),
        ("short", "float"),
        ("'decimal(10,2)'", "'decimal(12,2)'"),
        ("'decimal(10,2)'", "'decimal(12,4)'"),
        ("int", "'decimal(10,0)'"),
        ("long", "'decimal(20,1)'"),
        ("decimal", "'decimal(12,2)'"),
        ("{kind: list, value_type: int}", "{kind: list, value_type: long}"),
        ("{kind: map, key_type: string, value_type: float}", "{kind: map, key_type: string, value_type: double}"),
    ],
)
def test_lossless_widening_is_compatible(before: str, after: str) -> None:
    changes = diff_contracts(contract(f"{{name: a, type: {before}}}"), contract(f"{{name: a, type: {after}}}"))
    assert summary(changes) == [("compatible", "column_widened", "a")]


@pytest.mark.parametrize(
    "before, after",
    [
        ("long", "int"),
        ("double", "float"),
        ("long", "double"),
        ("int", "float"),
        ("double", "'decimal(38,10)'"),
        ("'decimal(12,2)'", "'decimal(10,2)'"),
        ("'decimal(10,4)'", "'decimal(12,2)'"),
        ("long", "'decimal(18,0)'"),
        ("date", "timestamp"),
        ("timestamp", "timestamp_ntz"),
        ("string", "long"),
        ("boolean", "int"),
        ("{kind: list, value_type: long}", "{kind: list, value_type: int}"),
        ("{kind: list, value_type: int}", "{kind: map, key_type: string, value_type: int}"),
    ],
)
def test_narrowing_or_unrelated_type_change_is_breaking(before: str, after: str) -> None:
    changes = diff_contracts(contract(f"{{name: a, type: {before}}}"), contract(f"{{name: a, type: {after}}}"))
    assert summary(changes) == [("breaking", "column_retyped", "a")]


def test_widens_is_directional() -> None:
    assert widens(ColumnType("int"), ColumnType("long"))
    assert not widens(ColumnType("long"), ColumnType("int"))
    assert not widens(ColumnType("int"), ColumnType("int"))


def test_type_dropped_is_breaking_and_type_declared_is_compatible() -> None:
    typed, untyped = contract("{name: a, type: int}"), contract("{name: a}")
    assert summary(diff_contracts(typed, untyped)) == [("breaking", "column_type_dropped", "a")]
    assert summary(diff_contracts(untyped, typed)) == [("compatible", "column_type_declared", "a")]


def test_nullable_to_not_null_is_breaking_and_back_is_compatible() -> None:
    nullable, not_null = (
        contract("{name: a, type: int, nullable: true}"),
        contract("{name: a, type: int, nullable: false}"),
    )
    changes = diff_contracts(nullable, not_null)
    assert summary(changes) == [("breaking", "nullability_tightened", "a")]
    assert changes[0].description == "column 'a' changed from nullable to NOT NULL"
    assert summary(diff_contracts(not_null, nullable)) == [("compatible", "nullability_relaxed", "a")]


def test_new_not_null_column_is_breaking_and_new_nullable_column_compatible() -> None:
    old = contract("{name: a, type: int}")
    new = contract("{name: a, type: int}\n{name: b, type: string, nullable: false}\n{name: c, type: double}")
    changes = diff_contracts(old, new)
    assert summary(changes) == [("breaking", "column_added", "b"), ("compatible", "column_added", "c")]
    assert [c.description for c in changes] == ["new NOT NULL column 'b' (string)", "new nullable column 'c' (double)"]


def test_a_rename_is_a_removal_plus_an_addition() -> None:
    changes = diff_contracts(contract("{name: user_age, type: int}"), contract("{name: customer_age, type: int}"))
    assert summary(changes) == [
        ("breaking", "column_removed", "user_age"),
        ("compatible", "column_added", "customer_age"),
    ]


# ----------------------------------------------------------------------------------- allowed values


def status(values: str, case_sensitive: str = "") -> str:
    extra = f", case_sensitive: {case_sensitive}" if case_sensitive else ""
    return f"{{name: status, type: string, checks: [{{name: valid, type: whitelist, values: {values}{extra}}}]}}"


def test_removed_allowed_value_is_breaking_added_is_compatible() -> None:
    changes = diff_contracts(
        contract(status("[pending, processing, shipped]")), contract(status("[pending, shipped, refunded, returned]"))
    )
    assert summary(changes) == [
        ("breaking", "allowed_values_removed", "status"),
        ("compatible", "allowed_values_added", "status"),
    ]
    assert changes[0].old == ["processing"] and changes[1].new == ["refunded", "returned"]
    assert changes[0].description == "column 'status' no longer allows 'processing'"


def test_reordered_allowed_values_are_not_a_change() -> None:
    assert diff_contracts(contract(status("[a, b, c]")), contract(status("[c, a, b]"))) == []


def test_numeric_allowed_values_compare_by_value_not_text() -> None:
    assert diff_contracts(contract(status("[1, 2, 3]")), contract(status("[1.0, 2, 3]"))) == []
    assert summary(diff_contracts(contract(status("[1, 2]")), contract(status("['1', 2]")))) == [
        ("breaking", "allowed_values_removed", "status"),
        ("compatible", "allowed_values_added", "status"),
    ]


def test_case_insensitive_whitelists_compare_case_insensitively() -> None:
    old = contract(status("[US, CA]", "false"))
    assert diff_contracts(old, contract(status("[us, ca]", "false"))) == []
    # Becoming case-sensitive stops 'us' from matching 'US': breaking; the reverse is compatible.
    assert summary(diff_contracts(old, contract(status("[US, CA]")))) == [("breaking", "allowed_values_case", "status")]
    assert summary(diff_contracts(contract(status("[US, CA]")), old)) == [
        ("compatible", "allowed_values_case", "status")
    ]


def test_introducing_or_dropping_a_whitelist_is_compatible() -> None:
    plain = contract("{name: status, type: string}")
    listed = contract(status("[a, b]"))
    assert summary(diff_contracts(plain, listed)) == [("compatible", "allowed_values_declared", "status")]
    assert summary(diff_contracts(listed, plain)) == [("compatible", "allowed_values_dropped", "status")]


def test_several_whitelists_allow_the_union() -> None:
    two = (
        "{name: s, type: string, checks: [{name: w1, type: whitelist, values: [a, b]}, "
        "{name: w2, type: whitelist, values: [c], return: pct, min: 0.9}]}"
    )
    one = "{name: s, type: string, checks: [{name: w1, type: whitelist, values: [a, b, c]}]}"
    assert diff_contracts(contract(two), contract(one)) == []


# ---------------------------------------------------------------------------------------------- SLA


@pytest.mark.parametrize(
    "field, before, after, kind",
    [
        ("freshness_hours", 4, 6, "breaking"),
        ("freshness_hours", 6, 4, "compatible"),
        ("max_latency_minutes", 30, 60, "breaking"),
        ("max_latency_minutes", 60, 30, "compatible"),
        ("availability_target", 0.999, 0.99, "breaking"),
        ("availability_target", 0.99, 0.999, "compatible"),
        ("delivery_deadline_utc", "'06:00'", "'08:30'", "breaking"),
        ("delivery_deadline_utc", "'08:30'", "'06:00'", "compatible"),
    ],
)
def test_sla_degraded_is_breaking_improved_is_compatible(field: str, before, after, kind: str) -> None:
    changes = diff_contracts(contract(sla=f"{{{field}: {before}}}"), contract(sla=f"{{{field}: {after}}}"))
    category = "sla_degraded" if kind == "breaking" else "sla_improved"
    assert summary(changes) == [(kind, category, None)]
    word = "degraded" if kind == "breaking" else "improved"
    assert changes[0].description.startswith(f"SLA {field} {word}: ")


def test_sla_dropped_is_breaking_and_new_sla_is_compatible() -> None:
    with_sla, without = contract(sla="{freshness_hours: 4, availability_target: 0.99}"), contract()
    assert summary(diff_contracts(with_sla, without)) == [("breaking", "sla_degraded", None)] * 2
    assert summary(diff_contracts(without, with_sla)) == [("compatible", "sla_improved", None)] * 2


def test_same_deadline_written_differently_is_not_a_change() -> None:
    assert (
        diff_contracts(
            contract(sla="{delivery_deadline_utc: '6:00'}"), contract(sla="{delivery_deadline_utc: '06:00'}")
        )
        == []
    )


def test_sla_contact_changes_are_not_reported() -> None:
    assert diff_contracts(contract(sla="{support_contact: a@x.com}"), contract(sla="{support_contact: b@x.com}")) == []


# ----------------------------------------------------------------------------- dataset, partitioning


def test_dataset_moved_is_breaking() -> None:
    old = contract(dataset="{table: silver.orders}")
    changes = diff_contracts(old, contract(dataset="{table: gold.orders}"))
    assert summary(changes) == [("breaking", "dataset_moved", None)]
    assert changes[0].description == "dataset moved: table silver.orders → table gold.orders"
    assert summary(
        diff_contracts(contract(dataset="{path: /a, format: delta}"), contract(dataset="{path: /a, format: parquet}"))
    ) == [("breaking", "dataset_moved", None)]
    assert summary(diff_contracts(old, contract())) == [("breaking", "dataset_moved", None)]
    assert summary(diff_contracts(contract(), old)) == [("compatible", "dataset_declared", None)]


def test_removed_partition_column_is_breaking_added_is_compatible() -> None:
    cols = "{name: d, type: date}\n{name: h, type: int}"
    by_day = contract(cols, metadata="{partitioned_by: [d]}")
    by_day_hour = contract(cols, metadata="{partitioned_by: [d, h]}")
    assert summary(diff_contracts(by_day, by_day_hour)) == [("compatible", "partitioning_changed", "h")]
    assert summary(diff_contracts(by_day_hour, by_day)) == [("breaking", "partitioning_changed", "h")]


# ------------------------------------------------------------------------------------------ version


@pytest.mark.parametrize(
    "before, after, noted",
    [
        ("2.1.0", "2.2.0", True),  # breaking change, minor bump only
        ("2.1.0", "2.1.1", True),
        ("2.1.0", "3.0.0", False),  # major bump: fine
        ("2.1.0", "10.0.0", False),  # numeric, not text, comparison
        ("0.3.0", "0.4.0", False),  # 0.x: a minor bump is the convention for breaking changes
        ("0.3.0", "0.3.1", True),
        ("1", "2", False),
    ],
)
def test_breaking_changes_need_a_major_bump(before: str, after: str, noted: bool) -> None:
    changes = diff_contracts(
        contract("{name: a, type: int}\n{name: b, type: int}", version=before),
        contract("{name: a, type: int}", version=after),
    )
    notes = [c for c in changes if c.kind == "note"]
    assert [c.category for c in notes] == (["version_not_bumped"] if noted else [])
    assert all(not c.breaking for c in notes)
    if noted:
        assert before in notes[0].description and after in notes[0].description


def test_version_going_backwards_is_noted() -> None:
    changes = diff_contracts(contract(version="2.0.0"), contract(version="1.9.0"))
    assert summary(changes) == [("note", "version_not_bumped", None)]


def test_compatible_change_without_any_version_change_is_noted() -> None:
    changes = diff_contracts(
        contract("{name: a, type: int}", version="1.0.0"),
        contract("{name: a, type: int}\n{name: b, type: int}", version="1.0.0"),
    )
    assert summary(changes) == [("compatible", "column_added", "b"), ("note", "version_not_bumped", None)]


def test_unversioned_contracts_get_no_version_note() -> None:
    changes = diff_contracts(contract("{name: a, type: int}"), contract())
    assert summary(changes) == [("breaking", "column_removed", "a")]


def test_to_dict_is_json_ready() -> None:
    change = diff_contracts(contract("{name: a, type: int}"), contract("{name: a, type: string}"))[0]
    data = json.loads(json.dumps(change.to_dict()))
    assert data == {
        "kind": "breaking",
        "category": "column_retyped",
        "column": "a",
        "description": "column 'a' type changed: int → string",
        "breaking": True,
        "old": "int",
        "new": "string",
    }


# ------------------------------------------------------------------------------- the orders example

ORDERS_V1_TO_V2 = [
    ("breaking", "column_retyped", "customer_id"),
    ("breaking", "allowed_values_removed", "status"),
    ("compatible", "allowed_values_added", "status"),
    ("breaking", "nullability_tightened", "email"),
    ("breaking", "column_removed", "tags"),
    ("breaking", "column_added", "channel"),
    ("compatible", "column_added", "discount"),
    ("breaking", "sla_degraded", None),  # freshness_hours 4 → 6
    ("compatible", "sla_improved", None),  # max_latency_minutes 30 → 20
    ("breaking", "sla_degraded", None),  # availability_target 0.999 → 0.995
    ("note", "version_not_bumped", None),  # 2.1.0 → 2.2.0
]


def test_orders_v1_to_v2() -> None:
    changes = diff_contracts(load_contract(EXAMPLES / "orders.yaml"), load_contract(EXAMPLES / "orders_v2.yaml"))
    assert summary(changes) == ORDERS_V1_TO_V2


def test_cli_diff_exits_1_on_breaking_changes(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["diff", str(EXAMPLES / "orders.yaml"), str(EXAMPLES / "orders_v2.yaml")])
    out, err = capsys.readouterr()
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == len(ORDERS_V1_TO_V2)
    assert [line.split()[0] for line in lines] == [kind.upper() for kind, _, _ in ORDERS_V1_TO_V2]
    assert "column 'tags' removed" in out
    assert err.strip() == "7 breaking change(s)"


def test_cli_diff_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["diff", "--json", str(EXAMPLES / "orders.yaml"), str(EXAMPLES / "orders_v2.yaml")])
    out, _ = capsys.readouterr()
    assert code == 1
    data = json.loads(out)
    assert [(d["kind"], d["category"], d["column"]) for d in data] == ORDERS_V1_TO_V2
    assert sum(d["breaking"] for d in data) == 7


def test_cli_diff_exits_0_on_compatible_changes_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("name: t\nversion: 1.0.0\ncolumns:\n  - {name: a, type: int}\n", encoding="utf-8")
    new.write_text(
        "name: t\nversion: 1.1.0\ncolumns:\n  - {name: a, type: long}\n  - {name: b, type: string}\n", encoding="utf-8"
    )
    assert cli_main(["diff", str(old), str(new)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "COMPATIBLE column 'a' type widened: int → long",
        "COMPATIBLE new nullable column 'b' (string)",
    ]
    assert err == ""
    assert cli_main(["diff", str(old), str(old)]) == 0
    assert "no schema or SLA changes" in capsys.readouterr().out


def test_cli_diff_of_an_invalid_contract_is_a_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: t\ncolumns:\n  - {name: a, type: strng}\n", encoding="utf-8")
    assert cli_main(["diff", str(EXAMPLES / "orders.yaml"), str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{bad}:3: columns[0].type: unknown column type 'strng'")


def test_dq_contracts_diff_subprocess() -> None:
    exe = Path(sys.executable).with_name("dq-contracts")
    proc = subprocess.run(
        [str(exe), "diff", str(EXAMPLES / "orders.yaml"), str(EXAMPLES / "orders_v2.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == "BREAKING   column 'customer_id' type changed: long → string"
    assert "7 breaking change(s)" in proc.stderr
