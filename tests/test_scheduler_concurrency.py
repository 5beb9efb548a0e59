"""Six ``ContractCheckOperator`` tasks of one DAG run at once under a real scheduler, on a fresh worker.

The ``dq-contracts run`` half of this lives in ``test_concurrency.py``; this is the operator half,
as a deployment runs it: not ``dag.test()``, but Airflow's own components as processes of their own —
``airflow api-server`` (the Execution API the task processes talk to), ``airflow dag-processor`` and
``airflow scheduler`` with the LocalExecutor — in a throw-away ``AIRFLOW_HOME`` on SQLite. One DAG with
six independent contract checks (``max_active_tasks=6``, executor parallelism 8) is triggered once.

The worker is fresh: an empty Ivy home (``spark.jars.ivy`` in the operator's ``spark_conf``) and an
empty jars folder (``$DQ_CONTRACTS_JARS_DIR``) shared by all six, so the hook's jar resolution under
the lock (``jars.py``) runs through the operator path; and the six write into one results table that
does not exist before the run, so its creation is contended as well.

What is asserted is what happened, read back from the places the components wrote to:

* the DAG run and every task succeeded (the metadata database, read with ``sqlite3``);
* at least four tasks really ran at the same time: their task instances' ``[start_date, end_date]``
  intervals overlap (no timing assumption: the recorded intervals are compared with each other);
* the results table holds exactly six runs × the three expected checks (written by hand), one copy
  each, and has exactly one ``CREATE TABLE`` commit (read with delta-rs, not the Spark code under test);
* the jars were resolved once, into one complete folder, and Ivy filled the given empty home.

On any failure the message carries the tails of the components' logs and of the task logs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_fixtures import FAST_JVM_OPTS, MARKER_ENV, find_marked_processes, free_port
from test_concurrency import create_table_commits, delta_rows

pytestmark = [pytest.mark.slow, pytest.mark.airflow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parent.parent
DAG_ID = "dq_six_checks_at_once"
RUN_ID = "six_at_once"
TASKS = [f"check_{n}" for n in range(6)]
# The two written checks (ids are slugs of the names) and the declared column's schema check.
CHECK_IDS = ("_table_/volume", "id/ids_present", "id/schema")
# Generous: three Airflow components and six JVMs on a loaded two-core machine. Deadlines, not speed limits.
START_DEADLINE_SECONDS = 300
RUN_DEADLINE_SECONDS = 1500

DAG_SOURCE = '''
"""Six independent contract checks writing into one new results table (tests/test_scheduler_concurrency.py)."""
import datetime as dt

from airflow.sdk import DAG

from airflow_dq_contracts.operators import ContractCheckOperator

CONTRACT = {contract!r}

with DAG(
    dag_id={dag_id!r},
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    max_active_tasks=6,
    max_active_runs=1,
):
    for task_id in {tasks!r}:
        ContractCheckOperator(
            task_id=task_id,
            contract=CONTRACT,
            input_path={data!r},
            input_format="json",
            results_table={results!r},
            quarantine_table={quarantine!r},
            # A fresh worker: Ivy starts from this empty home (the same one for all six tasks).
            # (The JVM options only make short test JVMs cheaper on two cores; see cluster_fixtures.)
            spark_conf={{"spark.jars.ivy": {ivy!r}, "spark.driver.extraJavaOptions": {jvm_opts!r}}},
            write_report=False,
        )
'''


def _environment(home: Path, tmp: Path, port: int, marker: str, database_url: str | None = None) -> dict[str, str]:
    """The environment of every Airflow component (and so of the task processes and spark-submit).

    ``database_url``: the metadata database (default: SQLite in ``home``), e.g. a PostgreSQL one.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW", "DQ_CONTRACTS_", "DQ_TESTS_")) and key != "PYSPARK_SUBMIT_ARGS"
    }
    env.update(
        {
            # This checkout's package first, whatever the virtualenv has installed.
            "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            # spark-submit and the airflow CLI of this environment (conftest puts it first on PATH too).
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_url or f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",  # unpaused explicitly, as a user does
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "8",  # LocalExecutor: that many worker processes
            "AIRFLOW__CORE__MAX_ACTIVE_TASKS_PER_DAG": "8",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
            "AIRFLOW__API__WORKERS": "1",
            # The scheduler signs the task processes' tokens, the api-server checks them: one secret.
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(24),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "AIRFLOW__OPENLINEAGE__DISABLED": "True",  # no transport here; not what this test is about
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[1]"}),
            # A fresh worker: an empty jars folder, nothing pre-resolved (DQ_CONTRACTS_DELTA_JARS unset).
            "DQ_CONTRACTS_JARS_DIR": str(tmp / "jars"),
            "DQ_CONTRACTS_WAREHOUSE": str(tmp / "warehouse"),
            "DQ_CONTRACTS_JOB_CACHE": str(tmp / "job-cache"),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            # Every process of the test (components, task processes, spark-submit in its own session, JVMs)
            # inherits the marker: the cleanup finds stragglers by it, and so does the cluster fixtures'
            # reaper after a crashed session (the value starts with this pytest's process id).
            MARKER_ENV: marker,
        }
    )
    env.pop("SPARK_HOME", None)
    return env


def _airflow(env: dict[str, str], *args: str, timeout: float = START_DEADLINE_SECONDS) -> str:
    """Run one Airflow CLI command to its end; its output, or an AssertionError holding it."""
    done = subprocess.run(
        [sys.executable, "-m", "airflow", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )
    assert done.returncode == 0, f"airflow {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@contextlib.contextmanager
def _components(
    env: dict[str, str], logs: Path, marker: str, extra: tuple[str, ...] = ()
) -> Iterator[dict[str, subprocess.Popen]]:
    """api-server, dag-processor, scheduler (and ``extra``, e.g. ``triggerer``) as process groups of their own.

    All stopped on exit.
    """
    procs: dict[str, subprocess.Popen] = {}
    with contextlib.ExitStack() as files:  # the log files, closed once every component has stopped
        try:
            for name, args in (
                ("api-server", ["api-server", "--workers", "1"]),
                ("dag-processor", ["dag-processor"]),
                ("scheduler", ["scheduler"]),
                *((name, [name]) for name in extra),
            ):
                # a file: a full pipe would block the component
                out = files.enter_context(open(logs / f"{name}.log", "w"))
                procs[name] = subprocess.Popen(
                    [sys.executable, "-m", "airflow", *args],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            yield procs
        finally:
            for proc in procs.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
            stop_by = time.monotonic() + 60
            for proc in procs.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(1.0, stop_by - time.monotonic()))
            # Whatever is left — a group that ignored SIGTERM, spark-submit in its own session — goes now.
            for proc in procs.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            for straggler in find_marked_processes(marker):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(straggler.pid, signal.SIGKILL)
            for proc in procs.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=30)


def _query(db: Any, sql: str, *params: Any) -> list[tuple]:
    """Rows of ``sql`` (``?`` placeholders) from the metadata database: a SQLite file, or a PostgreSQL
    database of ``tests/pg_fixtures.py`` (its own placeholders)."""
    if not isinstance(db, Path):
        return list(db.query(sql.replace("?", "%s"), *params))
    # A short-lived read-only connection: the components own the database, this only looks.
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as conn:
        return conn.execute(sql, params).fetchall()


def _when(value: str) -> dt.datetime:
    """A timestamp as SQLAlchemy stored it in SQLite (``2026-11-23 20:01:02.123456[+00:00]``), in UTC."""
    moment = dt.datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _most_at_once(intervals: list[tuple[dt.datetime, dt.datetime]]) -> int:
    """The largest number of intervals that hold one common instant (some interval's start).

    >>> t = lambda s: dt.datetime(2026, 1, 1, 0, 0, s)
    >>> _most_at_once([(t(0), t(10)), (t(5), t(20)), (t(9), t(12)), (t(11), t(30))])
    3
    """
    return max(sum(1 for start, end in intervals if start <= instant < end) for instant, _ in intervals)


def _tail(path: Path, chars: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError as exc:
        return f"<{exc}>"


def _evidence(home: Path, logs: Path) -> str:
    """The components' logs and every task's log, tails only: the failure message of this test."""
    parts = [f"==== {path.name}\n{_tail(path)}" for path in sorted(logs.glob("*.log"))]
    parts += [
        f"==== {path.relative_to(home)}\n{_tail(path, 3000)}"
        for path in sorted((home / "logs").rglob("*.log"))
        if "dag_id=" in str(path)
    ]
    return "\n".join(parts)


@pytest.mark.timeout(START_DEADLINE_SECONDS * 2 + RUN_DEADLINE_SECONDS + 300)
def test_six_operator_tasks_on_a_fresh_worker_run_together_and_share_one_new_results_table(tmp_path):
    home, logs = tmp_path / "airflow-home", tmp_path / "logs"
    for folder in (home / "dags", logs, tmp_path / "ivy", tmp_path / "jars"):
        folder.mkdir(parents=True)
    data = tmp_path / "orders.json"
    data.write_text("".join(json.dumps({"id": i, "amount": float(i)}) + "\n" for i in range(5)), encoding="utf-8")
    results = tmp_path / "results"
    contract = {
        "name": "orders",
        "version": "1.0.0",
        "columns": [
            {
                "name": "id",
                "type": "long",
                "checks": [{"name": "ids present", "type": "missing", "max": 0, "severity": "P1"}],
            }
        ],
        "checks": [{"name": "volume", "type": "num_rows", "min": 1, "severity": "P1"}],
    }
    (home / "dags" / f"{DAG_ID}.py").write_text(
        DAG_SOURCE.format(
            contract=contract,
            dag_id=DAG_ID,
            tasks=TASKS,
            data=str(data),
            results=str(results),
            quarantine=str(tmp_path / "quarantine"),
            ivy=str(tmp_path / "ivy"),
            jvm_opts=FAST_JVM_OPTS,
        ),
        encoding="utf-8",
    )
    marker = f"{os.getpid()}:{secrets.token_hex(8)}"
    env = _environment(home, tmp_path, free_port(), marker)
    db = home / "airflow.db"

    _airflow(env, "db", "migrate")
    with _components(env, logs, marker) as procs:
        try:
            deadline = time.monotonic() + START_DEADLINE_SECONDS
            while not _query(db, "SELECT 1 FROM serialized_dag WHERE dag_id = ?", DAG_ID):
                errors = _query(db, "SELECT filename, stacktrace FROM import_error")
                assert not errors, f"the DAG file does not import: {errors}"
                dead = [name for name, proc in procs.items() if proc.poll() is not None]
                assert not dead, f"{dead} stopped before the DAG was parsed"
                assert time.monotonic() < deadline, "the dag-processor did not serialise the DAG in time"
                time.sleep(2)
            _airflow(env, "dags", "unpause", DAG_ID)
            # With a logical date: a run triggered without one has no data interval in Airflow 3, and the
            # operator's default reference_time ("{{ data_interval_end }}") does not render then.
            logical_date = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
            _airflow(env, "dags", "trigger", DAG_ID, "--run-id", RUN_ID, "--logical-date", logical_date)

            deadline = time.monotonic() + RUN_DEADLINE_SECONDS
            while True:
                (state,) = _query(db, "SELECT state FROM dag_run WHERE dag_id = ? AND run_id = ?", DAG_ID, RUN_ID)[0]
                if state in ("success", "failed"):
                    break
                dead = [name for name, proc in procs.items() if proc.poll() is not None]
                assert not dead, f"{dead} stopped while the run was {state}"
                assert time.monotonic() < deadline, f"the run is still {state} after {RUN_DEADLINE_SECONDS} s"
                time.sleep(3)

            instances = _query(
                db,
                "SELECT task_id, state, start_date, end_date, try_number FROM task_instance "
                "WHERE dag_id = ? AND run_id = ? ORDER BY task_id",
                DAG_ID,
                RUN_ID,
            )
            assert state == "success", f"the run ended {state}: {instances}"
            assert [(task_id, ti_state, tries) for task_id, ti_state, _, _, tries in instances] == [
                (task_id, "success", 1) for task_id in TASKS
            ]  # no retry hid a failed first attempt

            intervals = [(_when(start), _when(end)) for _, _, start, end, _ in instances]
            assert _most_at_once(intervals) >= 4, f"at most {_most_at_once(intervals)} tasks overlapped: {intervals}"

            rows = delta_rows(results)
            assert sorted((row["task_id"], row["check_id"]) for row in rows) == sorted(
                (task_id, check_id) for task_id in TASKS for check_id in CHECK_IDS
            )  # one copy each
            assert {(row["dag_id"], row["airflow_run_id"]) for row in rows} == {(DAG_ID, RUN_ID)}
            assert len({row["run_id"] for row in rows}) == len(TASKS)  # each task its own contract run
            assert {row["status"] for row in rows} == {"passed"}
            assert create_table_commits(results) == 1

            # Resolved once, through the operator's hook, into one complete folder; Ivy filled the empty home.
            folders = [p for p in (tmp_path / "jars").iterdir() if not p.name.startswith(".")]
            assert len(folders) == 1 and (folders[0] / ".complete").is_file(), folders
            assert any(folders[0].glob("io.delta_delta-spark_*.jar"))
            assert any((tmp_path / "ivy" / "cache").iterdir())
            assert "download failed" not in _evidence(home, logs)
        except (Exception, pytest.fail.Exception) as exc:  # a failed assert, an error, pytest-timeout
            raise AssertionError(f"{exc}\n\n---- logs ----\n{_evidence(home, logs)}") from exc
