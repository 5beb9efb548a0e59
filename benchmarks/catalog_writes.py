"""Benchmark: a run's writes to path tables vs catalog tables over Spark Connect, side by side (issue 37).

Not part of the test suite. Starts a real Spark Connect server with a Hive metastore (the tests'
``connect_fixtures``), then in ONE Connect session runs the same small contract (a referential check
that quarantines rows) ``--repeat`` times on each side, each run with a new run id:

* **path** — results, registry and quarantine tables given as paths;
* **catalog** — the same tables given as catalog names (``dq37b.results``, ``dq37b.quarantine``).

Printed per side: the quarantine write, the results write (registry row, rows, commit version) and
their sum — best and median seconds of the timed runs — and the Spark Connect round trips of each
(a counting wrapper around the client's execute, analyze and config calls); then the ratio catalog /
path (the goal: at most 2×). The first run of each side (table creation) is untimed.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/catalog_writes.py --repeat 5
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for entry in (ROOT, os.path.join(ROOT, "tests")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

CONTRACT = {
    "name": "catalog_writes",
    "columns": [
        {"name": "id", "checks": [{"name": "id_missing", "type": "missing", "max": 0}]},
        {
            "name": "qty",
            "checks": [{"name": "qty_min", "type": "min", "min": 0, "action": "quarantine"}],
        },
    ],
}


class RpcCounter:
    """Counts a Connect client's round trips by kind (execute, analyze, config)."""

    def __init__(self, client: Any) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        for method, kind in (
            ("_execute_and_fetch_as_iterator", "execute"),
            ("_analyze", "analyze"),
            ("config", "config"),
        ):
            original = getattr(client, method)

            def counted(*args: Any, _original: Any = original, _kind: str = kind, **kwargs: Any) -> Any:
                self.counts[_kind] += 1
                return _original(*args, **kwargs)

            setattr(client, method, counted)

    def total(self) -> int:
        return sum(self.counts.values())


def _one_run(spark: Any, counter: RpcCounter, contract: Any, input_path: str, results: str, quarantine: str) -> dict:
    from airflow_dq_contracts.engine.runner import run_contract
    from airflow_dq_contracts.store.spark_remote import SessionCapabilities

    marks: list[tuple[str, float, int]] = []

    def progress(line: str) -> None:
        marks.append((line, time.perf_counter(), counter.total()))

    began, rpcs = time.perf_counter(), counter.total()
    run_contract(
        spark,
        contract,
        input_path=input_path,
        input_format="delta",
        results_table=results,
        quarantine_table=quarantine,
        progress=progress,
        capabilities=SessionCapabilities.of(spark, shared_storage=True),
    )
    out = {}
    previous_time, previous_rpcs = began, rpcs
    for line, at, count in marks:
        for label, prefix in (("quarantine", "quarantine write"), ("results", "results:")):
            if line.startswith(prefix):
                out[label] = (at - previous_time, count - previous_rpcs)
        if line.startswith("rows:"):
            continue
        previous_time, previous_rpcs = at, count
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rows", type=int, default=2000)
    args = parser.parse_args()

    from connect_fixtures import start_connect_server
    from pyspark.sql import SparkSession

    from airflow_dq_contracts.contract import load_contract

    server = start_connect_server()
    try:
        spark = SparkSession.builder.remote(server.url).getOrCreate()
        counter = RpcCounter(spark.client)
        root = tempfile.mkdtemp(prefix="dq-catalog-writes-")
        input_path = os.path.join(root, "orders")
        rows = [(i, None if i % 50 == 0 else (i % 97) - 1) for i in range(args.rows)]  # qty -1 quarantined
        spark.createDataFrame(rows, "id long, qty long").write.format("delta").save(input_path)
        spark.sql("CREATE DATABASE IF NOT EXISTS dq37b").collect()
        contract = load_contract(CONTRACT)
        sides = {
            "path": (os.path.join(root, "results"), os.path.join(root, "quarantine")),
            "catalog": ("dq37b.results", "dq37b.quarantine"),
        }
        measured: dict[str, dict[str, list[tuple[float, int]]]] = {}
        for results, quarantine in sides.values():
            _one_run(spark, counter, contract, input_path, results, quarantine)  # creates the tables: untimed
        for _ in range(args.repeat):  # alternated, so a drift of the machine hits both sides
            for side, (results, quarantine) in sides.items():
                run = _one_run(spark, counter, contract, input_path, results, quarantine)
                for label, value in run.items():
                    measured.setdefault(side, {}).setdefault(label, []).append(value)
        print(f"{'write':<12}{'side':<9}{'best s':>8}{'median s':>10}{'RPCs':>6}")
        totals: dict[str, float] = {}
        for side in sides:
            whole = [q[0] + r[0] for q, r in zip(measured[side]["quarantine"], measured[side]["results"])]
            totals[side] = statistics.median(whole)
            for label, values in measured[side].items():
                seconds = [v[0] for v in values]
                print(f"{label:<12}{side:<9}{min(seconds):>8.2f}{statistics.median(seconds):>10.2f}{values[-1][1]:>6}")
            rpcs = measured[side]["quarantine"][-1][1] + measured[side]["results"][-1][1]
            print(f"{'both':<12}{side:<9}{min(whole):>8.2f}{totals[side]:>10.2f}{rpcs:>6}")
        print(f"catalog / path (median of both writes): {totals['catalog'] / totals['path']:.2f}x (goal: <= 2x)")
        spark.stop()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
