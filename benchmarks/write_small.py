"""Benchmark: what writing little costs — a first write into a new table against an append to an existing one.

Not part of the test suite. A check task writes a handful of rows per run: a few results rows, one
registry row, the quarantined rows (often ten or so) and the valid rows (the input of a landed
partition). This measures, in one Spark session per round (``local[2]``, the job's session from
``engine/session.py``), side by side and alternating so that the machine's load hits both alike:

* for each of the **results**, **registry**, **quarantine** and **valid** tables: the first write
  of a run into a **new** table (the path does not exist) and a run's write into an **existing**
  table (created by an untimed write before), and the difference new − existing;
* a **small quarantine write**: 10 and 10,000 quarantined rows appended to an existing table;
* **end to end**: ``run_contract`` on a 200-row Delta input with 10 bad rows (a whitelist check that
  quarantines, a duplicates check that flags), writing results, quarantine and valid rows into new
  tables and into existing ones: the job's own progress lines for the quarantine write, the valid
  write and the results (registry + results) phase.

The frames written by the sink calls are cached and counted before they are timed, so a figure is
the write (and whatever it collects), not the computation of its rows. Every variant first makes one
untimed write of each kind (the session's first Delta write loads classes: a cost every task pays
once, measured by ``benchmarks/task_overhead.py``, not here).

``--before-src DIR`` runs the same rounds with the package from another source tree (e.g. ``git
archive`` of the base commit), alternating with this tree round by round, and prints both with the
ratios before/after. Each round is a fresh Python process (its own JVM); the figures are medians
over ``--repeat`` rounds × ``--inner`` writes.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/write_small.py --repeat 3
    git archive <base-commit> | tar -x -C /tmp/dq-before
    PYTHONPATH=. .venv/bin/python benchmarks/write_small.py --repeat 3 --before-src /tmp/dq-before
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ROWS, BAD = 200, 10
KINDS = ("results", "registry", "quarantine", "valid")
CONTRACT = {
    "name": "write_small",
    "version": "1.0.0",
    "columns": [
        {"name": "id", "checks": [{"name": "unique", "type": "duplicates", "max": 0, "severity": "P2"}]},
        {
            "name": "status",
            "checks": [{"name": "known", "type": "whitelist", "values": ["new", "paid"], "severity": "P1"}],
        },
        {"name": "day"},
        {"name": "amount"},
    ],
}
DDL = "id long, status string, day string, amount double"
VIOLATION = ("status/known", "known", "whitelist", "P1", "quarantine")
VIOLATIONS_DDL = "array<struct<check_id:string,check_name:string,check_type:string,severity:string,action:string>>"
PHASES = {
    "quarantine": re.compile(r"quarantine write: .* in ([\d.]+) s"),
    "valid": re.compile(r"valid write: .* in ([\d.]+) s"),
    "results": re.compile(r"results: .* in ([\d.]+) s"),
}


def _rows(n: int, bad_every: int) -> list[tuple[Any, ...]]:
    return [(i, "lost" if bad_every and i % bad_every == 0 else "new", "2024-05-02", float(i)) for i in range(n)]


def _child(args: argparse.Namespace) -> None:
    """One round in this process: every measurement, printed as one JSON line."""
    sys.path.insert(0, args.src)
    from airflow_dq_contracts.contract import load_contract
    from airflow_dq_contracts.engine.runner import run_contract
    from airflow_dq_contracts.engine.session import get_spark
    from airflow_dq_contracts.results import CheckResult
    from airflow_dq_contracts.store import registry, sinks

    spark = get_spark(app_name="write-small", master="local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(args.work)
    contract = load_contract(CONTRACT)
    now = dt.datetime(2024, 5, 2, 4, tzinfo=dt.timezone.utc)

    def annotated(n: int, bad_every: int) -> Any:
        rows = [r + ([VIOLATION] if r[1] == "lost" else [],) for r in _rows(n, bad_every)]
        return spark.createDataFrame(rows, f"{DDL}, _dq_violations {VIOLATIONS_DDL}")

    valid, quarantined = sinks.split_annotated(annotated(ROWS, ROWS // BAD))
    _, big = sinks.split_annotated(annotated(10_000, 1))
    for frame in (valid, quarantined, big):
        frame.cache().count()
    assert quarantined.count() == BAD and big.count() == 10_000

    def records(run_id: str) -> list[Any]:
        return [
            CheckResult(
                run_id=run_id,
                contract_name="write_small",
                contract_version="1.0.0",
                dataset="bench",
                check_id=f"c{i}",
                check_name=f"c{i}",
                check_type="missing",
                column="id",
                severity="P1",
                action="gate",
                validator="<= 0",
                metric_value=0.0,
                status="passed",
                passed=True,
                failed_rows=0,
                message="",
                row_count=ROWS,
                filter=None,
                evaluated_at=now,
            )
            for i in range(4)
        ]

    def write(kind: str, path: str) -> float:
        run_id = "r-" + uuid.uuid4().hex[:12]
        began = time.perf_counter()
        if kind == "results":
            sinks.write_results(spark, records(run_id), path, run_id=run_id)
        elif kind == "registry":
            row = registry.registry_row(
                contract,
                contract_text="name: write_small",
                run_id=run_id,
                run_at=now,
                decision="pass",
                dataset="bench",
                results_table=path,
                quarantine_table=None,
                valid_table=None,
            )
            sinks.write_registry(spark, row, path)
        elif kind == "quarantine":
            sinks.write_quarantine(spark, quarantined, path, run_id=run_id)
        else:
            sinks.write_valid(spark, valid, path, run_id=run_id)
        return time.perf_counter() - began

    out: dict[str, list[float]] = {}
    existing = {kind: str(work / f"existing_{kind}") for kind in KINDS}
    for kind in KINDS:  # untimed: the existing tables, and the session's first Delta writes
        write(kind, existing[kind])
        write(kind, str(work / f"warm_{kind}"))
    for i in range(args.inner):
        for kind in KINDS:
            order = ("new", "existing") if (i + args.round) % 2 == 0 else ("existing", "new")
            for which in order:
                path = str(work / f"new_{kind}_{i}") if which == "new" else existing[kind]
                out.setdefault(f"{kind}:{which}", []).append(write(kind, path))
    for _ in range(args.inner):
        run_id = "r-" + uuid.uuid4().hex[:12]
        began = time.perf_counter()
        sinks.write_quarantine(spark, big, existing["quarantine"], run_id=run_id)
        out.setdefault("quarantine 10,000 rows:existing", []).append(time.perf_counter() - began)

    # End to end: the job's write phases on a 200-row input with 10 bad rows.
    source = str(work / "input")
    spark.createDataFrame(_rows(ROWS, ROWS // BAD), DDL).write.format("delta").save(source)
    run_tables = {which: work / f"run_{which}" for which in ("existing", "new")}

    def run(folder: Path) -> dict[str, float]:
        lines: list[str] = []
        run_contract(
            spark,
            contract,
            input_path=source,
            input_format="delta",
            reference_time=now.isoformat(),
            results_table=str(folder / "results"),
            quarantine_table=str(folder / "quarantine"),
            valid_table=str(folder / "valid"),
            progress=lines.append,
        )
        found: dict[str, float] = {}
        for line in lines:
            for phase, pattern in PHASES.items():
                match = pattern.search(line)
                if match and phase not in found:
                    found[phase] = float(match.group(1))
        return found

    run(run_tables["existing"])  # untimed: creates the existing tables
    for i in range(args.inner):
        order = ("new", "existing") if (i + args.round) % 2 == 0 else ("existing", "new")
        for which in order:
            folder = run_tables[which] if which == "existing" else work / f"run_new_{i}"
            for phase, seconds in run(folder).items():
                out.setdefault(f"run {phase}:{which}", []).append(seconds)
    print("WRITE_SMALL " + json.dumps(out), flush=True)
    spark.stop()


def _round(src: str, round_no: int, inner: int) -> dict[str, list[float]]:
    work = tempfile.mkdtemp(prefix="dq-write-small-")
    env = {**os.environ, "PYTHONPATH": src}
    try:
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--src",
                src,
                "--work",
                work,
                "--round",
                str(round_no),
                "--inner",
                str(inner),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in proc.stdout.splitlines():
        if line.startswith("WRITE_SMALL "):
            data: dict[str, list[float]] = json.loads(line[len("WRITE_SMALL ") :])
            return data
    raise SystemExit(f"round failed ({src}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")


def _print(variants: dict[str, dict[str, list[float]]]) -> None:
    names = list(variants)
    medians = {v: {key: statistics.median(values) for key, values in data.items()} for v, data in variants.items()}
    keys = sorted(
        {key.split(":")[0] for data in medians.values() for key in data}, key=lambda k: (k.startswith("run"), k)
    )
    header = f"{'write':<28}" + "".join(f"{v + ' new':>14}{v + ' existing':>18}{v + ' Δ':>12}" for v in names)
    print(header)
    for key in keys:
        cells = ""
        for v in names:
            new, old = medians[v].get(f"{key}:new"), medians[v].get(f"{key}:existing")
            cells += f"{new:>14.2f}" if new is not None else f"{'-':>14}"
            cells += f"{old:>18.2f}" if old is not None else f"{'-':>18}"
            cells += f"{new - old:>12.2f}" if new is not None and old is not None else f"{'-':>12}"
        print(f"{key:<28}{cells}")
    if len(names) == 2:
        before, after = names
        print(f"\nratios {before}/{after} (median seconds):")
        for key in sorted(medians[after]):
            a, b = medians[after][key], medians[before].get(key)
            if b is not None and a > 0:
                print(f"  {key:<40} {b:8.2f} s → {a:6.2f} s   ×{b / a:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (fresh processes) per variant")
    parser.add_argument("--inner", type=int, default=2, help="timed writes of each kind per round")
    parser.add_argument("--before-src", help="source tree of the package before the change")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--src", default=str(ROOT), help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    sources = {"after": str(ROOT)}
    if args.before_src:
        sources = {"before": str(Path(args.before_src).resolve()), "after": str(ROOT)}
    variants: dict[str, dict[str, list[float]]] = {name: {} for name in sources}
    for round_no in range(args.repeat):
        order = list(sources) if round_no % 2 == 0 else list(reversed(sources))
        for name in order:
            began = time.perf_counter()
            for key, values in _round(sources[name], round_no, args.inner).items():
                variants[name].setdefault(key, []).extend(values)
            print(f"round {round_no + 1}/{args.repeat} {name}: {time.perf_counter() - began:.0f} s", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)\n")
    _print(variants)


if __name__ == "__main__":
    main()
