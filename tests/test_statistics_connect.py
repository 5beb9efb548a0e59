"""Statistics-first over Spark Connect and for catalog-named inputs (issue 37).

On the real Connect server (tests/connect_fixtures.py: Delta, a Hive metastore), one client process
writes a Delta table at a path and the same rows as a catalog table (``dq37.stats``), then runs one
contract of counts and min/max checks (integers, dates and doubles) on each: the job asks the server's
``DESCRIBE DETAIL`` for the table's location and id, reads the Delta log there, and answers from it.
Asserted: every check's ``evaluated_from`` is ``statistics``; the values equal plain Python over the
generated rows and the same run with statistics off (the scan, ``evaluated_from`` ``scan``).

The Connect client runs in a process of its own: a pytest process that opened a Connect session
would turn every later local session into a Connect one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from connect_fixtures import connect_server  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DAYS = [dt.date(2024, 5, d) for d in (1, 2, 3)]
ROWS = [
    (
        i,
        None if i % 7 == 0 else (i * 37) % 101 - 20,
        DAYS[i % 3].isoformat(),
        ((i * 7919) % 1000) / 8.0 - 40.0,
    )
    for i in range(1, 241)
]

CONTRACT = {
    "name": "stats_connect",
    "checks": [{"name": "rows", "type": "num_rows", "min": 1}],
    "columns": [
        {"name": "id", "checks": [{"name": "id_missing", "type": "missing", "max": 0}]},
        {
            "name": "qty",
            "checks": [
                {"name": "qty_nulls", "type": "missing", "max": 100},
                {"name": "qty_min", "type": "min", "min": -1000},
                {"name": "qty_max", "type": "max", "max": 1000},
            ],
        },
        {"name": "day", "checks": [{"name": "day_min", "type": "min"}]},
        {
            "name": "amount",
            "checks": [
                {"name": "amount_min", "type": "min", "min": -1000},
                {"name": "amount_max", "type": "max", "max": 1000},
            ],
        },
    ],
}

PROBE = r"""
import json, sys
from pyspark.sql import SparkSession
from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine.runner import run_contract
from airflow_dq_contracts.engine.statistics_first import STATISTICS_CONF_KEY

url, path, rows, contract = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), load_contract(json.loads(sys.argv[4]))
spark = SparkSession.builder.remote(url).getOrCreate()
df = spark.createDataFrame([tuple(r) for r in rows], "id long, qty int, day string, amount double")
df = df.selectExpr("id", "qty", "CAST(day AS DATE) AS day", "amount").repartition(4)
df.write.format("delta").save(path)
spark.sql("CREATE DATABASE IF NOT EXISTS dq37")
df.write.format("delta").mode("overwrite").saveAsTable("dq37.stats")
out = {}
for label, source in (("path", {"input_path": path, "input_format": "delta"}), ("catalog", {"table": "dq37.stats"})):
    for statistics in ("true", "false"):
        spark.conf.set(STATISTICS_CONF_KEY, statistics)
        notes = []
        result = run_contract(spark, contract, progress=notes.append, **source)
        out[f"{label}_{statistics}"] = {
            "checks": {
                c.check_id.replace("_table_/", ""): [c.metric_value, c.status, c.evaluated_from]
                for c in result.checks if c.check_type != "schema"
            },
            "notes": [n for n in notes if n.startswith("statistics")],
        }
spark.conf.unset(STATISTICS_CONF_KEY)
print("RESULT " + json.dumps(out), flush=True)
"""


def _probe(url: str, path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, url, str(path), json.dumps(ROWS), json.dumps(CONTRACT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


def _expected() -> dict[str, float | None]:
    qty = [r[1] for r in ROWS if r[1] is not None]
    amounts = [r[3] for r in ROWS]
    return {
        "rows": len(ROWS),
        "id/id_missing": 0,
        "qty/qty_nulls": sum(1 for r in ROWS if r[1] is None),
        "qty/qty_min": min(qty),
        "qty/qty_max": max(qty),
        "day/day_min": None,  # a date's metric is the engine's own encoding: equal to the scan's (below)
        "amount/amount_min": min(amounts),
        "amount/amount_max": max(amounts),
    }


def test_connect_and_catalog_inputs_are_answered_from_the_delta_log(connect_server, tmp_path):  # noqa: F811
    out = _probe(connect_server.url, tmp_path / "stats")
    expected = _expected()
    for label in ("path", "catalog"):
        stats, scan = out[f"{label}_true"]["checks"], out[f"{label}_false"]["checks"]
        assert set(stats) == set(expected), label
        for check_id, value in expected.items():
            if value is not None:
                assert stats[check_id][0] == pytest.approx(value), (label, check_id)
        assert {k: v[:2] for k, v in stats.items()} == {k: v[:2] for k, v in scan.items()}, label
        assert {k: v[2] for k, v in stats.items()} == dict.fromkeys(expected, "statistics"), (
            label,
            out[label + "_true"],
        )
        assert {k: v[2] for k, v in scan.items()} == dict.fromkeys(expected, "scan"), label
        assert all(status == "passed" for _, status, _ in stats.values()), label
        assert any("answered from the Delta log" in note for note in out[f"{label}_true"]["notes"]), label
