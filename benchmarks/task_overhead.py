"""Benchmark: the fixed cost of a check task — a ``ContractCheckOperator`` task against a bare spark-submit.

Not part of the test suite. For each row count it generates (once, reused across runs) a Delta table
of the example ``dags_examples/contracts/orders.yaml`` contract: clean rows of one day, so the run
decides *pass* and has nothing to quarantine — the common case of a partition-scoped daily check.
Then, alternating in one loop so that the machine's load hits every variant alike, it times:

* **trivial** — ``spark-submit`` of a PySpark script that starts a session and counts one row
  (what any Spark task costs on this machine);
* **task** — ``ContractCheckOperator.execute`` (validate the contract → spark-submit of the packaged
  job → evaluation → Delta writes → read-back of the results with delta-rs), in a fresh Python
  process whose imports are not timed (an Airflow worker has Airflow imported already);
* **before** (with ``--before-src DIR``) — the same task run with the package from another source
  tree (e.g. ``git archive`` of the base commit), for before/after ratios measured side by side.

It prints the median of ``--repeat`` runs of each, the ratio task / trivial, and the job's phase
breakdown (median per phase): launcher (spark-submit's launcher JVM until the driver JVM starts),
jar resolution (Ivy's own "resolve" figure, inside the next phase), driver JVM → Python, Python →
session, read, plan, scan, grouped passes, row split and each Delta write, job exit, read-back.

``--growth N`` instead measures the results table as it grows: the time of one run's results write
(Spark, the job's code path) and of the operator's read-back (delta-rs) at 10 runs and after N runs
of real commits (written with delta-rs, 25 rows per commit, checkpoints as Spark would write them),
then again after the documented maintenance (``OPTIMIZE``, checkpoint, ``VACUUM``).

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/task_overhead.py --rows 1000 100000 --repeat 3
    git archive main | tar -x -C /tmp/dq-before
    PYTHONPATH=. .venv/bin/python benchmarks/task_overhead.py --rows 1000 --before-src /tmp/dq-before
    PYTHONPATH=. .venv/bin/python benchmarks/task_overhead.py --growth 10000
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "dags_examples" / "contracts" / "orders.yaml"
REFERENCE_TIME = "2024-05-02T04:00:00Z"
DAY = "2024-05-02"
MASTER = "local[2]"

TRIVIAL_JOB = """\
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("trivial").getOrCreate()
print("TRIVIAL_COUNT", spark.range(1).count(), flush=True)
spark.stop()
"""

# Progress lines of the job ("[dq-contracts] scan: … in 1.23 s") → phase names of the breakdown.
_PHASES = (
    ("read", re.compile(r"\] read: .* in ([\d.]+) s")),
    ("plan", re.compile(r"\] plan: .* in ([\d.]+) s")),
    ("scan", re.compile(r"\] scan: .* in ([\d.]+) s")),
    ("grouped", re.compile(r"\] grouped pass .* in ([\d.]+) s")),
    ("evaluate", re.compile(r"\] evaluate: .* in ([\d.]+) s")),
    ("quarantine_write", re.compile(r"\] quarantine write: .* in ([\d.]+) s")),
    ("valid_write", re.compile(r"\] valid write: .* in ([\d.]+) s")),
    ("row_split_total", re.compile(r"\] rows: .* in ([\d.]+) s")),
    ("results_write", re.compile(r"\] results: .* in ([\d.]+) s")),
)
_SESSION = re.compile(r"session: jvm_start=([\d.]+) jvm→python ([\d.]+) s, python→session ([\d.]+) s, session ([\d.]+) s")
_IVY = re.compile(r"resolution report :: resolve (\d+)ms")


# --------------------------------------------------------------------------------------- data


def generate(data_dir: Path, rows: int) -> Path:
    """The Delta input of ``rows`` clean orders of one day (generated once; a marker file says done)."""
    path = data_dir / f"orders_{rows}"
    marker = path / "_GENERATED"
    if marker.exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    sys.path.insert(0, str(ROOT))
    from pyspark.sql import functions as F

    from airflow_dq_contracts.engine.session import get_spark

    spark = get_spark(app_name="task-overhead-data", master=MASTER)
    reference_us = int(dt.datetime.fromisoformat(REFERENCE_TIME.replace("Z", "+00:00")).timestamp() * 1_000_000)
    statuses = F.array(*[F.lit(s) for s in ("pending", "processing", "shipped", "delivered", "cancelled")])
    currencies = F.array(*[F.lit(c) for c in ("USD", "EUR", "GBP", "CAD")])
    ident = F.col("id")
    df = spark.range(1, rows + 1).select(
        ident.alias("order_id"),
        (ident % 5000 + 1).alias("customer_id"),
        F.element_at(statuses, (ident % 5 + 1).cast("int")).alias("status"),
        ((ident % 1000) + 5.5).alias("amount"),
        F.element_at(currencies, (ident % 4 + 1).cast("int")).alias("currency"),
        F.concat(F.lit("user"), ident.cast("string"), F.lit("@example.org")).alias("email"),
        # One millisecond apart, newest at the reference time: unique and fresh (10M rows span 2.8 h).
        F.timestamp_micros(F.lit(reference_us) - ident * 1000).alias("created_at"),
        F.lit(DAY).cast("date").alias("order_date"),
        F.when(ident % 3 == 0, F.array(F.lit("gift"))).otherwise(F.array().cast("array<string>")).alias("tags"),
    )
    partitions = max(1, rows // 2_000_000)
    df.repartition(partitions).write.format("delta").save(str(path))
    spark.stop()
    marker.write_text(str(rows))
    return path


# --------------------------------------------------------------------------------------- one run (child)


def _child_task(args: argparse.Namespace) -> None:
    """Run one operator task in this (fresh) process; print its timings as one JSON line."""
    import yaml

    from airflow_dq_contracts.hooks.contract_submit import ContractSubmitHook
    from airflow_dq_contracts.operators import ContractCheckOperator

    lines: list[tuple[float, str]] = []
    marks: dict[str, float] = {}
    original_take = ContractSubmitHook._take_marker
    original_submit = ContractSubmitHook.submit_job

    def take(self: Any, line: str) -> bool:
        lines.append((time.time(), line.rstrip()))
        return original_take(self, line)

    def submit(self: Any) -> Any:
        marks["submit_start"] = time.time()
        try:
            return original_submit(self)
        finally:
            marks["submit_end"] = time.time()

    ContractSubmitHook._take_marker = take  # type: ignore[method-assign]
    ContractSubmitHook.submit_job = submit  # type: ignore[method-assign]

    class TaskInstance:
        dag_id, task_id, map_index = "task_overhead", "check", -1

        def __init__(self, run_id: str) -> None:
            self.run_id = run_id

        def xcom_push(self, **_: Any) -> None:
            return None

    # The contract as the source tree under test has it (an older tree may not know newer keys).
    contract = yaml.safe_load(Path(args.contract).read_text())
    op = ContractCheckOperator(
        task_id="check", contract=contract, input_path=args.input, input_format="delta",
        reference_time=REFERENCE_TIME, results_table=args.results, quarantine_table=args.quarantine,
        fail_on_gate=False, spark_conf=json.loads(os.environ.get("DQ_BENCH_SPARK_CONF", "{}")),
    )
    began = time.time()
    summary = op.execute({"ti": TaskInstance(args.run_id)})  # type: ignore[arg-type]
    ended = time.time()
    import airflow_dq_contracts

    record = {"task": ended - began, "decision": summary["decision"], "row_count": summary["row_count"],
              "began": began, "ended": ended, **marks, "lines": lines,
              "src": str(Path(airflow_dq_contracts.__file__).resolve().parent.parent), "input": args.input}
    # Also kept beside the generated data: a run interrupted by the deadline still has its phases.
    log_file = ROOT / ".work" / "bench-task-overhead" / "timings.jsonl"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    print("TASK_TIMINGS " + json.dumps(record), flush=True)


def phases(timings: dict[str, Any]) -> dict[str, float]:
    """The phase breakdown of one task run, from its timestamps and the job's progress lines."""
    out: dict[str, float] = {}
    grouped = 0.0
    done_at = None
    for at, line in timings["lines"]:
        for name, pattern in _PHASES:
            match = pattern.search(line)
            if match:
                if name == "grouped":
                    grouped += float(match.group(1))
                else:
                    out[name] = float(match.group(1))
        session = _SESSION.search(line)
        if session:
            jvm_start = float(session.group(1))
            out["launcher"] = jvm_start - timings["submit_start"]
            out["jvm_to_python"] = float(session.group(2))
            out["python_to_session"] = float(session.group(3)) + float(session.group(4))
        ivy = _IVY.search(line)
        if ivy:
            out["jar_resolution"] = int(ivy.group(1)) / 1000
        if line.startswith("DQ_CONTRACTS_DONE"):
            done_at = at
    out["grouped"] = grouped
    out["submit_total"] = timings["submit_end"] - timings["submit_start"]
    if done_at is not None:
        out["job_exit"] = timings["submit_end"] - done_at
    out["before_submit"] = timings["submit_start"] - timings["began"]
    out["read_back"] = timings["ended"] - timings["submit_end"]
    return out


# --------------------------------------------------------------------------------------- orchestration


def _child_env(src: Path, home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": str(src),
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": MASTER}),
        # Each source tree builds its own job bundle.
        "DQ_CONTRACTS_JOB_CACHE": str(home / "cache" / src.name),
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    })
    env.update(extra)
    return env


def run_task(src: Path, home: Path, input_path: Path, out_dir: Path, run_id: str,
             extra_env: dict[str, str]) -> dict[str, Any]:
    """One task in a fresh process with the package from ``src``; its timings (raises on failure)."""
    command = [sys.executable, str(Path(__file__).resolve()), "_task", "--input", str(input_path),
               "--results", str(out_dir / "dq_results"), "--quarantine", str(out_dir / "dq_quarantine"),
               "--run-id", run_id, "--contract", str(src / CONTRACT.relative_to(ROOT))]
    proc = subprocess.run(command, env=_child_env(src, home, extra_env), capture_output=True, text=True,
                          cwd=str(home))
    for line in proc.stdout.splitlines():
        if line.startswith("TASK_TIMINGS "):
            return json.loads(line[len("TASK_TIMINGS "):])
    raise RuntimeError(f"task run failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def run_trivial(home: Path, java_options: str | None = None) -> float:
    """Seconds of a bare spark-submit that starts a session and counts one row."""
    script = home / "trivial_job.py"
    script.write_text(TRIVIAL_JOB)
    command = ["spark-submit", "--master", MASTER, "--conf", "spark.ui.enabled=false",
               "--conf", "spark.log.level=WARN", str(script)]
    if java_options:
        command[1:1] = ["--conf", f"spark.driver.extraJavaOptions={java_options}"]
    env = _child_env(ROOT, home, {})
    began = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if "TRIVIAL_COUNT 1" not in proc.stdout:
        raise RuntimeError(f"trivial spark-submit failed:\n{proc.stderr[-3000:]}")
    return seconds


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def overhead(args: argparse.Namespace) -> None:
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="dq-task-overhead-"))
    variants: list[tuple[str, Path, dict[str, str]]] = [("task", ROOT, {})]
    if args.before_src:
        variants.append(("before", Path(args.before_src).resolve(), {}))
    if args.jars_dir:
        variants.append(("task+jars", ROOT, {"DQ_CONTRACTS_DELTA_JARS": str(Path(args.jars_dir).resolve())}))
    for label, conf in args.conf_variant or []:
        json.loads(conf)  # fail now, not in the child
        variants.append((f"task+{label}", ROOT, {"DQ_BENCH_SPARK_CONF": conf}))
    report: dict[str, Any] = {"machine": f"{os.cpu_count()} cores, master {MASTER}", "sizes": {}}
    sys.path.insert(0, str(ROOT))
    from airflow_dq_contracts import jvm_archive

    archive_option = jvm_archive.java_option()
    print(f"# JVM class-data archive: {archive_option or 'none built (dq-contracts jvm-archive build)'}", flush=True)
    for rows in args.rows:
        began = time.perf_counter()
        input_path = generate(data_dir, rows)
        print(f"# {rows:,} rows: data ready in {time.perf_counter() - began:.1f} s ({input_path})", flush=True)
        times: dict[str, list[float]] = {"trivial": [], **{name: [] for name, _, _ in variants}}
        breakdown: dict[str, dict[str, list[float]]] = {name: {} for name, _, _ in variants}
        for rep in range(args.repeat):
            # Alternate the order every repetition: no variant always runs right after the same one.
            order = [("trivial", None, {})] + variants
            if rep % 2:
                order.reverse()
            for name, src, extra in order:
                if name == "trivial":
                    seconds = run_trivial(home)
                    times["trivial"].append(seconds)
                    print(f"  rep {rep + 1} trivial {seconds:.1f} s", flush=True)
                    if archive_option:
                        # For reference only: the same bare job mapping the archive (ratios stay
                        # against the bare spark-submit a user would compare with).
                        seconds = run_trivial(home, archive_option)
                        times.setdefault("trivial+archive", []).append(seconds)
                        print(f"  rep {rep + 1} trivial+archive {seconds:.1f} s", flush=True)
                    continue
                assert src is not None
                out_dir = home / name.replace("+", "_") / str(rows)
                timings = run_task(src, home, input_path, out_dir, f"r{rows}-{rep}", extra)
                times[name].append(timings["task"])
                for phase, seconds in phases(timings).items():
                    breakdown[name].setdefault(phase, []).append(seconds)
                print(f"  rep {rep + 1} {name} {timings['task']:.1f} s ({timings['decision']}, "
                      f"{timings['row_count']:,} rows)", flush=True)
        trivial = _median(times["trivial"])
        size: dict[str, Any] = {"trivial_s": round(trivial, 2)}
        print(f"{rows:>12,} rows  trivial spark-submit {trivial:6.1f} s (median of {len(times['trivial'])})")
        if times.get("trivial+archive"):
            size["trivial_with_archive_s"] = round(_median(times["trivial+archive"]), 2)
            print(f"{'':>17} (the same trivial job mapping the archive: {size['trivial_with_archive_s']:.1f} s)")
        for name, _, _ in variants:
            task = _median(times[name])
            size[name] = {"median_s": round(task, 2), "ratio_to_trivial": round(task / trivial, 2),
                          "phases_s": {k: round(_median(v), 2) for k, v in breakdown[name].items()}}
            print(f"{'':>17} {name:<10} {task:6.1f} s   ratio task/trivial {task / trivial:.2f}")
            print("                   phases: " + ", ".join(
                f"{k} {v:.2f}" for k, v in size[name]["phases_s"].items()))
        if "before" in size:
            print(f"{'':>17} after/before {size['task']['median_s'] / size['before']['median_s']:.2f}")
        report["sizes"][str(rows)] = size
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n")
    shutil.rmtree(home, ignore_errors=True)


# --------------------------------------------------------------------------------------- growth


def growth(args: argparse.Namespace) -> None:
    """Results write + read-back at 10 runs and after ``args.growth`` runs of real commits.

    The write is the job's own (``sinks.write_results`` on Spark); with ``--growth-delta-rs`` it is
    delta-rs's equivalent one-commit replacement (``predicate`` overwrite), for a machine too loaded
    to keep a Spark session healthy for the whole run.
    """
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    sys.path.insert(0, str(ROOT))
    from airflow_dq_contracts import results_store
    from airflow_dq_contracts.results import RESULT_COLUMNS, CheckResult, utcnow

    home = Path(tempfile.mkdtemp(prefix="dq-growth-"))
    table = str(home / "dq_results")
    checks_per_run = 25
    spark = None
    if not args.growth_delta_rs:
        from airflow_dq_contracts.engine import sinks
        from airflow_dq_contracts.engine.session import get_spark

        spark = get_spark(app_name="task-overhead-growth", master=MASTER)

    def records(run_id: str) -> list[CheckResult]:
        now = utcnow()
        return [CheckResult(run_id=run_id, contract_name="orders", contract_version="2.1.0", dataset="silver.orders",
                            check_id=f"c{i}", check_name=f"check {i}", check_type="missing", column="a",
                            severity="P1", action="gate", validator="max 0", metric_value=0.0, status="passed",
                            passed=True, failed_rows=0, message="", row_count=1000, filter=None, evaluated_at=now,
                            dag_id="d", task_id="t", airflow_run_id=run_id, tags=[], reference_time=now)
                for i in range(checks_per_run)]

    kinds = {"string": pa.string(), "double": pa.float64(), "boolean": pa.bool_(), "bigint": pa.int64(),
             "timestamp": pa.timestamp("us", tz="UTC"), "array<string>": pa.list_(pa.string())}
    schema = pa.schema([(name, kinds[kind]) for name, kind in RESULT_COLUMNS])

    def arrow_rows(run_id: str) -> pa.Table:
        columns = {name: [getattr(r, name) for r in records(run_id)] for name, _ in RESULT_COLUMNS}
        return pa.Table.from_pydict(columns, schema=schema)

    def write_run(run_id: str) -> None:
        if spark is not None:
            sinks.write_results(spark, records(run_id), table, run_id=run_id)
        elif not DeltaTable.is_deltatable(table):
            write_deltalake(table, arrow_rows(run_id), partition_by=["contract_name"])
        else:
            write_deltalake(table, arrow_rows(run_id), mode="overwrite", predicate=f"run_id = '{run_id}'")

    def measure(label: str, reps: int = 5) -> dict[str, float]:
        writes, reads, unpruned = [], [], []
        for rep in range(reps):
            run_id = f"probe-{label}-{rep}"
            began = time.perf_counter()
            write_run(run_id)
            writes.append(time.perf_counter() - began)
            began = time.perf_counter()
            got = results_store.read_results(table, run_id, contract_name="orders")
            reads.append(time.perf_counter() - began)
            began = time.perf_counter()
            results_store.read_results(table, run_id)
            unpruned.append(time.perf_counter() - began)
            assert len(got) == checks_per_run, (label, len(got))
        version = DeltaTable(table).version()
        files = len(DeltaTable(table).file_uris())
        out = {"write_s": statistics.median(writes), "read_back_s": statistics.median(reads),
               "read_back_run_id_only_s": statistics.median(unpruned), "version": version, "files": files}
        print(f"{label:>28}: results write {out['write_s']:.3f} s, read-back {out['read_back_s']:.3f} s "
              f"(run_id only {out['read_back_run_id_only_s']:.3f} s; table version {version}, {files} data files; "
              f"median of {reps})", flush=True)
        return out

    for i in range(10):
        write_run(f"warm-{i}")
    small = measure("10 runs")
    # The bulk of the history: real Delta commits, one run's rows in one file each, like the job's
    # write, appended by delta-rs (fast, no JVM round trips).
    began = time.perf_counter()
    target = args.growth - DeltaTable(table).version()
    for i in range(max(0, target)):
        write_deltalake(table, arrow_rows(f"bulk-{i}"), mode="append")
        if (i + 1) % 10 == 0:
            # Spark checkpoints every 10 commits (delta.checkpointInterval); do the same.
            DeltaTable(table).create_checkpoint()
        if (i + 1) % 250 == 0:
            print(f"  {i + 1:,} commits in {time.perf_counter() - began:.0f} s", flush=True)
    large = measure(f"{args.growth:,} runs")
    # Maintenance (docs/deployment.md): compact the small files, checkpoint, vacuum removed files.
    began = time.perf_counter()
    if spark is not None:
        spark.sql(f"OPTIMIZE delta.`{table}`").collect()
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        spark.sql(f"VACUUM delta.`{table}` RETAIN 0 HOURS").collect()
    else:
        DeltaTable(table).optimize.compact()
        DeltaTable(table).create_checkpoint()
        DeltaTable(table).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    print(f"  OPTIMIZE + VACUUM in {time.perf_counter() - began:.1f} s", flush=True)
    maintained = measure(f"{args.growth:,} runs + OPTIMIZE")
    for label, numbers in (("unmaintained", large), ("after OPTIMIZE/VACUUM", maintained)):
        print(f"ratio {label} / 10 runs: write {numbers['write_s'] / small['write_s']:.2f}, "
              f"read-back {numbers['read_back_s'] / small['read_back_s']:.2f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(
            {"10": small, str(args.growth): large, f"{args.growth}+optimize": maintained}, indent=2) + "\n")
    if spark is not None:
        spark.stop()
    shutil.rmtree(home, ignore_errors=True)


def summarize(path: Path) -> None:
    """Median task time and phases per source tree and input, from the runs logged in ``path``."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        groups.setdefault((record["src"], record["input"]), []).append(record)
    for (src, input_path), records in sorted(groups.items()):
        per_phase: dict[str, list[float]] = {}
        for record in records:
            for phase, seconds in phases(record).items():
                per_phase.setdefault(phase, []).append(seconds)
        task = _median([r["task"] for r in records])
        print(f"{src} on {Path(input_path).name}: task {task:.1f} s (median of {len(records)})")
        print("    phases: " + ", ".join(f"{k} {_median(v):.2f}" for k, v in per_phase.items()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode")
    child = sub.add_parser("_task", help=argparse.SUPPRESS)
    for flag in ("--input", "--results", "--quarantine", "--run-id"):
        child.add_argument(flag, required=True)
    child.add_argument("--contract", default=str(CONTRACT))
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 100_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", default=str(ROOT / ".work" / "bench-task-overhead"),
                        help="where the generated inputs are kept between runs")
    parser.add_argument("--before-src", help="source tree of the package to compare against (same run)")
    parser.add_argument("--jars-dir", help="also run the task with $DQ_CONTRACTS_DELTA_JARS=DIR (no Ivy)")
    parser.add_argument("--conf-variant", nargs=2, action="append", metavar=("LABEL", "JSON"),
                        help="also run the task with this extra spark_conf (a lever to measure), e.g. "
                             "nocodegen '{\"spark.sql.codegen.wholeStage\": \"false\"}'")
    parser.add_argument("--growth", type=int, help="measure the results table after this many runs instead")
    parser.add_argument("--growth-delta-rs", action="store_true",
                        help="with --growth: write with delta-rs instead of the job's Spark sink")
    parser.add_argument("--summarize", metavar="JSONL", help="print the phases of the task runs logged in JSONL")
    parser.add_argument("--json-out")
    args = parser.parse_args(argv)
    if args.summarize:
        summarize(Path(args.summarize))
    elif args.mode == "_task":
        _child_task(args)
    elif args.growth:
        growth(args)
    else:
        overhead(args)


if __name__ == "__main__":
    main()
