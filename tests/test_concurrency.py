"""Many contract runs at once, as on a busy Airflow worker: each one a process of its own.

* Six ``dq-contracts run`` started together on a *fresh worker*: an empty Ivy home
  (``spark.jars.ivy``) and an empty jars folder, shared by all six. Before the lock in ``jars.py``
  each started its own Ivy resolve into the one cache and they failed with
  ``[download failed: …zstd-jni.jar, …]``. Now one resolves, the others wait and reuse its folder,
  and all six results land in one results table that none of them found (one copy each). The lock
  file's journal proves the race: one Ivy resolution, and at least one run that waited for it.
* Six writer processes, ten times over, released together to write into one table that does not
  exist yet: a results, quarantine or valid table in turn. Each writer reports its writes' windows and
  its waits on the table's commit lock: the test asserts the writes overlapped in every round and that
  some writer waited for another's commit, so a run without contention fails instead of passing. Before the fix a loser failed with
  ``[DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION]`` or ``… exists but is not a Delta table``: its
  JVM's cached Delta log of the path predated the winner's first commit and was never refreshed.

Expected values are written by hand (six runs, one row per check, three rows per writer) and read
back with delta-rs, not with the Spark code under test. Tests assert what happened, never how fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
APPS = Path(__file__).resolve().parent / "apps"
WRITERS = 6
ROUNDS = 10
# Generous: six JVMs on a loaded two-core machine. A deadline, never a speed assertion.
DEADLINE_SECONDS = 1500


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.update(extra)
    return env


def delta_rows(path: Path) -> list[dict]:
    """Every row of the Delta table at ``path``, read with delta-rs (not with the Spark code under test)."""
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_table().to_pylist()


def create_table_commits(path: Path) -> int:
    """How many commits of the Delta table at ``path`` created it (one, when first creation is safe)."""
    from deltalake import DeltaTable

    return sum(1 for commit in DeltaTable(str(path)).history() if commit.get("operation") == "CREATE TABLE")


@pytest.mark.slow
@pytest.mark.timeout(DEADLINE_SECONDS + 600)
def test_six_cli_runs_on_a_fresh_worker_resolve_once_and_share_one_new_results_table(tmp_path):
    data = tmp_path / "orders.json"
    data.write_text("".join(json.dumps({"id": i, "amount": float(i)}) + "\n" for i in range(5)), encoding="utf-8")
    contract = tmp_path / "orders.yaml"
    contract.write_text(
        yaml.safe_dump(
            {
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
        ),
        encoding="utf-8",
    )
    ivy, jars_dir, results = tmp_path / "ivy", tmp_path / "jars", tmp_path / "results"
    ivy.mkdir()
    jars_dir.mkdir()
    env = _env(DQ_CONTRACTS_JARS_DIR=str(jars_dir))
    env.pop("DQ_CONTRACTS_DELTA_JARS", None)  # a fresh worker: nothing pre-resolved
    with contextlib.ExitStack() as files:
        logs = [
            files.enter_context(open(tmp_path / f"run-{n}.log", "w")) for n in range(WRITERS)
        ]  # a full pipe would block
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "airflow_dq_contracts.cli.main",
                    "run",
                    str(contract),
                    "--input",
                    str(data),
                    "--input-format",
                    "json",
                    "--run-id",
                    f"run-{n}",
                    "--results-table",
                    str(results),
                    "--master",
                    "local[1]",
                    "--conf",
                    f"spark.jars.ivy={ivy}",
                    "--json-out",
                    str(tmp_path / f"{n}.json"),
                ],
                cwd=tmp_path,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for n, log in enumerate(logs)
        ]
        deadline = time.monotonic() + DEADLINE_SECONDS
        for proc in procs:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    outputs = [(tmp_path / f"run-{n}.log").read_text() for n in range(WRITERS)]

    for proc, output in zip(procs, outputs):
        assert proc.returncode == 0, output[-3000:]
        assert "download failed" not in output
    rows = delta_rows(results)
    by_run = sorted((row["run_id"], row["check_id"]) for row in rows)
    # the two written checks (ids are slugs of the names) and the declared column's schema check
    checks = ("_table_/volume", "id/ids_present", "id/schema")
    assert by_run == sorted((f"run-{n}", check) for n in range(WRITERS) for check in checks)
    assert create_table_commits(results) == 1
    # Resolved once, into one complete folder of local jars, and Ivy filled the given (empty) home.
    folders = [p for p in jars_dir.iterdir() if not p.name.startswith(".")]
    assert len(folders) == 1 and (folders[0] / ".complete").is_file()
    assert any(folders[0].glob("io.delta_delta-spark_*.jar"))
    assert any((ivy / "cache").iterdir())
    # The race happened: the lock's journal (runtime/jars.py) holds one Ivy resolution, and at least one
    # other run that waited on the lock while it ran and took the lock after it — never a second resolution.
    journal = (jars_dir / f".{folders[0].name}.lock").read_text(encoding="utf-8").splitlines()
    resolved = [n for n, line in enumerate(journal) if " resolved io.delta:delta-spark_" in line]
    waited = [n for n, line in enumerate(journal) if " waited " in line and " s for the lock (" in line]
    assert len(resolved) == 1, journal
    assert waited and all(n > resolved[0] for n in waited), journal
    pid = journal[resolved[0]].split(" pid ", 1)[1].split()[0]
    assert pid not in {journal[n].split(" pid ", 1)[1].split()[0] for n in waited}, journal
    assert len(journal) == len(resolved) + len(waited) <= WRITERS, journal


@pytest.mark.slow
@pytest.mark.timeout(DEADLINE_SECONDS + 600)
def test_six_writers_create_the_same_new_tables_ten_times(tmp_path):
    # Output to files, not pipes: a writer whose unread pipe fills (Spark's warnings on every retried
    # conflict) would block while the test waits for another one.
    with contextlib.ExitStack() as files:
        logs = [
            (
                files.enter_context(open(tmp_path / f"writer-{n}.out", "w")),
                files.enter_context(open(tmp_path / f"writer-{n}.err", "w")),
            )
            for n in range(WRITERS)
        ]
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(APPS / "sink_writer.py"),
                    "--root",
                    str(tmp_path),
                    "--writer",
                    str(n),
                    "--rounds",
                    str(ROUNDS),
                ],
                env=_env(),
                stdout=out,
                stderr=err,
                text=True,
            )
            for n, (out, err) in enumerate(logs)
        ]
        try:
            deadline = time.monotonic() + DEADLINE_SECONDS
            while not all((tmp_path / f"ready-{n}").exists() for n in range(WRITERS)):
                dead = [n for n, p in enumerate(procs) if p.poll() is not None]
                assert not dead, (tmp_path / f"writer-{dead[0]}.err").read_text()[-3000:]
                assert time.monotonic() < deadline, "writers did not start"
                time.sleep(0.5)
            # All six released at once; each round is one write onto a new table, so the writers stay
            # nearly in step and race to create every round's table. (Releasing each round only once all
            # six finished the last made every round a six-way commit conflict on appends too: on a loaded
            # two-core machine, over 25 minutes.)
            for round_no in range(ROUNDS):
                (tmp_path / f"go-{round_no}").touch()
            outcomes = []
            for n, proc in enumerate(procs):
                proc.wait(timeout=max(1.0, deadline - time.monotonic()))
                assert proc.returncode == 0, (tmp_path / f"writer-{n}.err").read_text()[-3000:]
                out = (tmp_path / f"writer-{n}.out").read_text()
                outcomes += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()

    failures = [o for o in outcomes if not o["ok"]]
    assert not failures, failures[:3]
    assert len(outcomes) == WRITERS * ROUNDS
    kinds = ("results", "quarantine", "valid")  # the writers' turn order (sink_writer.KINDS)
    assert sorted((o["round"], o["kind"]) for o in outcomes) == sorted(
        (r, kinds[r % 3]) for r in range(ROUNDS) for _ in range(WRITERS)
    )
    for round_no in range(ROUNDS):
        kind = kinds[round_no % 3]
        table = tmp_path / f"round-{round_no}" / kind
        runs = {f"w{n}-r{round_no}" for n in range(WRITERS)}
        if kind == "results":
            assert sorted(row["run_id"] for row in delta_rows(table)) == sorted(runs)  # one copy each
        else:
            assert sorted((row["_dq_run_id"], row["id"]) for row in delta_rows(table)) == sorted(
                (run, i) for run in runs for i in range(3)
            ), kind
        assert create_table_commits(table) == 1, (round_no, kind)
        assert sorted(p.name for p in table.parent.iterdir()) == [kind]  # nothing else was written
    # The race happened: in a round, at least two writers' writes onto its new table overlapped in time. (All
    # rounds are released at once, so on a loaded machine the writers drift apart over the later rounds: the
    # first rounds race, and a run in which no round did fails here.)
    overlapped = []
    for round_no in range(ROUNDS):
        windows = sorted((o["began"], o["ended"]) for o in outcomes if o["round"] == round_no)
        if any(later[0] < earlier[1] for earlier, later in zip(windows, windows[1:])):
            overlapped.append(round_no)
    assert overlapped, [(o["round"], o["began"], o["ended"]) for o in outcomes]
    # …and writers did wait on a table's commit lock while another committed (a run without contention fails)
    assert sum(o["lock_waits"] for o in outcomes) >= 1, outcomes
