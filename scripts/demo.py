"""Run the example DAG ``dq_orders_pipeline`` end to end, for real, and show what it decided.

``./dev demo`` calls this. Everything is local and real: Airflow 3 (``dag.test()`` on SQLite under
``.work/airflow``), spark-submit of the packaged contract job on ``local[*]``, Delta tables under
``.work/warehouse``. It prints one progress line per step, then the decision, the results rows
of the run and the quarantine count; then the asset example (``scripts/demo_assets.py``): the checked
asset's producer, its event's verdict, and the consumer running after pass/quarantine and refusing a
gate. Running it twice gives the same output: the logical date is fixed, so the run id is the same
and the second run *replaces* the first one's results.

Usage::

    ./dev demo                       # the quarantine outcome (the most instructive one)
    ./dev demo --outcome pass        # or gate; --outcome all runs the three in turn
    ./dev demo --date 2024-06-30     # another day (the data interval [date, date + 1 day))
    ./dev demo --storage s3          # every table on a local S3 server, credentials in AIRFLOW_CONN_DQ_LAKE
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".work"
DAG_ID = "dq_orders_pipeline"
OUTCOMES = ("pass", "quarantine", "gate")
EXPECTED_PATH = {"pass": "publish", "quarantine": "quarantine_then_publish", "gate": "alert"}


def _environment() -> None:
    """Airflow and Spark settings — before anything imports airflow."""
    venv_bin = str(Path(sys.executable).parent)
    os.environ["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.pop("SPARK_HOME", None)
    os.environ["AIRFLOW_HOME"] = str(WORK / "airflow")
    os.environ["DQ_CONTRACTS_WAREHOUSE"] = str(WORK / "warehouse")
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags_examples")
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "WARNING"
    # local[*] cannot be written as a connection URI: JSON form.
    os.environ["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps({"conn_type": "spark", "host": "local[*]"})


class Progress:
    """``[demo] step/total  message … 12.3 s`` lines."""

    def __init__(self, total: int) -> None:
        self.total, self.step, self.started = total, 0, time.monotonic()

    @contextlib.contextmanager
    def __call__(self, message: str):
        self.step += 1
        began = time.monotonic()
        print(f"[demo] {self.step}/{self.total} {message} …", flush=True)
        yield
        print(f"[demo]     done in {time.monotonic() - began:.1f} s", flush=True)


@contextlib.contextmanager
def _quiet(log_file: Path):
    """Send the process's stdout/stderr (Airflow's and spark-submit's logs) to ``log_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_file, "w") as handle:
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _migrate_db(log_file: Path) -> None:
    """``airflow db migrate`` in this process, its output in ``log_file`` (the demo imports Airflow anyway:
    a second interpreter importing it again cost seconds before the first result)."""
    with _quiet(log_file):
        from airflow.utils import db

        db.upgradedb()


def timings(durations: dict[str, float]) -> str:
    """The tasks that ran, in the order they ran, with their seconds (where a demo's time goes).

    >>> timings({"load_orders": 1.84, "check_orders": 34.37})
    'load_orders 1.8 s, check_orders 34.4 s'
    """
    return ", ".join(f"{task} {seconds:.1f} s" for task, seconds in durations.items()) or "none ran"


def _print_table(header: tuple[str, ...], rows: list[tuple]) -> None:
    cells = [tuple("" if v is None else str(v) for v in row) for row in rows]
    widths = [max(len(header[i]), *(len(r[i]) for r in cells)) if cells else len(header[i]) for i in range(len(header))]
    print("  " + "  ".join(h.ljust(widths[i]) for i, h in enumerate(header)))
    for row in cells:
        print("  " + "  ".join(v.ljust(widths[i]) for i, v in enumerate(row)))


def _metric(value) -> str:
    return "" if value is None else f"{value:.6g}"


def _outcome(
    dag_run, check_task_id: str, durations: dict[str, float] | None = None
) -> tuple[dict[str, str], dict | None]:
    """({task_id: state}, the check's XCom summary) read back from the metadata database; ``durations``, when
    given, receives each task's run time in seconds (the tasks that ran)."""
    from airflow.models.dagrun import DagRun
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    durations = {} if durations is None else durations
    with create_session() as session:
        fresh = session.get(DagRun, dag_run.id)
        tis = fresh.get_task_instances(session=session)
        states = {ti.task_id: str(ti.state) for ti in tis}
        ran = sorted((ti for ti in tis if ti.duration is not None), key=lambda ti: ti.start_date)
        durations.update({ti.task_id: ti.duration for ti in ran})
        row = session.scalars(
            select(XComModel).where(
                XComModel.dag_id == dag_run.dag_id,
                XComModel.run_id == dag_run.run_id,
                XComModel.task_id == check_task_id,
                XComModel.key == "return_value",
            )
        ).first()
        summary = XComModel.deserialize_value(row) if row is not None else None
    return states, summary


def run_outcome(outcome: str, day: dt.date, progress: Progress) -> bool:
    """Run the DAG once for ``outcome``; print what happened; True when it routed as expected."""
    import pyarrow.compute as pc
    from airflow.models.dagbag import DagBag
    from deltalake import DeltaTable

    from airflow_dq_contracts.operators.contract_check import default_quarantine_table, default_results_table

    log_file = WORK / "logs" / f"demo-{outcome}.log"
    # As an Airflow worker does with its DAG bundle: modules next to the DAG file are importable.
    if str(ROOT / "dags_examples") not in sys.path:
        sys.path.insert(0, str(ROOT / "dags_examples"))
    with progress(f"parse {DAG_ID} from dags_examples/"):
        bag = DagBag(dag_folder=str(ROOT / "dags_examples"), include_examples=False)
        if DAG_ID not in bag.dags:
            print(f"[demo] {DAG_ID} did not load: {bag.import_errors}")
            return False
        dag = bag.dags[DAG_ID]

    logical = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)
    with (
        progress(
            f"run {DAG_ID} with outcome={outcome!r} for {day} (spark-submit on local[*]; log: "
            f"{log_file.relative_to(ROOT)})"
        ),
        _quiet(log_file),
    ):
        dag_run = dag.test(logical_date=logical, run_after=logical, run_conf={"outcome": outcome})

    durations: dict[str, float] = {}
    states, summary = _outcome(dag_run, "check_orders", durations)
    print()
    print(f"  DAG run {dag_run.run_id}: {dag_run.state}")
    print("  tasks: " + ", ".join(f"{task}={state}" for task, state in sorted(states.items())))
    print("  task times: " + timings(durations))
    if not summary:
        print(f"  no summary from check_orders — see {log_file}")
        return False
    print(
        f"  decision: {summary['decision'].upper()}   (run_id {summary['run_id']}, {summary['row_count']} rows "
        f"where {summary['filter']}; {summary['counts']})"
    )

    results_path = default_results_table(os.environ["DQ_CONTRACTS_WAREHOUSE"])
    results = DeltaTable(results_path).to_pyarrow_table()
    mine = results.filter(pc.equal(results["run_id"], summary["run_id"])).to_pylist()
    mine.sort(key=lambda r: (r["status"] == "passed", r["severity"], r["check_id"]))
    print(f"  results table {results_path}: {len(mine)} rows for this run ({results.num_rows} rows in the table)")
    _print_table(
        ("check_id", "severity", "action", "status", "metric_value", "failed_rows"),
        [
            (r["check_id"], r["severity"], r["action"], r["status"], _metric(r["metric_value"]), r["failed_rows"])
            for r in mine
        ],
    )

    quarantine_path = default_quarantine_table(os.environ["DQ_CONTRACTS_WAREHOUSE"], "orders")
    count = 0
    if DeltaTable.is_deltatable(quarantine_path):
        quarantined = DeltaTable(quarantine_path).to_pyarrow_table(columns=["_dq_run_id"])
        count = sum(1 for v in quarantined["_dq_run_id"].to_pylist() if v == summary["run_id"])
    print(f"  quarantine table {quarantine_path}: {count} rows for this run")
    routed = states.get(EXPECTED_PATH[outcome]) in ("success", "failed") and all(
        states.get(t) == "skipped" for o, t in EXPECTED_PATH.items() if o != outcome
    )
    print(f"  branch taken: {EXPECTED_PATH[outcome]} ({'as expected' if routed else 'UNEXPECTED'})")
    print()
    return routed


def _run_on_s3(outcomes: tuple[str, ...], day: dt.date) -> int:
    """``--storage s3``: scripts/demo_s3.py for each outcome (its own S3 server, started and stopped)."""
    _environment()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from demo_s3 import dags_folder, run_on_s3

    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(dags_folder(WORK))  # before Airflow reads its configuration

    progress = Progress(1 + 4 * len(outcomes))
    with progress(f"prepare Airflow in {(WORK / 'airflow').relative_to(ROOT)} (airflow db migrate)"):
        (WORK / "airflow").mkdir(parents=True, exist_ok=True)
        _migrate_db(WORK / "logs" / "db-migrate.log")
    ok = all([run_on_s3(o, day, progress, _quiet, WORK, _outcome, EXPECTED_PATH) for o in outcomes])
    print(f"[demo] finished in {time.monotonic() - progress.started:.1f} s")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outcome", choices=(*OUTCOMES, "all"), default="quarantine")
    parser.add_argument(
        "--storage",
        choices=("local", "s3"),
        default="local",
        help="s3: start a local S3 server and run sensor → check → branch with every table on it (scripts/demo_s3.py)",
    )
    parser.add_argument(
        "--date",
        type=dt.date.fromisoformat,
        default=dt.date(2024, 5, 1),
        help="the day to process (default 2024-05-01)",
    )
    args = parser.parse_args(argv)
    outcomes = OUTCOMES if args.outcome == "all" else (args.outcome,)
    if args.storage == "s3":  # every table on a local S3 server, credentials in an Airflow connection
        return _run_on_s3(outcomes, args.date)

    _environment()
    # Airflow's own modules warn about their own deprecated paths; not this demo's business.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning, message=r"The `airflow\.")
    from demo_assets import STEPS, run_assets  # then the checked asset's producer and consumer (#25)

    progress = Progress(1 + (2 + STEPS) * len(outcomes))
    with progress(f"prepare Airflow in {(WORK / 'airflow').relative_to(ROOT)} (airflow db migrate)"):
        (WORK / "airflow").mkdir(parents=True, exist_ok=True)
        _migrate_db(WORK / "logs" / "db-migrate.log")
    ok = all(
        [
            all(
                (
                    run_outcome(outcome, args.date, progress),
                    run_assets(outcome, args.date, progress, _quiet, WORK, timings),
                )
            )
            for outcome in outcomes
        ]
    )
    print(f"[demo] finished in {time.monotonic() - progress.started:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
