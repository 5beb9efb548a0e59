"""A class-data-sharing (CDS) archive for short Spark drivers — plain Python, no pyspark.

A check task's driver JVM is short-lived: on a small partition most of its seconds go to loading
and verifying the same ~20,000 classes (Spark, Delta, Parquet, Janino) that every run loads. Java's
class-data sharing maps them from an archive instead. The archive is built once per machine
(``dq-contracts jvm-archive build``, run by ``./dev setup`` and the Docker image) by running the
real contract job on a tiny generated table under ``-XX:ArchiveClassesAtExit``; afterwards every
driver started on this machine — the operator's ``spark-submit`` in local and client mode, and the
in-process sessions of the CLI — gets ``-XX:SharedArchiveFile=<archive>``.

Safe by construction:

* The archive's file name is a hash of everything it depends on (the ``java`` binary and its
  ``libjvm``, the Spark jars, the Delta jars — each by path, size and modification time, which is
  what Java itself checks), so an upgraded JDK or Spark, or the same Spark installed again into a
  fresh virtualenv, simply finds no archive and runs as before; there is no stale archive to trip over.
* A build keeps the newest few archives of the folder and removes older ones (each is ~190 MB; a
  machine whose virtualenv is rebuilt for every CI run would otherwise collect one per run).
* Java itself checks the archive when it maps it (``-Xshare:auto``, the default); one that does
  not fit is ignored with a warning, never a failure.
* Nothing is built on a task's path: no archive, no option. The build writes a temporary file and
  renames it into place under a lock, so concurrent builds and readers never see half a file.
* ``$DQ_CONTRACTS_JVM_ARCHIVE=off`` turns it off; ``=PATH`` uses that archive file instead.

Example::

    dq-contracts jvm-archive build          # once per machine (about a minute)
    dq-contracts jvm-archive path           # the archive the next driver will map
"""

from __future__ import annotations

import datetime as dt
import glob
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from airflow_dq_contracts.runspec import RunSpec
from airflow_dq_contracts.runtime import jars, spark_config
from airflow_dq_contracts.timeutil import utcnow

ARCHIVE_ENV = "DQ_CONTRACTS_JVM_ARCHIVE"
OFF_VALUES = {"off", "0", "false", "no", "none"}
OPTION_PREFIX = "-XX:SharedArchiveFile="
DRIVER_OPTIONS_KEY = "spark.driver.extraJavaOptions"
BUILD_TIMEOUT_SECONDS = 900.0


class ArchiveError(RuntimeError):
    """The archive could not be built (the reason is in the message)."""


def _java_binary() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    if candidate is None or not candidate.exists():
        found = shutil.which("java")
        candidate = Path(found) if found else None
    return candidate.resolve() if candidate is not None else None


def spark_jars_dir() -> Path | None:
    """The ``jars/`` folder of the Spark that ``spark-submit`` runs (``$SPARK_HOME`` or the pyspark wheel)."""
    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home) / "jars"
    spec = importlib.util.find_spec("pyspark")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "jars"
    return folder if folder.is_dir() else None


def _fingerprint(path: Path) -> str:
    stat = path.stat()
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


def archive_key(delta_jars: list[str] | None = None) -> str | None:
    """A short hash of what the archive depends on; ``None`` when Java or Spark is not found."""
    java = _java_binary()
    spark_jars = spark_jars_dir()
    if java is None or spark_jars is None:
        return None
    parts = [_fingerprint(java)]
    for libjvm in sorted(glob.glob(str(java.parent.parent / "lib" / "server" / "libjvm.*"))):
        parts.append(_fingerprint(Path(libjvm)))
    # Java refuses an archive when any jar it was built from has another size or modification time
    # (a reinstall of the same version changes the times): the key follows the same facts.
    parts += sorted(_fingerprint_or_name(Path(p)) for p in glob.glob(str(spark_jars / "*.jar")))
    parts.append(str(spark_jars))
    if delta_jars is None:
        delta_jars = [str(p) for p in _delta_jars_if_present()]
    parts += sorted(_fingerprint_or_name(Path(p)) for p in delta_jars)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _fingerprint_or_name(path: Path) -> str:
    try:
        return _fingerprint(path)
    except OSError:  # not there (yet): its name still tells versions apart
        return str(path)


def _delta_jars_if_present() -> list[Path]:
    """Delta's jars as a submission would use them, without resolving anything."""
    offline = spark_config.offline_jars()
    if offline:
        return [Path(p) for p in offline]
    return jars.complete_jars(jars.planned_delta_folder()) or []


def default_archive_dir() -> Path:
    """Beside the jars cache: ``~/.cache/airflow-dq-contracts/jvm-archive``."""
    return jars.default_jars_dir().parent / "jvm-archive"


def planned_archive() -> Path | None:
    """The archive file this machine's drivers would map (it may not exist yet); ``None`` when off."""
    configured = os.environ.get(ARCHIVE_ENV, "").strip()
    if configured.lower() in OFF_VALUES:
        return None
    if configured:
        return Path(configured)
    key = archive_key()
    return None if key is None else default_archive_dir() / f"dq-contracts-{key}.jsa"


KEEP_ARCHIVES = 3


def prune(folder: Path, keep: int = KEEP_ARCHIVES) -> list[Path]:
    """Remove all but the ``keep`` newest archives of ``folder`` (and their lock files); returns the removed.

    An older archive belongs to a Java/Spark/Delta that is gone or was reinstalled (its key no longer
    matches); if some other installation on this machine still used it, its drivers simply start
    without one until its next ``jvm-archive build``. A driver that has it mapped keeps its mapping.
    """
    archives = []
    for path in folder.glob("dq-contracts-*.jsa"):
        try:
            archives.append((path.stat().st_mtime, path))
        except OSError:
            continue
    archives.sort(reverse=True)
    removed = []
    for _, path in archives[keep:]:
        try:
            path.unlink()
        except OSError:
            continue
        (folder / f".{path.name}.lock").unlink(missing_ok=True)
        removed.append(path)
    return removed


def _built(archive: Path) -> bool:
    return archive.is_file() and archive.stat().st_size > 0


def java_option() -> str | None:
    """``-XX:SharedArchiveFile=…`` when an archive for this machine exists, else ``None``.

    >>> java_option() is None or java_option().startswith("-XX:SharedArchiveFile=")
    True
    """
    try:
        archive = planned_archive()
    except OSError:  # a vanished file between glob and stat: just no archive this time
        return None
    if archive is None or not _built(archive):
        return None
    return OPTION_PREFIX + str(archive)


def with_archive(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with the archive option added to the driver's Java options (when there is an archive).

    The user's own driver options are kept; a user who chose a class-data-sharing setting
    (``-XX:SharedArchiveFile``, ``-Xshare``) is left alone.

    >>> with_archive({DRIVER_OPTIONS_KEY: "-Xshare:off"})[DRIVER_OPTIONS_KEY]
    '-Xshare:off'
    """
    current = conf.get(DRIVER_OPTIONS_KEY, "")
    if "SharedArchiveFile" in current or "-Xshare" in current or "ArchiveClassesAtExit" in current:
        return conf
    option = java_option()
    if option is None:
        return conf
    out = dict(conf)
    out[DRIVER_OPTIONS_KEY] = f"{option} {current}".strip()
    return out


# --------------------------------------------------------------------------------------- build

# A small contract that walks the job's code paths: the shared scan (counts, stats, percentile,
# patterns, lengths), grouped passes, freshness, quarantine and valid writes, the results write.
_WARMUP_CONTRACT = """\
name: jvm_warmup
version: 1.0.0
dataset: {table: warmup.orders}
sla: {freshness_hours: 48, timestamp_column: created_at}
columns:
  - name: order_id
    type: long
    nullable: false
    unique: true
  - name: status
    type: string
    allowed_values: [pending, shipped, delivered]
    checks:
      - {name: c1, type: cardinality, max: 10, severity: P3}
  - name: amount
    type: double
    checks:
      - {name: c2, type: min, min: 0, severity: P1}
      - {name: c3, type: mean, between: [0, 1000], severity: P3}
      - {name: c4, type: percentile, percentile: 0.5, between: [0, 1000], severity: P3}
      - {name: c5, type: stddev, max: 5000, severity: P3}
  - name: email
    type: string
    checks:
      - {name: c6, type: pattern, format: email, severity: P1}
      - {name: c7, type: max_length, max: 254, severity: P3}
  - name: created_at
    type: timestamp
  - name: order_date
    type: date
checks:
  - {name: c8, type: num_rows, between: [1, 1000], severity: P0}
  - {name: c9, type: duplicates, columns: [order_id, status], max: 0, severity: P2}
"""


def _write_warmup_input(path: Path, now: dt.datetime) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    rows = 40
    statuses = ["pending", "shipped", "delivered", "lost"]  # "lost" rows are set aside
    table = pa.table(
        {
            "order_id": pa.array(range(1, rows + 1), pa.int64()),
            "status": [statuses[i % 4] for i in range(rows)],
            "amount": [float(i % 7) * 10.5 - (20.0 if i % 9 == 0 else 0.0) for i in range(rows)],
            "email": [f"user{i}@example.org" if i % 5 else "not-an-email" for i in range(rows)],
            "created_at": pa.array([now - dt.timedelta(minutes=i) for i in range(rows)], pa.timestamp("us", tz="UTC")),
            "order_date": pa.array([now.date()] * rows, pa.date32()),
        }
    )
    write_deltalake(str(path), table)


def build(force: bool = False, timeout: float = BUILD_TIMEOUT_SECONDS, log: Callable[[str], None] = print) -> Path:
    """Build this machine's archive (once; instant when it exists). Returns its path.

    Runs the packaged contract job with ``spark-submit`` on a tiny table, as the operator would,
    under ``-XX:ArchiveClassesAtExit``. Raises :class:`ArchiveError` with the job's output tail.
    """
    # First the Delta jars (resolved if needed, under their own lock): the archive's name depends on
    # them, so a name computed before a first resolution would be one no driver ever looks up.
    delta = [str(p) for p in jars.delta_jars()]
    archive = planned_archive()
    if archive is None:
        raise ArchiveError(f"the archive is off (${ARCHIVE_ENV}) or Java/Spark were not found")
    if not force and _built(archive):
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    with jars.exclusive_lock(archive.parent / f".{archive.name}.lock", deadline, "the JVM archive"):
        if not force and _built(archive):
            return archive  # another process built it while we waited
        # spark-submit finds its Spark through the ``python3`` on PATH: make it this interpreter's.
        search_path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
        spark_home = os.environ.get("SPARK_HOME")
        spark_submit = (
            str(Path(spark_home) / "bin" / "spark-submit")
            if spark_home
            else shutil.which("spark-submit", path=search_path)
        )
        if not spark_submit:
            raise ArchiveError("spark-submit not found (install pyspark or set SPARK_HOME)")
        with tempfile.TemporaryDirectory(prefix="dq-jvm-archive-") as work:
            root = Path(work)
            now = utcnow().replace(microsecond=0)
            _write_warmup_input(root / "input", now)
            staging = archive.parent / f".{archive.name}.{os.getpid()}.tmp"
            staging.unlink(missing_ok=True)
            conf = {
                **spark_config.default_spark_conf(local=True),
                "spark.log.level": "ERROR",
                "spark.jars": ",".join(delta),
                "spark.pyspark.driver.python": sys.executable,
                "spark.pyspark.python": sys.executable,
                DRIVER_OPTIONS_KEY: f"-XX:ArchiveClassesAtExit={staging}",
            }
            job = Path(__file__).resolve().parent.parent / "jobs" / "run_contract.py"
            command = [spark_submit, "--master", "local[1]"]
            for key, value in conf.items():
                command += ["--conf", f"{key}={value}"]
            # The run the operator would submit, as the operator submits it: one spec argument.
            spec = RunSpec(
                contract_text=_WARMUP_CONTRACT,
                contract_origin="jvm_warmup.yaml",
                input_path=str(root / "input"),
                input_format="delta",
                reference_time=now,
                results_table=str(root / "results"),
                quarantine_table=str(root / "quarantine"),
                valid_table=str(root / "valid"),
            )
            command += [str(job), *spec.job_arguments().arguments]
            env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_SUBMIT_ARGS",)}
            env[ARCHIVE_ENV] = "off"
            env["PATH"] = search_path
            log(f"[dq-contracts] building the JVM class-data archive {archive} (runs the job once; about a minute)")
            began = time.monotonic()
            try:
                proc = subprocess.run(
                    command, env=env, capture_output=True, text=True, timeout=max(1.0, deadline - time.monotonic())
                )
            except subprocess.TimeoutExpired:
                staging.unlink(missing_ok=True)
                raise ArchiveError(f"the warm-up job did not finish within {timeout:.0f} s") from None
            if proc.returncode != 0 or "DQ_CONTRACTS_DONE" not in proc.stdout or not staging.is_file():
                staging.unlink(missing_ok=True)
                said = [line for line in proc.stdout.splitlines() if line.startswith("DQ_CONTRACTS_ERROR")]
                tail = "\n".join(line for line in proc.stderr.splitlines() if "[cds]" not in line)[-3000:]
                raise ArchiveError(
                    f"the warm-up job failed (exit {proc.returncode}):\n" + ("\n".join(said) if said else tail)
                )
            os.replace(staging, archive)
            log(
                f"[dq-contracts] JVM archive ready: {archive.stat().st_size / 1e6:.0f} MB in "
                f"{time.monotonic() - began:.0f} s"
            )
    if not os.environ.get(ARCHIVE_ENV, "").strip():  # only the machine's own folder, never a chosen file's
        for old in prune(archive.parent):
            log(f"[dq-contracts] removed an older JVM archive {old}")
    return archive
