"""The job process of a run, recorded across attempts: a retry stops the orphan a lost worker left behind.

When the Airflow worker running a check dies without ``on_kill`` (SIGKILL, OOM), the process it started
for the job — spark-submit in local/client mode (its JVM, Python driver and workers), or the Spark
Connect client (whose SIGTERM interrupts its operations on the server) — lives on, in a session of its
own, and may still be writing while Airflow's retry runs the same run id. So each attempt records its
job process in ``<folder>/<digest of the run id>.json`` (:meth:`JobProcessRecord.remember`: pid, which
leads its process group, start time, host), drops the record when the process ended
(:meth:`~JobProcessRecord.forget`), and a retry first stops a recorded process that still runs on this
host (:meth:`~JobProcessRecord.reclaim`: SIGTERM to its process group, SIGKILL after the grace), with
one warning line. A pid reused by another process (another start time) is never signalled; a record
from another host is out of reach — the writes' fencing (store/fencing.py) refuses that orphan's late
commits.

Example::

    record = JobProcessRecord(cache_dir() / "submits", run_id, log)
    record.reclaim(grace=10)            # before submitting
    process = subprocess.Popen(..., start_new_session=True)
    record.remember(process.pid)
    ...
    record.forget(process.pid)          # it ended
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

import psutil

from airflow_dq_contracts.version_compat import reap_process_group

__all__ = ["JobProcessRecord"]


class JobProcessRecord:
    """Where the job process of run ``run_key`` is recorded under ``folder``; ``log``: the hook's logger.

    :param what: how the process is named in log lines (``spark-submit``, ``the Spark Connect job``).
    """

    def __init__(self, folder: Path, run_key: str, log: Any, what: str = "spark-submit") -> None:
        self.path = folder / f"{hashlib.sha256(run_key.encode()).hexdigest()[:24]}.json"
        self.run_key, self.log, self.what = run_key, log, what

    def remember(self, pid: int) -> None:
        """Record process ``pid`` (the leader of its own process group) as this run's job process."""
        try:
            record = {
                "run_key": self.run_key,
                "pid": pid,
                "pgid": os.getpgid(pid),
                "started": psutil.Process(pid).create_time(),
                "host": socket.gethostname(),
            }
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(record, handle)
            os.replace(tmp, self.path)
        except (OSError, psutil.Error) as exc:  # it ended already, or the folder is read-only: nothing to record
            self.log.debug("%s of run %s not recorded: %s", self.what, self.run_key, exc)

    def forget(self, pid: int) -> None:
        """Drop the record of process ``pid`` (it ended); a record of another attempt's process stays."""
        try:
            if json.loads(self.path.read_text(encoding="utf-8")).get("pid") == pid:
                self.path.unlink(missing_ok=True)
        except (OSError, ValueError):
            pass

    def reclaim(self, grace: float) -> None:
        """Stop the recorded process of an earlier attempt if it still runs on this host; drop the record."""
        if not self.path.exists():
            return
        try:
            record = json.loads(self.path.read_text(encoding="utf-8"))
            pid, pgid, started = int(record["pid"]), int(record["pgid"]), float(record["started"])
            host = str(record.get("host") or "")
        except (OSError, ValueError, KeyError, TypeError):
            self.path.unlink(missing_ok=True)
            return
        if host != socket.gethostname():
            self.log.warning(
                "%s (pid %s) of an earlier attempt of run %s ran on host %s, out of reach from here: its late "
                "writes, if any, are fenced off",
                self.what,
                pid,
                self.run_key,
                host,
            )
        elif _same_process(pid, pgid, started) and pgid != os.getpgid(0):  # never this very process's group
            self.log.warning(
                "Stopping the orphan of an earlier attempt of run %s: %s pid %s (process group %s) is still running",
                self.run_key,
                self.what,
                pid,
                pgid,
            )
            try:
                reap_process_group(pgid, self.log, timeout=max(1, round(grace)))
            except Exception as exc:  # noqa: BLE001 - gone meanwhile, or not ours to signal: fencing still holds
                self.log.warning("Stopping process group %s: %s", pgid, exc)
        self.path.unlink(missing_ok=True)


def _same_process(pid: int, pgid: int, started: float) -> bool:
    """Whether ``pid`` still runs, is the process recorded (its start time) and still leads group ``pgid``."""
    try:
        return abs(psutil.Process(pid).create_time() - started) < 1.0 and os.getpgid(pid) == pgid
    except (psutil.Error, OSError):
        return False
