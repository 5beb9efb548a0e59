"""One writer process of the concurrent table-creation test (``test_concurrency.py``).

A separate process, with its own JVM and so its own Delta log cache, is what a second Airflow task
is; threads of one SparkSession share one cache and hide the race. The process starts one local
SparkSession, says ``ready``, then for each round waits for ``<root>/go-<round>`` (all writers are
released together) and writes its own run into one *new* table of ``<root>/round-<round>/``: the results, quarantine and valid tables in turn (round
``r`` writes ``KINDS[r % 3]``). One JSON line per round on stdout: ``{"round", "kind", "ok", "error",
"began", "ended", "lock_waits"}`` — the write's window (epoch seconds) and how many times it waited on a
table's commit lock while another writer committed (``store/commit_lock.py``'s DEBUG line): the test's
proof that the writers really contended.

Example::

    python sink_writer.py --root /tmp/race --writer 3 --rounds 10
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
import time
from pathlib import Path

KINDS = ("results", "quarantine", "valid")


class _LockWaits(logging.Handler):
    """Counts the commit lock's "waited … for another commit" lines."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "for another commit" in record.getMessage() and "waited" in record.getMessage():
            self.count += 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--writer", type=int, required=True)
    parser.add_argument("--rounds", type=int, required=True)
    args = parser.parse_args()
    root = Path(args.root)

    from pyspark.sql import functions as F

    from airflow_dq_contracts.engine.session import get_spark
    from airflow_dq_contracts.results import CheckResult
    from airflow_dq_contracts.store import sinks

    waits = _LockWaits()
    lock_log = logging.getLogger("airflow_dq_contracts.store.commit_lock")
    lock_log.setLevel(logging.DEBUG)
    lock_log.addHandler(waits)
    spark = get_spark(app_name=f"sink-writer-{args.writer}", master="local[1]")
    violation = (
        "array(named_struct('check_id','id/min','check_name','min','check_type','min',"
        "'severity','P1','action','quarantine'))"
    )
    (root / f"ready-{args.writer}").touch()
    for round_no in range(args.rounds):
        go = root / f"go-{round_no}"
        while not go.exists():  # released together: every writer finds no table yet
            time.sleep(0.01)
        folder = root / f"round-{round_no}"
        run_id = f"w{args.writer}-r{round_no}"
        record = CheckResult(
            run_id=run_id,
            contract_name="race",
            contract_version="1",
            dataset="race",
            check_id="_table_/rows",
            check_name="rows",
            check_type="num_rows",
            column=None,
            severity="P1",
            action="gate",
            validator="noop",
            metric_value=3.0,
            status="passed",
            passed=True,
            failed_rows=None,
            message="",
            row_count=3,
            evaluated_at=dt.datetime.now(dt.timezone.utc),
        )
        rows = spark.range(3).withColumn("writer", F.lit(args.writer))
        kind = KINDS[round_no % len(KINDS)]
        outcome: dict = {"round": round_no, "kind": kind, "ok": True, "error": None}
        waits.count = 0
        began = time.time()
        try:
            if kind == "results":
                sinks.write_results(spark, [record], str(folder / kind), run_id=run_id)
            elif kind == "quarantine":
                sinks.write_quarantine(
                    spark, rows.withColumn("_dq_violations", F.expr(violation)), str(folder / kind), run_id=run_id
                )
            else:
                sinks.write_valid(spark, rows, str(folder / kind), run_id=run_id)
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            outcome = {**outcome, "ok": False, "error": f"{type(exc).__name__}: {str(exc)[:1500]}"}
        outcome.update(began=began, ended=time.time(), lock_waits=waits.count)
        print(json.dumps(outcome), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
