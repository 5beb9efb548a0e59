"""Benchmark: what reading the baseline history adds to a run, on a results table of 1M rows.

Not part of the test suite. Builds (once, with delta-rs and pyarrow — no Spark) a Delta results
table with the fixed schema, partitioned by ``contract_name`` like the real one: ``--contracts``
contracts × ``--checks`` checks × ``--days`` daily runs (default 50 × 20 × 1000 = 1,000,000 rows),
appended in ``--commits`` commits so each partition holds several files with their own statistics.
Then, for one contract, it times exactly what the evaluator does before validating when the
contract has baselines (``Evaluator._learn``): :func:`airflow_dq_contracts.store.results.history.read_history`
(partition + reference-time pruning), :func:`gated_runs`, and :func:`select_points` +
:func:`judge` for every check. For comparison it also times an unpruned read of the contract's
whole partition. The best of ``--repeat`` runs is reported (after one untimed warm-up).

Usage::

    .venv/bin/python benchmarks/history_read.py [--table /tmp/dq_history_bench] [--repeat 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from airflow_dq_contracts.contract.baseline import Baseline, gated_runs, judge, select_points  # noqa: E402
from airflow_dq_contracts.results import RESULT_COLUMNS  # noqa: E402
from airflow_dq_contracts.store.results.history import read_history  # noqa: E402

UTC = dt.timezone.utc
START = dt.datetime(2022, 1, 1, tzinfo=UTC)


def _arrow_schema():
    import pyarrow as pa

    kinds = {
        "string": pa.string(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "bigint": pa.int64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "array<string>": pa.list_(pa.string()),
    }
    return pa.schema([(name, kinds[kind]) for name, kind in RESULT_COLUMNS])


def build(path: str, contracts: int, checks: int, days: int, commits: int) -> int:
    """Write the synthetic results table; returns its row count."""
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = _arrow_schema()
    rng = random.Random(1)
    per_commit = max(1, days // commits)
    total = 0
    for first_day in range(0, days, per_commit):
        columns: dict[str, list] = {name: [] for name, _ in RESULT_COLUMNS}
        for d in range(first_day, min(days, first_day + per_commit)):
            moment = START + dt.timedelta(days=d)
            for c in range(contracts):
                run_id = f"run-{c}-{d}"
                for k in range(checks):
                    failed = rng.random() < 0.02
                    values = {
                        "run_id": run_id,
                        "contract_name": f"contract_{c}",
                        "contract_version": "1.0.0",
                        "dataset": f"silver.table_{c}",
                        "check_id": f"col_{k}/check_{k}",
                        "check_name": f"check {k}",
                        "check_type": "num_rows",
                        "column": f"col_{k}",
                        "severity": "P1",
                        "action": "gate" if k % 3 == 0 else "flag",
                        "validator": "between [1, 2] ±1e-9",
                        "metric_value": 1000.0 + rng.gauss(0, 50),
                        "status": "failed" if failed else "passed",
                        "passed": not failed,
                        "failed_rows": None,
                        "message": "",
                        "row_count": 1000,
                        "filter": None,
                        "evaluated_at": moment + dt.timedelta(hours=1),
                        "dag_id": None,
                        "task_id": None,
                        "airflow_run_id": None,
                        "tags": [],
                        "reference_time": moment,
                        "expected_min": None,
                        "expected_max": None,
                    }
                    for name in columns:  # a column not set here (evaluated_from, source_range) is NULL
                        columns[name].append(values.get(name))
        batch = pa.table(columns, schema=schema)
        write_deltalake(path, batch, mode="append", partition_by=["contract_name"])
        total += batch.num_rows
    return total


def learn(path: str, contract: str, dataset: str, checks: int, reference: dt.datetime, lookback: int) -> int:
    """What the evaluator does for a contract whose every check has a baseline; returns rows read."""
    baseline = Baseline(lookback_days=lookback, min_history=7, band=(0.5, 2.5))
    rows = read_history(path, contract, since=reference - dt.timedelta(days=lookback), until=reference)
    gated = gated_runs(rows)
    for k in range(checks):
        judge(
            baseline,
            select_points(
                rows,
                check_id=f"col_{k}/check_{k}",
                dataset=dataset,
                reference_time=reference,
                baseline=baseline,
                gated=gated,
            ),
        )
    return len(rows)


def best_of(repeat: int, action) -> tuple[float, object]:
    action()  # warm-up: the Delta log is parsed, files are in the page cache
    timings, value = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        value = action()
        timings.append(time.perf_counter() - began)
    return min(timings), value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default="/tmp/dq_history_bench")
    parser.add_argument("--contracts", type=int, default=50)
    parser.add_argument("--checks", type=int, default=20)
    parser.add_argument("--days", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=40)
    parser.add_argument("--lookback", type=int, default=28)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    if not os.path.exists(os.path.join(args.table, "_delta_log")):
        began = time.perf_counter()
        rows = build(args.table, args.contracts, args.checks, args.days, args.commits)
        print(f"built {rows:,} result rows in {time.perf_counter() - began:.1f} s at {args.table}")
    reference = START + dt.timedelta(days=args.days - 1)
    seconds, read = best_of(
        args.repeat, lambda: learn(args.table, "contract_7", "silver.table_7", args.checks, reference, args.lookback)
    )
    print(f"history for one run (read {read} rows, {args.checks} baselines): {seconds:.3f} s")
    whole, rows = best_of(args.repeat, lambda: len(read_history(args.table, "contract_7")))
    print(f"the contract's whole partition without the time window ({rows:,} rows): {whole:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
