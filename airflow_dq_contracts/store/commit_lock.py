"""One machine-wide lock per local-filesystem Delta table, held around every commit we make to it.

Delta's put-if-absent of ``_delta_log/<version>.json`` is atomic on S3 (conditional writes, through
delta-rs), HDFS, ADLS and GCS, but not on a local filesystem through Hadoop: Spark's Delta checks
that the version file is absent and then renames its temporary file onto it — two steps. Two drivers
committing the same version inside that window both "win": the second rename replaces the first
commit (lost), and Hadoop's checksum file of one no longer matches the data of the other, so every
later Spark read of the table fails with ``ChecksumException``. Six check tasks on one worker
creating and appending to the same new quarantine table hit it on a loaded machine.

So every commit this package makes to a table on the local filesystem — Spark's writes, creations
and deletes, and delta-rs's commits (atomic themselves, but a Spark writer's rename could land on
them) — holds an exclusive ``flock`` on a lock file keyed by the table's real path, in the machine's
temporary folder (every driver of one machine sees the same one; a local table is only ever shared
on one machine). A process that dies releases its lock. Any other location (object stores, HDFS, a
catalog name) takes no lock: their stores are atomic. Plain Python: no pyspark, no Airflow.

Example::

    with local_commit_lock("/wh/dq_quarantine/orders"):
        df.write.format("delta").mode("append").save("/wh/dq_quarantine/orders")
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from urllib.parse import unquote, urlparse

__all__ = ["LOCK_DIR_NAME", "local_commit_lock", "local_table_path"]

log = logging.getLogger(__name__)

#: The folder (under the machine's temporary folder) holding one lock file per local table.
LOCK_DIR_NAME = "airflow-dq-contracts-commit-locks"
# Waiting longer than this for another commit to the same table is logged (then waited for still).
_SLOW_WAIT_SECONDS = 30.0


def local_table_path(location: str | None) -> str | None:
    """The absolute local path of a table location, or None when it is not on the local filesystem.

    >>> local_table_path("file:///wh/t"), local_table_path("/wh/t/"), local_table_path("s3a://b/t")
    ('/wh/t', '/wh/t', None)
    >>> local_table_path(None), local_table_path("dq.results")
    (None, None)
    """
    if not location:
        return None
    text = location.strip()
    if "://" in text or text.startswith("file:"):
        parsed = urlparse(text)
        if parsed.scheme != "file":
            return None
        text = unquote(parsed.path)
    elif not (text.startswith(("/", "~", ".")) or os.sep in text):
        return None  # a catalog table name (db.table)
    return os.path.realpath(os.path.expanduser(text))


@contextlib.contextmanager
def local_commit_lock(location: str | None) -> Iterator[None]:
    """Hold the lock of the local table at ``location`` (no-op for any other location)."""
    path = local_table_path(location)
    if path is None:
        yield
        return
    folder = os.path.join(tempfile.gettempdir(), LOCK_DIR_NAME)
    os.makedirs(folder, exist_ok=True)
    with contextlib.suppress(OSError):  # shared by every user's drivers on this machine
        os.chmod(folder, 0o1777)
    name = hashlib.sha256(path.encode("utf-8")).hexdigest()[:40] + ".lock"
    fd = os.open(os.path.join(folder, name), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        began = time.monotonic()
        warned = waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = True
                if not warned and time.monotonic() - began > _SLOW_WAIT_SECONDS:
                    log.info("%s: waiting for another commit to this table to finish", path)
                    warned = True
                time.sleep(0.02)
        if waited:  # contention, as the concurrency tests prove it happened
            log.debug("%s: waited %.2f s for another commit to this table", path, time.monotonic() - began)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
