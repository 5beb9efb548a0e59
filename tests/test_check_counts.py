"""One check count on every surface: ``validate``, ``run``, ``suggest`` and the report say the same numbers.

A contract runs the checks written in it and the checks its columns and SLA imply (a schema check per
declared column, ``not_null`` for ``nullable: false``, the SLA's freshness). The expected numbers are
counted here from the YAML by plain Python; each surface must print ``N checks (W written, I implied by
columns/SLA)`` with those numbers. One ``dq-contracts run`` (one JVM), one ``suggest`` (one JVM).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from airflow_dq_contracts.cli.main import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
UTC = dt.timezone.utc

CONTRACT = """\
name: counted_orders
version: 1.0.0
sla:
  freshness_hours: 1000000
  timestamp_column: created_at
checks:
  - {name: some rows, type: num_rows, min: 1}
columns:
  - name: order_id
    type: long
    nullable: false
    checks:
      - {name: unique, type: duplicates, max: 0}
  - name: status
    type: string
    checks:
      - {name: known, type: whitelist, values: [new, paid]}
      - {name: few missing, type: missing, max: 5}
  - name: created_at
    type: timestamp
"""

COUNT_LINE = re.compile(r"(\d+) checks? \((\d+) written, (\d+) implied by columns/SLA\)")


def _expected(document: dict) -> tuple[int, int, int]:
    """(total, written, implied) of a contract document, by hand: what a run evaluates."""
    columns = document.get("columns", [])
    written = len(document.get("checks", [])) + sum(len(c.get("checks", [])) for c in columns)
    schema = len(columns)  # one schema check per declared column
    not_null = sum(1 for c in columns if c.get("nullable") is False)
    sla = document.get("sla", {})
    freshness = 1 if sla.get("freshness_hours") is not None and sla.get("timestamp_column") else 0
    implied = schema + not_null + freshness
    return written + implied, written, implied


def _counts(text: str) -> list[tuple[int, int, int]]:
    return [(int(a), int(b), int(c)) for a, b, c in COUNT_LINE.findall(text)]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [sys.executable, "-m", "airflow_dq_contracts.cli.main", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def orders(tmp_path_factory) -> dict[str, Path]:
    import pyarrow as pa
    from deltalake import write_deltalake

    root = tmp_path_factory.mktemp("counts")
    now = dt.datetime.now(UTC).replace(microsecond=0)
    table = pa.table(
        {
            "order_id": pa.array(list(range(1, 41)), pa.int64()),
            "status": ["new" if i % 2 else "paid" for i in range(40)],
            "created_at": pa.array([now - dt.timedelta(minutes=i) for i in range(40)], pa.timestamp("us", tz="UTC")),
        }
    )
    write_deltalake(str(root / "orders"), table)
    contract = root / "orders.yaml"
    contract.write_text(CONTRACT, encoding="utf-8")
    return {"root": root, "data": root / "orders", "contract": contract}


def test_the_count_names_written_and_implied_checks():
    from airflow_dq_contracts.contract import load_contract
    from airflow_dq_contracts.contract.counts import count_checks

    count = count_checks(load_contract(CONTRACT))
    total, written, implied = _expected(yaml.safe_load(CONTRACT))
    assert (count.total, count.written, count.implied) == (total, written, implied) == (9, 4, 5)
    assert str(count) == "9 checks (4 written, 5 implied by columns/SLA)"
    assert count.total == sum(1 for _ in load_contract(CONTRACT).evaluated_checks())
    # A disabled check stays in the contract but is not run: counted apart, in neither part.
    disabled = CONTRACT.replace(
        "{name: some rows, type: num_rows, min: 1}", "{name: rows, type: num_rows, enabled: false}"
    )
    off = count_checks(load_contract(disabled))
    assert (off.total, off.written, off.disabled) == (8, 3, 1)
    assert str(off) == "8 checks (3 written, 5 implied by columns/SLA; 1 disabled, not run)"


@pytest.mark.spark
@pytest.mark.slow
def test_validate_run_report_and_suggest_print_the_same_count(orders, capsys):
    want = _expected(yaml.safe_load(CONTRACT))

    assert cli_main(["validate", str(orders["contract"])]) == 0
    assert _counts(capsys.readouterr().out) == [want]

    results, quarantine = orders["root"] / "wh" / "dq_results", orders["root"] / "wh" / "quarantine"
    ran = _cli(
        "run",
        str(orders["contract"]),
        "--input",
        str(orders["data"]),
        "--input-format",
        "delta",
        "--results-table",
        str(results),
        "--quarantine-table",
        str(quarantine),
        "--master",
        "local[1]",
    )
    assert ran.returncode == 0, ran.stderr
    assert _counts(ran.stderr) == [want], ran.stderr
    # A clean pass: the quarantine table was never written, and the report is still there.
    assert not quarantine.exists()

    page = orders["root"] / "report.html"
    assert cli_main(["report", "--results-table", str(results), "--contract", "counted_orders", "-o", str(page)]) == 0
    capsys.readouterr()
    text = page.read_text(encoding="utf-8")
    assert _counts(text) == [want]
    assert text.count('<tr data-status="') == want[0]  # one result row per counted check

    draft = orders["root"] / "draft.yaml"
    suggested = _cli("suggest", "--input", str(orders["data"]), "-o", str(draft))
    assert suggested.returncode == 0, suggested.stderr
    document = yaml.safe_load(draft.read_text(encoding="utf-8"))
    said = _counts(suggested.stderr)
    assert len(said) == 1 and said[0][1] == _expected(document)[1]  # written: the draft's own checks
    assert cli_main(["validate", str(draft)]) == 0
    assert _counts(capsys.readouterr().out) == said
