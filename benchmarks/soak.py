"""Soak: many contract check tasks on one results table under a real scheduler, with kill -9s.

Airflow's own components as processes (api-server, dag-processor, scheduler with the LocalExecutor,
triggerer — the machinery of ``tests/test_scheduler_concurrency.py``) in a throw-away ``AIRFLOW_HOME``.
One DAG of ``--tasks`` ``ContractCheckOperator`` tasks, ``--parallel`` at a time, mixed outcomes (pass,
quarantine, gate — in turn), all writing into one results table and one quarantine table; every task
has retries. Every ``--kill-every`` finished tasks, the task process of a running task (Airflow's
``airflow worker -- <ti>``) is SIGKILLed while its ``spark-submit`` is running — a worker lost, as a
node loss or the OOM killer does it: ``on_kill`` never runs, the Spark driver is orphaned, Airflow's
retry starts a second attempt of the same contract run.

What is counted, read back with delta-rs (never with the code under test) against the expected rows
computed here: every (run, check) result row exactly once — ``lost`` and ``duplicated`` must be 0 —, the
quarantine rows of every quarantining run exactly once, every task ``success``. The scheduler's and the
triggerer's memory (RSS of their process groups) are printed at the start and the end.

    python benchmarks/soak.py                      # 200 tasks, 4 at a time, a kill every ~20
    python benchmarks/soak.py --tasks 40 --kill-every 10

``tests/test_soak.py`` runs a 20-task version in the suite. Not a timed test: the run takes what it takes.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import datetime as dt
import json
import os
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _path in (str(ROOT), str(ROOT / "tests")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from cluster_fixtures import FAST_JVM_OPTS, MARKER_ENV, free_port  # noqa: E402
from test_scheduler_concurrency import _airflow, _components, _environment, _evidence, _query  # noqa: E402

DAG_ID = "dq_soak"
RUN_ID = "soak"
OUTCOMES = ("pass", "quarantine", "gate")
#: The check ids each outcome's contract writes (slugs of the names, and the declared column's schema check).
CHECKS = {
    "pass": ("id/ids_present", "id/schema"),
    "quarantine": ("email/email_is_valid", "email/schema"),
    "gate": ("_table_/at_most_three_rows",),
}

DAG_SOURCE = '''
"""{tasks} contract checks on one results table (benchmarks/soak.py)."""
import datetime as dt

from airflow.sdk import DAG

from airflow_dq_contracts.operators import ContractCheckOperator

ID = {{"name": "id", "type": "long", "checks": [{{"name": "ids present", "type": "missing", "max": 0, "severity": "P1"}}]}}
EMAIL = {{"name": "email", "type": "string", "checks": [
    {{"name": "email is valid", "type": "pattern", "format": "email", "severity": "P1"}}]}}
CONTRACTS = {{
    "pass": {{"name": "ids", "version": "1.0.0", "columns": [ID]}},
    "quarantine": {{"name": "emails", "version": "1.0.0", "columns": [EMAIL]}},
    "gate": {{"name": "volume", "version": "1.0.0", "checks": [
        {{"name": "at most three rows", "type": "num_rows", "max": 3, "severity": "P0"}}]}},
}}

with DAG(dag_id={dag_id!r}, schedule=None, start_date=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
         catchup=False, max_active_tasks={parallel},
         default_args={{"retries": 3, "retry_delay": dt.timedelta(seconds=1)}}):
    for n in range({tasks}):
        outcome = {outcomes!r}[n % 3]
        ContractCheckOperator(
            task_id=f"check_{{n:03d}}_{{outcome}}",
            contract=CONTRACTS[outcome],
            input_path={data!r},
            input_format="json",
            results_table={results!r},
            quarantine_table={quarantine!r},
            write_report=False,
            fail_on_gate=False,
            spark_conf={{"spark.driver.extraJavaOptions": {jvm_opts!r}}},
        )
'''


@dataclasses.dataclass
class SoakResult:
    tasks: int
    kills: list[str]
    states: dict[str, tuple[str, int]]  # task id -> (state, try number)
    lost: list[tuple[str, str]]  # (task id, check id) without a result row
    duplicated: list[tuple[str, str, int]]  # (task id, check id, copies) with more than one
    quarantine_wrong: dict[str, tuple[list[int], list[int]]]  # task id -> (ids found, ids expected)
    memory: dict[str, tuple[int, int]]  # component -> (RSS bytes at the start, at the end)
    seconds: float
    evidence: Callable[[], str]

    @property
    def ok(self) -> bool:
        return (
            not self.lost
            and not self.duplicated
            and not self.quarantine_wrong
            and all(state == "success" for state, _ in self.states.values())
        )


def _rss_of_group(pgid: int) -> int:
    """Resident memory (bytes) of every live process in process group ``pgid``."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            if os.getpgid(int(entry)) != pgid:
                continue
            with open(f"/proc/{entry}/statm") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return total


def _proc(pid: str, name: str) -> bytes:
    with open(f"/proc/{pid}/{name}", "rb") as handle:
        return handle.read()


def _task_runners_mid_job(marker: str) -> list[tuple[int, str]]:
    """(pid, title) of this soak's task processes whose spark-submit is running (a child of theirs).

    A task process renames itself (``airflow worker -- <ti id>``, setproctitle), which overwrites the
    environment /proc shows: the soak's marker is looked for on the child (spark-submit, started with the
    task's environment), the title on its parent.
    """
    wanted = f"{MARKER_ENV}={marker}".encode()
    marked_children: set[int] = set()
    titles: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            title = _proc(entry, "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()
            if title.startswith("airflow worker -- ") and "LocalExecutor" not in title:
                titles[int(entry)] = title
            elif wanted in _proc(entry, "environ").split(b"\0"):
                stat = _proc(entry, "stat").decode(errors="replace")
                marked_children.add(int(stat[stat.rindex(")") + 2 :].split()[1]))
    return sorted((pid, titles[pid]) for pid in marked_children if pid in titles)


def run_soak(
    workdir: Path,
    *,
    tasks: int,
    parallel: int = 4,
    kill_every: int = 20,
    deadline_seconds: float = 7200,
    log: Callable[[str], None] = print,
) -> SoakResult:
    """Run the soak in ``workdir`` (see the module docs); the counts, never an assertion."""
    from test_concurrency import delta_rows

    from airflow_dq_contracts.runtime import jars

    started = time.monotonic()
    home, logs = workdir / "airflow-home", workdir / "logs"
    for folder in (home / "dags", logs):
        folder.mkdir(parents=True, exist_ok=True)
    rows = [{"id": i, "email": f"user{i}@example.com" if i % 3 else f"user{i}-at-example.com"} for i in range(8)]
    bad_ids = sorted(r["id"] for r in rows if "@" not in r["email"])
    data, results, quarantine = workdir / "users.json", workdir / "results", workdir / "quarantine"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    task_ids = [f"check_{n:03d}_{OUTCOMES[n % 3]}" for n in range(tasks)]
    (home / "dags" / f"{DAG_ID}.py").write_text(
        DAG_SOURCE.format(
            tasks=tasks,
            parallel=parallel,
            dag_id=DAG_ID,
            outcomes=OUTCOMES,
            data=str(data),
            results=str(results),
            quarantine=str(quarantine),
            jvm_opts=FAST_JVM_OPTS,
        ),
        encoding="utf-8",
    )
    marker = f"{os.getpid()}:{secrets.token_hex(8)}"
    env = _environment(home, workdir, free_port(), marker)
    env["AIRFLOW__CORE__PARALLELISM"] = str(parallel)
    env["DQ_CONTRACTS_DELTA_JARS"] = str(Path(jars.delta_jars()[0]).parent)  # resolved once, not the subject here
    db = home / "airflow.db"
    kills: list[str] = []
    memory: dict[str, list[int]] = {}

    _airflow(env, "db", "migrate")
    with _components(env, logs, marker, extra=("triggerer",)) as procs:
        deadline = time.monotonic() + deadline_seconds
        while not _query(db, "SELECT 1 FROM serialized_dag WHERE dag_id = ?", DAG_ID):
            errors = _query(db, "SELECT filename, stacktrace FROM import_error")
            if errors:
                raise RuntimeError(f"the soak DAG does not import: {errors}")
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs.values()):
                raise RuntimeError(f"the DAG was not parsed:\n{_evidence(home, logs)}")
            time.sleep(2)
        for name in ("scheduler", "triggerer"):
            memory[name] = [_rss_of_group(procs[name].pid)]
        _airflow(env, "dags", "unpause", DAG_ID)
        logical_date = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
        _airflow(env, "dags", "trigger", DAG_ID, "--run-id", RUN_ID, "--logical-date", logical_date)
        log(f"soak: {tasks} tasks, {parallel} at a time, a kill -9 every {kill_every} finished tasks")

        next_kill, reported = kill_every, 0
        while True:
            (state,) = _query(db, "SELECT state FROM dag_run WHERE dag_id = ? AND run_id = ?", DAG_ID, RUN_ID)[0]
            if state in ("success", "failed"):
                break
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs.values()):
                raise RuntimeError(f"the soak run is {state} and stuck or a component died:\n{_evidence(home, logs)}")
            done = _query(db, "SELECT COUNT(*) FROM task_instance WHERE dag_id = ? AND state = 'success'", DAG_ID)[0][0]
            if done >= reported + 10:
                reported = done
                log(f"soak: {done}/{tasks} tasks done, {len(kills)} killed, {time.monotonic() - started:.0f} s")
            if done >= next_kill and len(kills) < tasks // kill_every:
                for pid, title in _task_runners_mid_job(marker)[:1]:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        kills.append(title.rsplit(" ", 1)[-1])
                        next_kill += kill_every
                        log(f"soak: kill -9 {pid} ({title}) with {done} tasks done")
            time.sleep(0.5)
        for name in ("scheduler", "triggerer"):
            memory[name].append(_rss_of_group(procs[name].pid))

    states = {
        task_id: (ti_state, tries)
        for task_id, ti_state, tries in _query(
            db, "SELECT task_id, state, try_number FROM task_instance WHERE dag_id = ? AND run_id = ?", DAG_ID, RUN_ID
        )
    }
    result_rows = delta_rows(results)
    copies = collections.Counter((r["task_id"], r["check_id"]) for r in result_rows)
    expected = [(task_id, check) for task_id in task_ids for check in CHECKS[task_id.rsplit("_", 1)[-1]]]
    lost = [key for key in expected if copies[key] == 0]
    duplicated = [(*key, n) for key, n in copies.items() if n > 1]
    unexpected = set(copies) - set(expected)
    lost += sorted(unexpected)  # a row of no expected (task, check) is as wrong as a missing one
    quarantined: dict[str, list[int]] = collections.defaultdict(list)
    if quarantine.exists():
        by_run = {r["run_id"]: r["task_id"] for r in result_rows}
        for q in delta_rows(quarantine):
            quarantined[by_run.get(q["_dq_run_id"], q["_dq_run_id"])].append(q["id"])
    quarantine_wrong = {
        task_id: (sorted(quarantined.get(task_id, [])), bad_ids if task_id.endswith("_quarantine") else [])
        for task_id in set(task_ids) | set(quarantined)
        if sorted(quarantined.get(task_id, [])) != (bad_ids if task_id.endswith("_quarantine") else [])
    }
    return SoakResult(
        tasks=tasks,
        kills=kills,
        states=states,
        lost=lost,
        duplicated=duplicated,
        quarantine_wrong=quarantine_wrong,
        memory={name: (values[0], values[-1]) for name, values in memory.items()},
        seconds=time.monotonic() - started,
        evidence=lambda: _evidence(home, logs),
    )


def report(result: SoakResult) -> str:
    retried = sum(1 for _, tries in result.states.values() if tries > 1)
    states = collections.Counter(state for state, _ in result.states.values())
    lines = [
        f"tasks {result.tasks}: {dict(states)}; {len(result.kills)} killed with kill -9, {retried} retried",
        f"result rows lost {len(result.lost)}, duplicated {len(result.duplicated)}; "
        f"quarantine runs wrong {len(result.quarantine_wrong)}",
    ]
    for name, (start, end) in result.memory.items():
        lines.append(f"{name} memory (RSS of its processes): start {start / 2**20:.0f} MiB, end {end / 2**20:.0f} MiB")
    lines.append(f"took {result.seconds:.0f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--kill-every", type=int, default=20)
    parser.add_argument("--workdir", type=Path, help="kept after the run (default: a temporary folder, removed)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="dq-soak-")))
        result = run_soak(workdir, tasks=args.tasks, parallel=args.parallel, kill_every=args.kill_every)
        print(report(result))
        if not result.ok:
            print(f"lost {result.lost[:10]}\nduplicated {result.duplicated[:10]}\nquarantine {result.quarantine_wrong}")
            print({t: s for t, s in result.states.items() if s[0] != "success"})
        return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
