"""A worker lost for real (SIGKILL) mid-job, and the big-table read path, through real spark-submit runs.

Each attempt of the check runs as an Airflow worker would run it — ``ContractSubmitHook`` submitting the
packaged job (client mode, ``local[2]``) — in a process of its own (``tests/apps/check_attempt.py``)
that the test can SIGKILL. The job is held at a point by the test-only pause hook of
``engine/runner.py`` (``$DQ_CONTRACTS_TEST_PAUSE``), so the kill lands while spark-submit is mid-job.

* kill -9: the worker of attempt 1 is SIGKILLed while its job waits before its first write; its
  spark-submit lives on as an orphan. Attempt 2 on the same host finds it, stops its process group
  (one warning line) and runs: results, quarantine and valid rows exactly once.
* fencing: the orphan of attempt 1 is out of reach (another host: another job folder); attempt 2 runs
  to the end; the orphan then resumes and its late write is refused — it fails, naming attempt 2 —
  and the tables hold attempt 2's rows once.
* the big-table path: the driver-read threshold lowered to 1 byte, Spark's own Delta reader reads the
  input, pinned at its version; a commit appended between the pin and the scan is not seen.

Every table is read back with delta-rs and compared with an oracle computed here from the input rows.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "apps" / "check_attempt.py"
PAUSE_ENV = "DQ_CONTRACTS_TEST_PAUSE"  # engine/runner.py's test-only hook, written out here
CONTRACT = """\
name: people
version: "1.0"
columns:
  - name: id
    type: long
    checks:
      - {name: id is present, type: missing, max: 0, severity: P0}
      - {name: ids are unique, type: duplicates, max: 0, severity: P0}
  - name: email
    type: string
    checks:
      - {name: email is valid, type: pattern, format: email, severity: P1, action: quarantine}
"""
ROWS = 60


def _people(first: int = 1, count: int = ROWS) -> list[dict]:
    """Every 7th email lacks its ``@``: those rows are the quarantine's."""
    return [
        {"id": i, "email": f"person{i}.example.com" if i % 7 == 0 else f"person{i}@example.com"}
        for i in range(first, first + count)
    ]


def _write_input(path: Path, rows: list[dict], mode: str = "append") -> None:
    from deltalake import write_deltalake

    schema = pa.schema([("id", pa.int64()), ("email", pa.string())])
    write_deltalake(str(path), pa.Table.from_pylist(rows, schema=schema), mode=mode)


def _rows(path: Path, column: str, value: object) -> list[dict]:
    from deltalake import DeltaTable

    table = DeltaTable(str(path)).to_pyarrow_table()
    return table.filter(pc.equal(table[column], value)).to_pylist()


class Run:
    """One run of the check (its spec in a file) and the environment of its attempts."""

    def __init__(self, root: Path, run_id: str) -> None:
        from airflow_dq_contracts.runspec import RunSpec

        self.root, self.run_id = root, run_id
        self.input = root / "people"
        self.results, self.quarantine, self.valid = root / "wh" / "dq_results", root / "q", root / "valid"
        spec = RunSpec(
            contract_text=CONTRACT,
            contract_origin="people.yaml",
            input_path=str(self.input),
            input_format="delta",
            run_id=run_id,
            results_table=str(self.results),
            quarantine_table=str(self.quarantine),
            valid_table=str(self.valid),
        )
        self.spec_file = root / "spec.json"
        self.spec_file.write_text(spec.to_json(), encoding="utf-8")

    def start(
        self,
        attempt: int,
        *,
        pause: str | None = None,
        host: str = "host-a",
        conf: dict | None = None,
        tag: str = "",
    ) -> subprocess.Popen[str]:
        """Start attempt ``attempt``'s worker; ``pause`` = ``POINT`` holds its job there; ``host`` = its job folder.

        ``tag`` names the pause file apart, so that two attempts can wait at the same point, each released on its own.
        """
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["DQ_CONTRACTS_JOB_CACHE"] = str(self.root / host)
        env.pop(PAUSE_ENV, None)
        if pause:
            self.pause_file(pause, tag).write_text("hold", encoding="utf-8")
            env[PAUSE_ENV] = f"{pause}:{self.pause_file(pause, tag)}"
        command = [sys.executable, str(WORKER), str(self.spec_file), str(attempt), json.dumps(conf or {})]
        return subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.root
        )

    def pause_file(self, point: str, tag: str = "") -> Path:
        return self.root / f"pause-{point}{tag}"

    def wait_paused(self, point: str, worker: subprocess.Popen[str], timeout: float = 300, tag: str = "") -> int:
        """The pid of the job's Python driver, once it waits at ``point``."""
        reached = Path(f"{self.pause_file(point, tag)}.reached")
        deadline = time.monotonic() + timeout
        while not reached.exists() or not reached.read_text(encoding="utf-8").strip():
            if worker.poll() is not None:
                pytest.fail(f"the worker ended before the job paused:\n{worker.stdout.read() if worker.stdout else ''}")
            if time.monotonic() > deadline:
                pytest.fail(f"the job did not reach {point} in {timeout:.0f} s")
            time.sleep(0.2)
        return int(reached.read_text(encoding="utf-8"))

    def finish(self, worker: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str, dict]:
        """(exit code, output, the DONE payload or the error) of a worker."""
        out, _ = worker.communicate(timeout=timeout)
        for line in out.splitlines():
            for tag in ("ATTEMPT_DONE ", "ATTEMPT_FAILED "):
                if line.startswith(tag):
                    return worker.returncode, out, json.loads(line[len(tag) :])
        pytest.fail(f"the worker printed no outcome (exit {worker.returncode}):\n{out[-4000:]}")

    def assert_exactly_once(self, payload: dict, attempt: int) -> None:
        """Results, quarantine, valid rows and the registry of the run: once each, as computed here."""
        from deltalake import DeltaTable

        people = _people()
        bad = sorted(p["id"] for p in people if p["id"] % 7 == 0)
        results = _rows(self.results, "run_id", self.run_id)
        assert len(results) == payload["checks"] == len({r["check_id"] for r in results})  # each check once
        by_name = {r["check_name"]: r for r in results}
        assert by_name["email is valid"]["failed_rows"] == len(bad)
        assert {r["row_count"] for r in results} == {ROWS}
        quarantined = _rows(self.quarantine, "_dq_run_id", self.run_id)
        assert sorted(r["id"] for r in quarantined) == bad
        valid = _rows(self.valid, "_dq_run_id", self.run_id)
        assert sorted(r["id"] for r in valid) == sorted(p["id"] for p in people if p["id"] % 7)
        # No other run's rows either: the tables hold this run only.
        assert len(DeltaTable(str(self.quarantine)).to_pyarrow_table()) == len(bad)
        assert len(DeltaTable(str(self.valid)).to_pyarrow_table()) == ROWS - len(bad)
        registry = DeltaTable(str(self.results.parent / "dq_contracts")).to_pyarrow_table().to_pylist()
        assert [(r["contract_name"], r["contract_version"], r["last_run_id"]) for r in registry] == [
            ("people", "1.0", self.run_id)
        ]
        # Each table's commit carries the attempt that wrote it (store/fencing.py).
        for table in (self.results, self.quarantine, self.valid):
            assert DeltaTable(str(table)).transaction_version(f"airflow-dq-contracts:{self.run_id}") == attempt


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _submit_record(root: Path, host: str) -> dict:
    records = list((root / host / "submits").glob("*.json"))
    assert len(records) == 1, records
    return json.loads(records[0].read_text(encoding="utf-8"))


def test_a_worker_killed_mid_job_leaves_an_orphan_the_retry_stops(tmp_path):
    run = Run(tmp_path, "dq-kill-1")
    _write_input(run.input, _people())
    first = run.start(1, pause="write")
    driver = run.wait_paused("write", first)
    orphan = _submit_record(tmp_path, "host-a")["pid"]  # spark-submit, the leader of its process group
    first.kill()  # SIGKILL: no on_kill, no finally — as when a worker is lost
    first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    assert _alive(orphan) and _alive(driver)  # the job lives on, holding before its first write

    code, out, payload = run.finish(run.start(2))
    assert code == 0, out[-4000:]
    stopping = [line for line in out.splitlines() if "Stopping the orphan of an earlier attempt" in line]
    assert len(stopping) == 1 and f"spark-submit pid {orphan}" in stopping[0]
    assert not _alive(orphan) and not _alive(driver)
    assert payload["decision"] == "quarantine" and payload["row_count"] == ROWS
    run.assert_exactly_once(payload, attempt=2)
    assert not list((tmp_path / "host-a" / "submits").glob("*.json"))  # attempt 2's record gone with it


def test_a_late_write_of_an_unreachable_earlier_attempt_is_refused(tmp_path):
    run = Run(tmp_path, "dq-fence-1")
    _write_input(run.input, _people())
    first = run.start(1, pause="write", host="host-a")
    run.wait_paused("write", first)
    # Attempt 2 on another host: attempt 1's spark-submit is out of its reach.
    code, out, payload = run.finish(run.start(2, host="host-b"))
    assert code == 0, out[-4000:]
    assert "Stopping the orphan" not in out
    run.assert_exactly_once(payload, attempt=2)

    run.pause_file("write").unlink()  # the orphan resumes: its first write comes after attempt 2's
    code, out, error = run.finish(first)
    assert code == 1, out[-4000:]
    assert error["kind"] == "run_failed"
    assert f"attempt 1 of run {run.run_id} is fenced off: attempt 2 of the same run has written" in error["message"]
    run.assert_exactly_once(payload, attempt=2)  # nothing of attempt 1 landed


def test_a_big_input_is_read_by_sparks_delta_reader_at_the_pinned_version(tmp_path):
    from deltalake import DeltaTable

    run = Run(tmp_path, "dq-big-1")
    _write_input(run.input, _people(count=30))
    _write_input(run.input, _people(first=31, count=30))  # two commits: version 1
    pinned = DeltaTable(str(run.input)).version()
    worker = run.start(1, pause="read", conf={"spark.dqcontracts.driverReadBytes": "1"})
    run.wait_paused("read", worker)
    _write_input(run.input, _people(first=1000, count=7))  # lands after the pin, before any scan
    run.pause_file("read").unlink()
    code, out, payload = run.finish(worker)
    assert code == 0, out[-4000:]
    assert payload["read"] == {"reader": "spark", "version": pinned}
    assert DeltaTable(str(run.input)).version() == pinned + 1
    assert payload["row_count"] == ROWS  # the pinned version's rows, not the 7 appended since
    run.assert_exactly_once(payload, attempt=1)
