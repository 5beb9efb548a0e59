"""The machine-wide commit lock of local-filesystem tables (store/commit_lock.py): real processes, real flock."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from airflow_dq_contracts.store.commit_lock import LOCK_DIR_NAME, local_commit_lock, local_table_path

HOLDER = """
import json, sys, time
from airflow_dq_contracts.store.commit_lock import local_commit_lock
location, out, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
while time.time() < start:
    time.sleep(0.005)
with local_commit_lock(location):
    began = time.time()
    time.sleep(0.3)
    ended = time.time()
with open(out, "w") as f:
    json.dump([began, ended], f)
"""


def test_commits_to_one_local_table_never_overlap_across_processes(tmp_path):
    """Four processes released at once, each spelling the table's path its own way: one holder at a time."""
    table = tmp_path / "wh" / "dq_quarantine" / "orders"
    spellings = [str(table), f"file://{table}", f"{table}/", f"file:{table}"]
    assert len({local_table_path(s) for s in spellings}) == 1
    start = time.time() + 3
    procs = [
        subprocess.Popen([sys.executable, "-c", HOLDER, spelling, str(tmp_path / f"held-{n}.json"), str(start)])
        for n, spelling in enumerate(spellings)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    spans = sorted(json.loads((tmp_path / f"held-{n}.json").read_text()) for n in range(len(procs)))
    for (_, ended), (began, _) in zip(spans, spans[1:]):
        assert began >= ended, spans  # the next holder started after the previous one let go
    assert not (tmp_path / "wh").exists()  # nothing is written beside or into the table


def test_other_locations_take_no_lock_and_a_dead_holder_releases_it(tmp_path):
    for location in ("s3a://lake/dq_results", "dq.results", None):
        with local_commit_lock(location), local_commit_lock(location):  # no-op: would deadlock otherwise
            pass
    table, ready = str(tmp_path / "t"), tmp_path / "holding"
    script = HOLDER.replace("time.sleep(0.3)", f"open({str(ready)!r}, 'w').close(); time.sleep(3600)")
    holder = subprocess.Popen([sys.executable, "-c", script, table, "/dev/null", "0"])
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():  # it holds the lock now
            assert holder.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        holder.kill()
        holder.wait(timeout=30)
        # Released by the holder's death: a non-blocking attempt on the same lock file succeeds at once.
        name = hashlib.sha256(local_table_path(table).encode("utf-8")).hexdigest()[:40] + ".lock"
        fd = os.open(os.path.join(tempfile.gettempdir(), LOCK_DIR_NAME, name), os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError if still held
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        if holder.poll() is None:
            holder.kill()
    assert not Path(table).exists()
