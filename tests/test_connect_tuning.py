"""Small runs through Spark Connect get Spark's interpreter (engine/session.py ``SmallRunTuning``).

A Connect server keeps generated classes per session and every check task opens a new session, so a
small run would compile its ~50 classes again each time. Asserted, on the real Connect server and
real Delta: the size of a Delta source comes from the server's ``DESCRIBE DETAIL`` and equals the
bytes of its data files (summed here from the folder); while sizes are read the interpreter and
whole-stage codegen off are set provisionally; ``decide`` keeps the interpreter up to
``interpretedInputBytes``, only whole-stage codegen off up to ``smallInputBytes``, nothing above;
the session's settings come back; a setting the session chose itself is left alone; a second run
on the same session (a suite) leaves the tuning to the first; and a tuned run gives exactly the
results of an untuned one, equal to plain Python.

The Connect client runs in a process of its own: a pytest process that opened a Connect session
would turn every later local session into a Connect one.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from connect_fixtures import connect_server  # noqa: F401  (a fixture)

ROWS = [(i % 40 + 1, ("new", "paid", "lost")[i % 3], float(i % 17) - (3.0 if i % 29 == 0 else 0.0)) for i in range(300)]

CONTRACT = {
    "name": "connect_tuning",
    "columns": [
        {"name": "id", "checks": [{"name": "unique", "type": "duplicates", "max": 0, "severity": "P2"}]},
        {
            "name": "status",
            "checks": [{"name": "known", "type": "whitelist", "values": ["new", "paid"], "severity": "P1"}],
        },
        {
            "name": "amount",
            "checks": [
                {"name": "positive", "type": "min", "min": 0, "severity": "P1"},
                {"name": "avg", "type": "mean", "between": [0, 100], "severity": "P3"},
            ],
        },
    ],
}

PROBE = r"""
import json, sys
from pyspark.sql import SparkSession
from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.engine import session as S
from airflow_dq_contracts.engine.runner import read_dataset, run_contract

url, path, rows, contract = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), load_contract(json.loads(sys.argv[4]))
spark = SparkSession.builder.remote(url).getOrCreate()
spark.createDataFrame([tuple(r) for r in rows], "id long, status string, amount double").write.format("delta").save(path)
FM, WS = "spark.sql.codegen.factoryMode", "spark.sql.codegen.wholeStage"
out = {}

def state():
    return [spark.conf.get(FM, None), spark.conf.get(WS, None)]

def tuned(label, **conf):
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        with S.SmallRunTuning(spark) as tuning:
            out[label + "_provisional"] = state()
            df = read_dataset(spark, contract, path)
            out[label + "_size"] = S.known_size(df)
            out[label + "_note"] = tuning.decide([df])
            out[label + "_kept"] = state()
            if label == "small":  # a second run on this session meanwhile (a suite): it leaves the settings alone
                with S.SmallRunTuning(spark) as inner:
                    out["inner_note"] = inner.decide([df])
                out["after_inner"] = state()
        out[label + "_after"] = state()
    finally:
        for key in conf:
            spark.conf.unset(key)

tuned("small")
size = out["small_size"]
tuned("mid", **{S.INTERPRETED_CONF_KEY: str(size - 1)})
tuned("large", **{S.SMALL_INPUT_CONF_KEY: str(size - 1)})
spark.conf.set(FM, "CODEGEN_ONLY")  # the session's own choice
tuned("own")
spark.conf.unset(FM)

lines = []
runs = {}
for label in ("tuned", "untuned"):
    if label == "untuned":
        spark.conf.set(S.SMALL_INPUT_CONF_KEY, "0")
    result = run_contract(spark, contract, input_path=path, input_format="delta", progress=lines.append)
    runs[label] = {c.check_id: [c.status, c.metric_value, c.failed_rows] for c in result.checks}
out["runs"] = runs
out["notes"] = [line for line in lines if line.startswith("small input")]
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


@pytest.mark.spark
def test_small_connect_runs_are_interpreted_and_give_the_same_results(connect_server, tmp_path):  # noqa: F811
    out = _probe(connect_server.url, tmp_path / "orders")
    on_disk = sum(p.stat().st_size for p in (tmp_path / "orders").rglob("*.parquet"))
    interpreted, codegen_off, untouched = ["NO_CODEGEN", "false"], [None, "false"], [None, None]

    # The size is the server's DESCRIBE DETAIL of the table: its data files' bytes.
    assert out["small_size"] == on_disk > 0
    # Small: the interpreter and whole-stage codegen off, provisionally and then kept; back afterwards.
    assert out["small_provisional"] == out["small_kept"] == interpreted
    assert "interpreter" in out["small_note"] and "whole-stage codegen off" in out["small_note"]
    assert out["inner_note"] is None and out["after_inner"] == interpreted  # the suite's second run: hands off
    assert out["small_after"] == untouched
    # Over the interpreter's limit but small: generated code again, whole-stage codegen still off.
    assert out["mid_provisional"] == interpreted and out["mid_kept"] == codegen_off
    assert "interpreter" not in out["mid_note"] and "whole-stage codegen off" in out["mid_note"]
    assert out["mid_after"] == untouched
    # Over the small limit: everything as the session had it, before the scan.
    assert out["large_note"] is None and out["large_kept"] == untouched and out["large_after"] == untouched
    # The session's own factory mode is never touched (whole-stage codegen, still Spark's default, is).
    assert out["own_provisional"] == out["own_kept"] == ["CODEGEN_ONLY", "false"]
    assert out["own_after"] == ["CODEGEN_ONLY", None]

    # A tuned run says so once and gives what an untuned run gives — and what plain Python gives.
    assert len(out["notes"]) == 1 and "interpreter" in out["notes"][0]
    runs = out["runs"]
    assert runs["tuned"] == runs["untuned"]
    ids = collections.Counter(row[0] for row in ROWS)
    amounts = [row[2] for row in ROWS]
    checks = runs["tuned"]
    assert checks["id/unique"][0] == "failed" and checks["id/unique"][2] == sum(n for n in ids.values() if n > 1)
    assert checks["status/known"][2] == sum(1 for row in ROWS if row[1] not in ("new", "paid"))
    assert checks["amount/positive"][1] == pytest.approx(min(amounts))
    assert checks["amount/positive"][2] == sum(1 for a in amounts if a < 0)
    assert checks["amount/avg"][1] == pytest.approx(sum(amounts) / len(amounts))
