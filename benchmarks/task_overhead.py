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
* **connect** (with ``--connect``) — the same task through the Spark Connect transport (a
  ``spark_connect`` connection: the job runs as a Connect client process, no spark-submit) on a warm
  server started once from the PySpark wheel (``tests/connect_fixtures.py``: Delta, Hive catalog) and
  warmed, per row count, by one untimed task (its time is printed);
  and **trivial_connect** — a fresh Python process that opens a Connect session and counts one row
  (what any Connect client task costs); ratios connect/task and connect/trivial_connect are printed;
* **before** (with ``--before-src DIR``) — the same task run with the package from another source
  tree (e.g. ``git archive`` of the base commit), for before/after ratios measured side by side.

It prints the median of ``--repeat`` runs of each, the ratio task / trivial, and the job's phase
breakdown (median per phase): launcher (spark-submit's launcher JVM until the driver JVM starts),
jar resolution (Ivy's own "resolve" figure, inside the next phase), driver JVM → Python, Python →
session, read, plan, scan, grouped passes, row split and each Delta write, job exit, read-back.

``--growth N`` instead measures the results table as it grows: real tasks (the same operator → job →
read-back as above) against a results table of 10 runs and one of N runs, alternating, and compares the
job's results phase (registry + results commits) and the operator's read-back. Both tables start from
one real task's write; the runs before it are real Delta commits (one Parquet file and one log entry
per run, hourly in the past, a checkpoint at the end) written directly, which takes seconds instead of
hours. ``--growth-maintenance`` also measures after ``OPTIMIZE`` + ``VACUUM``.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/task_overhead.py --rows 1000 100000 --repeat 3
    PYTHONPATH=. .venv/bin/python benchmarks/task_overhead.py --rows 1000 100000 --repeat 3 --connect
    git archive main | tar -x -C /tmp/dq-before
    PYTHONPATH=. .venv/bin/python benchmarks/task_overhead.py --rows 1000 --before-src /tmp/dq-before
    PYTHONPATH=. .venv/bin/python benchmarks/task_overhead.py --growth 10000 --repeat 3
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

TRIVIAL_CONNECT = """\
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
print("TRIVIAL_COUNT", spark.range(1).count(), flush=True)
spark.stop()
"""

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
_SESSION = re.compile(
    r"session: jvm_start=([\d.]+) jvm→python ([\d.]+) s, python→session ([\d.]+) s, session ([\d.]+) s"
)
_CONNECT_SESSION = re.compile(r"session: python_start=([\d.]+) python→session ([\d.]+) s, connect ([\d.]+) s")
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
    from airflow_dq_contracts.hooks.spark_connect import ContractConnectHook
    from airflow_dq_contracts.operators import ContractCheckOperator

    lines: list[tuple[float, str]] = []
    marks: dict[str, float] = {}
    original_take = ContractSubmitHook.take_marker
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

    ContractSubmitHook.take_marker = take  # type: ignore[method-assign]
    ContractSubmitHook.submit_job = submit  # type: ignore[method-assign]
    original_connect_submit = ContractConnectHook.submit_job

    def connect_submit(self: Any) -> Any:
        marks["submit_start"] = time.time()
        try:
            return original_connect_submit(self)
        finally:
            marks["submit_end"] = time.time()

    ContractConnectHook.submit_job = connect_submit  # type: ignore[method-assign]
    # The Connect job's lines, with their arrival times (the hook parses every line for its markers).
    from airflow_dq_contracts.hooks import spark_connect as connect_module

    original_parse = connect_module.parse_marker

    def parse(line: str) -> Any:
        lines.append((time.time(), line.rstrip()))
        return original_parse(line)

    connect_module.parse_marker = parse  # type: ignore[assignment]
    # The read-back proper (collect_summary) timed apart from the HTML report written after it.
    from airflow_dq_contracts.operators import contract_check

    original_collect = contract_check.collect_summary

    def collect(*a: Any, **k: Any) -> Any:
        marks["summary_start"] = time.time()
        try:
            return original_collect(*a, **k)
        finally:
            marks["summary_end"] = time.time()

    contract_check.collect_summary = collect  # type: ignore[assignment]

    class TaskInstance:
        dag_id, task_id, map_index = "task_overhead", "check", -1

        def __init__(self, run_id: str) -> None:
            self.run_id = run_id

        def xcom_push(self, **_: Any) -> None:
            return None

    # The contract as the source tree under test has it (an older tree may not know newer keys).
    contract = yaml.safe_load(Path(args.contract).read_text())
    op = ContractCheckOperator(
        task_id="check",
        contract=contract,
        input_path=args.input,
        input_format="delta",
        reference_time=REFERENCE_TIME,
        results_table=args.results,
        quarantine_table=args.quarantine,
        fail_on_gate=False,
        spark_conf=json.loads(os.environ.get("DQ_BENCH_SPARK_CONF", "{}")),
    )
    began = time.time()
    summary = op.execute({"ti": TaskInstance(args.run_id)})  # type: ignore[arg-type]
    ended = time.time()
    import airflow_dq_contracts

    record = {
        "task": ended - began,
        "decision": summary["decision"],
        "row_count": summary["row_count"],
        "began": began,
        "ended": ended,
        **marks,
        "lines": lines,
        "src": str(Path(airflow_dq_contracts.__file__).resolve().parent.parent),
        "input": args.input,
    }
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
    plan_at: float | None = None
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
        connect = _CONNECT_SESSION.search(line)
        if connect:
            out["client_start"] = float(connect.group(1)) - timings["submit_start"]
            out["imports"] = float(connect.group(2))
            out["connect"] = float(connect.group(3))
        if "] plan: " in line:
            plan_at = at
        if "] evaluate: " in line and plan_at is not None:
            out["passes_wall"] = at - plan_at
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
    if "summary_end" in timings:
        out["read_back"] = timings["summary_end"] - timings["summary_start"]
        out["report"] = timings["ended"] - timings["summary_end"]
    else:  # an older tree's run: read-back and report together
        out["read_back"] = timings["ended"] - timings["submit_end"]
    return out


# --------------------------------------------------------------------------------------- orchestration


def _child_env(src: Path, home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": str(src),
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": MASTER}),
            # Each source tree builds its own job bundle.
            "DQ_CONTRACTS_JOB_CACHE": str(home / "cache" / src.name),
            "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        }
    )
    env.update(extra)
    return env


def run_task(
    src: Path, home: Path, input_path: Path, out_dir: Path, run_id: str, extra_env: dict[str, str]
) -> dict[str, Any]:
    """One task in a fresh process with the package from ``src``; its timings (raises on failure)."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "_task",
        "--input",
        str(input_path),
        "--results",
        str(out_dir / "dq_results"),
        "--quarantine",
        str(out_dir / "dq_quarantine"),
        "--run-id",
        run_id,
        "--contract",
        str(src / CONTRACT.relative_to(ROOT)),
    ]
    proc = subprocess.run(command, env=_child_env(src, home, extra_env), capture_output=True, text=True, cwd=str(home))
    for line in proc.stdout.splitlines():
        if line.startswith("TASK_TIMINGS "):
            return json.loads(line[len("TASK_TIMINGS ") :])
    raise RuntimeError(f"task run failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def run_trivial(home: Path, java_options: str | None = None) -> float:
    """Seconds of a bare spark-submit that starts a session and counts one row."""
    script = home / "trivial_job.py"
    script.write_text(TRIVIAL_JOB)
    command = [
        "spark-submit",
        "--master",
        MASTER,
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.log.level=WARN",
        str(script),
    ]
    if java_options:
        command[1:1] = ["--conf", f"spark.driver.extraJavaOptions={java_options}"]
    env = _child_env(ROOT, home, {})
    began = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if "TRIVIAL_COUNT 1" not in proc.stdout:
        raise RuntimeError(f"trivial spark-submit failed:\n{proc.stderr[-3000:]}")
    return seconds


def run_trivial_connect(home: Path, url: str) -> float:
    """Seconds of a fresh Python process that opens a Spark Connect session and counts one row."""
    script = home / "trivial_connect.py"
    script.write_text(TRIVIAL_CONNECT)
    env = {k: v for k, v in _child_env(ROOT, home, {}).items() if k != "SPARK_CONNECT_MODE_ENABLED"}
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, str(script), url], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if "TRIVIAL_COUNT 1" not in proc.stdout:
        raise RuntimeError(f"trivial Connect query failed:\n{proc.stderr[-3000:]}")
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
    server = None
    if args.connect:
        # A warm server, as a deployment has one: started once, warmed by one query, stopped at the end.
        sys.path.insert(0, str(ROOT / "tests"))
        from connect_fixtures import start_connect_server

        server = start_connect_server()
        run_trivial_connect(home, server.url)
        connection = json.dumps(server.airflow_connection())
        variants.append(("connect", ROOT, {"AIRFLOW_CONN_SPARK_DEFAULT": connection}))
        print(f"# Spark Connect server {server.url} (log {server.log_path})", flush=True)
    try:
        _overhead(args, data_dir, home, variants, server)
    finally:
        if server is not None:
            server.stop()


def _overhead(
    args: argparse.Namespace, data_dir: Path, home: Path, variants: list[tuple[str, Path, dict[str, str]]], server: Any
) -> None:
    report: dict[str, Any] = {"machine": f"{os.cpu_count()} cores, master {MASTER}", "sizes": {}}
    sys.path.insert(0, str(ROOT))
    from airflow_dq_contracts.runtime import jvm_archive

    archive_option = jvm_archive.java_option()
    print(f"# JVM class-data archive: {archive_option or 'none built (dq-contracts jvm-archive build)'}", flush=True)
    for rows in args.rows:
        began = time.perf_counter()
        input_path = generate(data_dir, rows)
        print(f"# {rows:,} rows: data ready in {time.perf_counter() - began:.1f} s ({input_path})", flush=True)
        times: dict[str, list[float]] = {"trivial": [], **{name: [] for name, _, _ in variants}}
        if server is not None:
            times["trivial_connect"] = []
        breakdown: dict[str, dict[str, list[float]]] = {name: {} for name, _, _ in variants}
        if server is not None:
            # A long-lived server has run these code paths (Delta's reads and writes, the scan) long ago:
            # one untimed task first, so that the first timed one does not pay the server's JIT warm-up.
            _, src, extra = next(variant for variant in variants if variant[0] == "connect")
            warm = run_task(src, home, input_path, home / "connect_warmup" / str(rows), f"w{rows}", extra)
            print(f"  warm-up connect {warm['task']:.1f} s (not counted: the server's first run of these queries)")
        for rep in range(args.repeat):
            # Alternate the order every repetition: no variant always runs right after the same one.
            order = [("trivial", None, {})] + variants
            if server is not None:
                order.insert(1, ("trivial_connect", None, {}))
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
                if name == "trivial_connect":
                    seconds = run_trivial_connect(home, server.url)
                    times["trivial_connect"].append(seconds)
                    print(f"  rep {rep + 1} trivial_connect {seconds:.1f} s", flush=True)
                    continue
                assert src is not None
                out_dir = home / name.replace("+", "_") / str(rows)
                timings = run_task(src, home, input_path, out_dir, f"r{rows}-{rep}", extra)
                times[name].append(timings["task"])
                for phase, seconds in phases(timings).items():
                    breakdown[name].setdefault(phase, []).append(seconds)
                print(
                    f"  rep {rep + 1} {name} {timings['task']:.1f} s ({timings['decision']}, "
                    f"{timings['row_count']:,} rows)",
                    flush=True,
                )
        trivial = _median(times["trivial"])
        size: dict[str, Any] = {"trivial_s": round(trivial, 2)}
        print(f"{rows:>12,} rows  trivial spark-submit {trivial:6.1f} s (median of {len(times['trivial'])})")
        if times.get("trivial+archive"):
            size["trivial_with_archive_s"] = round(_median(times["trivial+archive"]), 2)
            print(f"{'':>17} (the same trivial job mapping the archive: {size['trivial_with_archive_s']:.1f} s)")
        for name, _, _ in variants:
            task = _median(times[name])
            size[name] = {
                "median_s": round(task, 2),
                "ratio_to_trivial": round(task / trivial, 2),
                "phases_s": {k: round(_median(v), 2) for k, v in breakdown[name].items()},
            }
            print(f"{'':>17} {name:<10} {task:6.1f} s   ratio task/trivial {task / trivial:.2f}")
            print("                   phases: " + ", ".join(f"{k} {v:.2f}" for k, v in size[name]["phases_s"].items()))
        if "before" in size:
            print(f"{'':>17} after/before {size['task']['median_s'] / size['before']['median_s']:.2f}")
        if "connect" in size:
            trivial_connect = _median(times["trivial_connect"])
            size["trivial_connect_s"] = round(trivial_connect, 2)
            connect, task = size["connect"]["median_s"], size["task"]["median_s"]
            size["connect"]["ratio_to_spark_submit_task"] = round(connect / task, 2)
            size["connect"]["ratio_to_trivial_connect"] = round(connect / trivial_connect, 2)
            # The run's own Spark work, as its progress lines time it: the read (with the version pin),
            # the scan and grouped passes (wall time), the row split and the results/registry commits.
            own = size["connect"]["phases_s"]
            jobs = sum(own.get(k, 0.0) for k in ("read", "passes_wall", "row_split_total", "results_write"))
            size["connect"]["own_spark_work_s"] = round(jobs, 2)
            size["connect"]["ratio_to_trivial_connect_plus_own_work"] = round(connect / (trivial_connect + jobs), 2)
            print(
                f"{'':>17} trivial Connect query {trivial_connect:.1f} s; connect/task {connect / task:.2f}, "
                f"connect/trivial_connect {connect / trivial_connect:.2f}; the run's own Spark work {jobs:.2f} s, "
                f"connect/(trivial_connect + own work) {connect / (trivial_connect + jobs):.2f}"
            )
        report["sizes"][str(rows)] = size
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n")
    shutil.rmtree(home, ignore_errors=True)


# --------------------------------------------------------------------------------------- growth


def _stat_value(value: Any) -> Any:
    """A Python value as Delta's JSON statistics write it (timestamps as ISO UTC with milliseconds)."""
    if isinstance(value, dt.datetime):
        value = value.astimezone(dt.timezone.utc) if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return value


def _file_stats(rows: Any) -> str:
    """Delta ``add.stats`` of a pyarrow table: numRecords and per-column min, max and null count."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mins: dict[str, Any] = {}
    maxes: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name in rows.column_names:
        column = rows.column(name)
        nulls[name] = column.null_count
        if pa.types.is_list(column.type) or column.null_count == len(column):
            continue
        low, high = pc.min_max(column).values()
        low, high = low.as_py(), high.as_py()
        if isinstance(low, str) and (len(low) > 32 or len(high) > 32):
            continue  # Spark truncates long string statistics; leave them out rather than guess
        mins[name], maxes[name] = _stat_value(low), _stat_value(high)
    return json.dumps({"numRecords": rows.num_rows, "minValues": mins, "maxValues": maxes, "nullCount": nulls})


def append_runs(table: str, template: Any, count: int, prefix: str) -> None:
    """Add ``count`` runs to the results table at ``table``: one Delta commit per run, as the job does.

    Each commit is a real, protocol-conforming Delta commit — a Parquet file of one run's rows (the
    ``template`` rows of a real run under a new ``run_id``) in its ``contract_name`` partition, and
    a JSON log entry with the file's ``add`` action and statistics — written directly instead of by
    a writer that would replay the growing log on every commit (what made 2,000 commits take 25
    minutes). A checkpoint is written at the end, as Spark would have written one every 10
    commits: readers then start from it, exactly as on a table that grew by real runs.
    """
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    version = DeltaTable(table).version()
    partition = template.column("contract_name")[0].as_py()
    data_columns = [name for name in template.column_names if name != "contract_name"]
    log_dir = Path(table) / "_delta_log"
    began = time.perf_counter()
    times = {name: template.column(name).to_pylist() for name in ("reference_time", "evaluated_at")}
    for index in range(count):
        run_id = f"{prefix}-{index}"
        rows = template.select(data_columns)
        for name in ("run_id", "airflow_run_id"):
            rows = rows.set_column(rows.column_names.index(name), name, pa.array([run_id] * rows.num_rows))
        # Hourly runs before the template's: the newest bulk run one hour earlier, the oldest `count`
        # hours earlier (10,000 runs span 14 months), so a baseline's look-back window holds what it
        # would on a real table, not every run of the history.
        shift = dt.timedelta(hours=count - index)
        for name, values in times.items():
            column = rows.column_names.index(name)
            rows = rows.set_column(
                column,
                name,
                pa.array([v - shift if v is not None else None for v in values], rows.schema.field(name).type),
            )
        relative = f"contract_name={partition}/part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        target = Path(table) / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, target, compression="snappy")
        now_ms = int(time.time() * 1000)
        add = {
            "path": relative,
            "partitionValues": {"contract_name": partition},
            "size": target.stat().st_size,
            "modificationTime": now_ms,
            "dataChange": True,
            "stats": _file_stats(rows),
        }
        commit = {
            "timestamp": now_ms,
            "operation": "WRITE",
            "operationParameters": {"mode": "Append"},
            "isBlindAppend": True,
            "engineInfo": "benchmarks/task_overhead.py growth",
            "operationMetrics": {"numFiles": "1", "numOutputRows": str(rows.num_rows)},
        }
        version += 1
        with open(log_dir / f"{version:020d}.json", "x", encoding="utf-8") as handle:
            handle.write(json.dumps({"commitInfo": commit}) + "\n" + json.dumps({"add": add}) + "\n")
        if (index + 1) % 2000 == 0:
            print(f"  {index + 1:,} commits in {time.perf_counter() - began:.0f} s", flush=True)
    DeltaTable(table).create_checkpoint()


def growth(args: argparse.Namespace) -> None:
    """A task's results write and read-back on a results table of 10 runs and of ``args.growth`` runs.

    Both tables start from one real task run (the job creates the results table and the registry
    exactly as in production); :func:`append_runs` then brings one to 10 runs and the other to
    ``args.growth``. Real ``ContractCheckOperator`` tasks (fresh process, spark-submit, the job,
    delta-rs read-back) then run against the two tables alternately, ``args.repeat`` times each,
    and the job's own ``results:`` phase (registry + results commits) and the operator's read-back
    are compared, medians of the repetitions. With ``--growth-maintenance`` the large table is then
    compacted and vacuumed as docs/deployment.md advises and measured once more, and again once the
    retention windows have passed (simulated by shortening them to a second).
    """
    from deltalake import DeltaTable

    sys.path.insert(0, str(ROOT))
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    input_path = generate(data_dir, 1000)
    home = Path(tempfile.mkdtemp(prefix="dq-growth-"))
    small, large = home / "small", home / "large"
    run_task(ROOT, home, input_path, small, "growth-base", {})
    shutil.copytree(small, large)
    results = str(small / "dq_results")
    template = DeltaTable(results).to_pyarrow_table()
    for folder, runs in ((small, 10), (large, args.growth)):
        began = time.perf_counter()
        append_runs(str(folder / "dq_results"), template, runs - 1, f"bulk-{folder.name}")
        print(
            f"# {folder.name}: {runs:,} runs in the results table ({time.perf_counter() - began:.0f} s to add them)",
            flush=True,
        )

    def measure(tables: list[tuple[str, Path]], reps: int) -> dict[str, dict[str, Any]]:
        got: dict[str, dict[str, list[float]]] = {label: {"write": [], "read_back": []} for label, _ in tables}
        for rep in range(reps):
            order = tables if rep % 2 == 0 else list(reversed(tables))
            for label, folder in order:
                timings = run_task(ROOT, home, input_path, folder, f"probe-{label}-{rep}", {})
                phase = phases(timings)
                got[label]["write"].append(phase["results_write"])
                got[label]["read_back"].append(phase["read_back"])
                got[label].setdefault("report", []).append(phase.get("report", 0.0))
                got[label].setdefault("task", []).append(timings["task"])
                print(
                    f"  rep {rep + 1} {label}: results write {phase['results_write']:.2f} s, "
                    f"read-back {phase['read_back']:.2f} s, report {phase.get('report', 0.0):.2f} s "
                    f"(task {timings['task']:.1f} s)",
                    flush=True,
                )
        out = {}
        for label, folder in tables:
            table = DeltaTable(str(folder / "dq_results"))
            out[label] = {
                "write_s": round(_median(got[label]["write"]), 3),
                "read_back_s": round(_median(got[label]["read_back"]), 3),
                "report_s": round(_median(got[label]["report"]), 3),
                "task_s": round(_median(got[label]["task"]), 2),
                "version": table.version(),
                "files": len(table.file_uris()),
            }
            print(
                f"{label:>24}: results write {out[label]['write_s']:.2f} s, read-back {out[label]['read_back_s']:.3f} s, "
                f"report {out[label]['report_s']:.2f} s, task {out[label]['task_s']:.1f} s "
                f"(median of {reps}; version {out[label]['version']:,}, {out[label]['files']:,} data files)",
                flush=True,
            )
        return out

    report = measure([("10 runs", small), (f"{args.growth:,} runs", large)], args.repeat)
    first, second = report["10 runs"], report[f"{args.growth:,} runs"]
    print(
        f"ratio {args.growth:,} runs / 10 runs: results write {second['write_s'] / first['write_s']:.2f}, "
        f"read-back {second['read_back_s'] / first['read_back_s']:.2f}"
    )
    if args.growth_maintenance:
        from airflow_dq_contracts.engine.session import get_spark

        began = time.perf_counter()
        spark = get_spark(app_name="task-overhead-maintenance", master=MASTER)
        table = str(large / "dq_results")
        spark.sql(f"OPTIMIZE delta.`{table}`").collect()
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        spark.sql(f"VACUUM delta.`{table}` RETAIN 0 HOURS").collect()
        spark.stop()
        print(f"# OPTIMIZE + VACUUM in {time.perf_counter() - began:.1f} s", flush=True)
        report.update(measure([(f"{args.growth:,} runs + OPTIMIZE", large)], args.repeat))
        # What the table looks like once the retention windows have passed (7 days for the compacted
        # files' tombstones, 30 days for the log's JSON files): simulated by shortening both, then a
        # checkpoint that drops the expired tombstones and the clean-up of the expired log files.
        maintained = DeltaTable(table)
        maintained.alter.set_table_properties(
            {
                "delta.deletedFileRetentionDuration": "interval 1 seconds",
                "delta.logRetentionDuration": "interval 1 seconds",
            }
        )
        time.sleep(2)
        maintained.create_checkpoint()
        maintained.cleanup_metadata()
        report.update(measure([(f"{args.growth:,} runs + OPTIMIZE, retention passed", large)], args.repeat))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2) + "\n")
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
    parser.add_argument(
        "--data-dir",
        default=str(ROOT / ".work" / "bench-task-overhead"),
        help="where the generated inputs are kept between runs",
    )
    parser.add_argument("--before-src", help="source tree of the package to compare against (same run)")
    parser.add_argument("--jars-dir", help="also run the task with $DQ_CONTRACTS_DELTA_JARS=DIR (no Ivy)")
    parser.add_argument(
        "--conf-variant",
        nargs=2,
        action="append",
        metavar=("LABEL", "JSON"),
        help="also run the task with this extra spark_conf (a lever to measure), e.g. "
        'nocodegen \'{"spark.sql.codegen.wholeStage": "false"}\'',
    )
    parser.add_argument(
        "--connect", action="store_true", help="also run the task through Spark Connect (a warm server started here)"
    )
    parser.add_argument("--growth", type=int, help="measure the results table after this many runs instead")
    parser.add_argument(
        "--growth-maintenance",
        action="store_true",
        help="with --growth: also measure the large table after OPTIMIZE + VACUUM",
    )
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
