"""``dq-contracts run`` end to end, as a user runs it: a real subprocess, a real Spark JVM, a Parquet input.

The conformance contract of ``test_engine_checks`` (every check type and return mode) is written
to YAML and run with ``--filter``, ``--reference-time`` and ``--json-out``; every check's
``metric_value`` and ``passed`` in the JSON must equal the plain-Python reference computed on the
rows the filter keeps. One JVM start; the argument-error cases exit before Spark starts.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from engine_fixtures import PRESENT_DAYS, REFERENCE_TEXT, make_rows, to_df, verdict
from test_engine_checks import NAMED, _expected, contract_dict

ROOT = Path(__file__).resolve().parent.parent
RUN_FILTER = "rid >= 50"


def _cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [sys.executable, "-m", "airflow_dq_contracts.cli.main", "run", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def contract_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "conformance.yaml"
    path.write_text(yaml.safe_dump(contract_dict(), allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.spark
@pytest.mark.slow
def test_run_json_out_matches_plain_python_for_every_check(spark, tmp_path, contract_file):
    rows = make_rows()
    data = tmp_path / "orders.parquet"
    to_df(spark, rows).write.parquet(str(data))
    kept = [r for r in rows if r["rid"] >= 50]
    # The hand-computed completeness metrics assume every present day survives the filter.
    assert {r["day"] for r in kept} - {None} == set(PRESENT_DAYS)
    out = tmp_path / "summary.json"

    proc = _cli(
        str(contract_file),
        "--input",
        str(data),
        "--input-format",
        "parquet",
        "--filter",
        RUN_FILTER,
        "--reference-time",
        REFERENCE_TEXT,
        "--json-out",
        str(out),
        "--master",
        "local[2]",
    )

    summary = json.loads(out.read_text(encoding="utf-8"), parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))
    assert proc.returncode == (3 if summary["decision"] == "gate" else 0), proc.stderr
    assert summary["row_count"] == len(kept)
    assert summary["filter"] == RUN_FILTER and summary["dataset"] == str(data)
    # Plus schema conformance: one passing <column>/schema per declared column (all present here).
    schema = [c for c in summary["checks"] if c["check_type"] == "schema"]
    assert len(summary["checks"]) - len(schema) == len(NAMED)
    assert len(schema) == len(contract_dict()["columns"]) and {c["status"] for c in schema} == {"passed"}
    by_name = {(c["column"], c["check_name"]): c for c in summary["checks"]}
    for case in NAMED:
        column, _, check, _ = case
        record = by_name[(column, check["name"])]
        want = _expected(case, kept)
        assert record["row_count"] == want.row_count, check["name"]
        if want.error:
            assert (record["status"], record["metric_value"], record["passed"]) == ("error", None, False), check
            continue
        assert math.isclose(record["metric_value"], want.metric, rel_tol=1e-9, abs_tol=1e-9), (check, record)
        assert record["passed"] is verdict(check, want.metric, want.failed_rows), (check, record)
        assert record["filter"] == RUN_FILTER

    # Progress per phase on stderr; Spark's own log kept out of the way (it goes to a file).
    for phase in ("read:", "plan:", "scan:", "grouped pass", "evaluate:"):
        assert f"[dq-contracts] {phase}" in proc.stderr, proc.stderr
    noise = [
        line
        for line in proc.stderr.splitlines()
        if any(word in line for word in ("WARN", "log4j", "ivy", "INFO", "Exception"))
    ]
    assert not noise, noise
    assert f"decision {summary['decision']}" in proc.stdout


def test_argument_errors_exit_1_before_spark_starts(tmp_path, contract_file):
    proc = _cli(str(contract_file), "--input", str(tmp_path), "--reference-time", "next tuesday", timeout=120)
    assert proc.returncode == 1
    assert "--reference-time" in proc.stderr and "Traceback" not in proc.stderr

    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nchecks:\n  - {name: r, type: num_rowz}\n", encoding="utf-8")
    proc = _cli(str(broken), "--input", str(tmp_path), timeout=120)
    assert proc.returncode == 1
    assert "broken.yaml:3" in proc.stderr and "num_rowz" in proc.stderr and "Traceback" not in proc.stderr
