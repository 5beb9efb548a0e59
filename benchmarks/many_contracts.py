"""Benchmark: ten contracts in ONE check task against ten tasks, and against a single-contract task.

Not part of the test suite. It writes (once, with delta-rs: no JVM) ten Delta tables of ``--rows`` clean
orders each (``dags_examples/orders_data.py``, a different seed per table) and gives each its own copy of
the example contract ``dags_examples/contracts/orders.yaml`` (named ``orders_00`` … ``orders_09``, its
``dataset`` the table). Then, alternating the order every repetition so that the machine's load hits
every variant alike, it times real ``ContractCheckOperator.execute`` calls — validate → spark-submit →
evaluation → Delta writes → read-back → HTML report — each in a fresh Python process whose imports are
not timed (an Airflow worker has Airflow imported already):

* **single** — one task checking one contract (``orders_00``);
* **separate** — ten tasks, one contract each, one after the other (their times summed: ten driver starts);
* **suite** — one task with ``contract=[ten contracts]``: one spark-submit, the contracts side by side
  (``spark.dqcontracts.suiteParallelism``, default 4);
* **suite_seq** — the same with ``spark.dqcontracts.suiteParallelism=1``: one after the other in one driver
  (how much the concurrency itself buys).

It prints the median of ``--repeat`` runs of each and the ratios side by side; the target of issue 27 is
suite / single ≤ 2. Every task's decision is checked (pass: the tables are clean), so a broken run
cannot pass for a fast one.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/many_contracts.py --rows 1000 --repeat 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "dags_examples" / "contracts" / "orders.yaml"
DAY = dt.date(2024, 5, 2)
REFERENCE_TIME = "2024-05-03T00:00:00Z"  # the end of the day's interval: the data is fresh
MASTER = "local[2]"
CONTRACTS = 10


# --------------------------------------------------------------------------------------- data


def generate(data_dir: Path, rows: int) -> list[dict[str, Any]]:
    """Ten tables of ``rows`` orders and their contracts (as dicts); generated once, reused after."""
    import yaml

    sys.path.insert(0, str(ROOT / "dags_examples"))
    import orders_data

    base = yaml.safe_load(CONTRACT.read_text())
    contracts = []
    for index in range(CONTRACTS):
        path = data_dir / f"orders_{rows}_{index:02d}"
        marker = path / "_GENERATED"
        if not marker.exists():
            shutil.rmtree(path, ignore_errors=True)
            spec = orders_data.OrdersSpec(end=DAY, days=1, rows_per_day=rows, seed=1000 + index)
            orders_data.write_orders(path, orders_data.generate_orders(spec))
            marker.write_text(str(rows))
        contract = dict(base, name=f"orders_{index:02d}", dataset={"path": str(path), "format": "delta"})
        contracts.append(contract)
    return contracts


# --------------------------------------------------------------------------------------- one task (child)


def _child_task(args: argparse.Namespace) -> None:
    """Run one operator task in this (fresh) process; print its timing as one JSON line."""
    from airflow_dq_contracts.operators import ContractCheckOperator

    contracts = json.loads(Path(args.contracts).read_text())

    class TaskInstance:
        dag_id, task_id, map_index = "many_contracts", "check", -1

        def __init__(self, run_id: str) -> None:
            self.run_id = run_id

        def xcom_push(self, **_: Any) -> None:
            return None

    op = ContractCheckOperator(
        task_id="check",
        contract=contracts if len(contracts) > 1 else contracts[0],
        reference_time=REFERENCE_TIME,
        results_table=str(Path(args.out) / "dq_results"),
        warehouse=str(Path(args.out) / "warehouse"),
        fail_on_gate=False,
        spark_conf=json.loads(args.spark_conf),
    )
    began = time.time()
    summary = op.execute({"ti": TaskInstance(args.run_id)})  # type: ignore[arg-type]
    seconds = time.time() - began
    decisions = summary.get("decisions") or {summary["contract"]["name"]: summary["decision"]}
    print("TASK_TIMING " + json.dumps({"task": seconds, "decisions": decisions}), flush=True)


# --------------------------------------------------------------------------------------- orchestration


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": MASTER}),
            "DQ_CONTRACTS_JOB_CACHE": str(home / "cache"),
            "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        }
    )
    return env


def run_task(home: Path, contracts: list[dict[str, Any]], out: Path, run_id: str, conf: dict[str, str]) -> float:
    """Seconds of one task checking ``contracts`` in a fresh process (raises unless every decision is pass)."""
    spec_file = out / "contracts.json"
    out.mkdir(parents=True, exist_ok=True)
    spec_file.write_text(json.dumps(contracts))
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "_task",
        "--contracts",
        str(spec_file),
        "--out",
        str(out),
        "--run-id",
        run_id,
        "--spark-conf",
        json.dumps(conf),
    ]
    proc = subprocess.run(command, env=_env(home), capture_output=True, text=True, cwd=str(home))
    for line in proc.stdout.splitlines():
        if line.startswith("TASK_TIMING "):
            timing = json.loads(line[len("TASK_TIMING ") :])
            wrong = {name: d for name, d in timing["decisions"].items() if d != "pass"}
            if len(timing["decisions"]) != len(contracts) or wrong:
                raise RuntimeError(f"expected {len(contracts)} passing contracts, got {timing['decisions']}")
            return float(timing["task"])
    raise RuntimeError(f"task failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def benchmark(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="dq-many-contracts-"))
    began = time.perf_counter()
    contracts = generate(data_dir, args.rows)
    print(f"# {CONTRACTS} tables of {args.rows:,} rows ready in {time.perf_counter() - began:.1f} s", flush=True)
    variants = ["single", "separate", "suite", "suite_seq"]
    times: dict[str, list[float]] = {name: [] for name in variants}
    for rep in range(args.repeat):
        order = variants if rep % 2 == 0 else list(reversed(variants))
        for name in order:
            out = home / f"{name}-{rep}"
            if name == "single":
                seconds = run_task(home, contracts[:1], out, f"single-{rep}", {})
            elif name == "separate":
                seconds = sum(
                    run_task(home, [contract], out / str(index), f"separate-{rep}-{index}", {})
                    for index, contract in enumerate(contracts)
                )
            elif name == "suite":
                seconds = run_task(home, contracts, out, f"suite-{rep}", {})
            else:
                seconds = run_task(
                    home, contracts, out, f"suite-seq-{rep}", {"spark.dqcontracts.suiteParallelism": "1"}
                )
            times[name].append(seconds)
            print(f"  rep {rep + 1} {name:<9} {seconds:7.1f} s", flush=True)
    median = {name: statistics.median(values) for name, values in times.items()}
    single = median["single"]
    print(f"\n{CONTRACTS} contracts on {args.rows:,}-row Delta tables, master {MASTER}, {os.cpu_count()} cores")
    print(f"median of {args.repeat} run(s) each, seconds and ratio to one single-contract task:")
    for name, label in (
        ("single", "one task, one contract"),
        ("separate", f"{CONTRACTS} tasks, one contract each"),
        ("suite", f"one task, {CONTRACTS} contracts (concurrent)"),
        ("suite_seq", f"one task, {CONTRACTS} contracts (one at a time)"),
    ):
        print(f"  {label:<42} {median[name]:7.1f} s   × {median[name] / single:5.2f}")
    print(
        f"  {CONTRACTS} tasks / one suite task: {median['separate'] / median['suite']:.2f}×; "
        f"one-at-a-time / concurrent suite: {median['suite_seq'] / median['suite']:.2f}×; "
        f"target suite ≤ 2× single: {'met' if median['suite'] <= 2 * single else 'NOT met'}"
    )
    if args.json_out:
        report = {
            "rows": args.rows,
            "contracts": CONTRACTS,
            "median_s": {k: round(v, 2) for k, v in median.items()},
            "ratio_to_single": {k: round(v / single, 2) for k, v in median.items()},
        }
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n")
    shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("_task")
    child.add_argument("--contracts", required=True)
    child.add_argument("--out", required=True)
    child.add_argument("--run-id", required=True)
    child.add_argument("--spark-conf", default="{}")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--data-dir", default=str(ROOT / ".work" / "bench-many-contracts"))
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if args.command == "_task":
        _child_task(args)
    else:
        benchmark(args)


if __name__ == "__main__":
    main()
