"""Delta's jars (and any other Maven packages) resolved once per machine into a stable local folder.

Plain Python, no pyspark: the operator's hook, the CLI, :func:`engine.session.get_spark` and the
test fixtures all come here before they start a JVM, and then hand Spark *local jar files*
(``--jars`` / ``spark.jars``), never ``--packages``.

Why not ``--packages``: Spark resolves it with Ivy into one shared cache (``~/.ivy2.5.2``), and Ivy
is not safe for concurrent writers. On a fresh worker (an empty cache), several contract tasks
starting at once each download the same jars into the same files and read each other's half-written
ones: every task fails with ``[download failed: …zstd-jni.jar, …delta-kernel-api.jar]``.

What happens instead, for a set of Maven coordinates (usually just :func:`spark_config.delta_package`):

1. Its folder is ``<jars dir>/<readable name>-<hash of the coordinates>/``, where the jars dir is
   ``--dir`` / ``$DQ_CONTRACTS_JARS_DIR`` / ``$XDG_CACHE_HOME/airflow-dq-contracts/jars`` (default
   ``~/.cache/airflow-dq-contracts/jars``). A folder that exists is complete: it is only ever created
   by an atomic rename of a staging folder that already holds every jar and a ``.complete`` marker.
2. When it is missing, the process takes an exclusive ``fcntl.flock`` on ``<jars dir>/.<name>.lock``
   (waiting up to ``timeout`` seconds for another process that resolves the same coordinates), looks
   again (the other process has usually finished it meanwhile), and otherwise runs Spark's own Ivy
   (``ivy-*.jar`` of the pyspark wheel, no Spark JVM) once, into a staging folder, under a second lock
   on the Ivy cache itself, so no two of our resolutions ever write one Ivy cache at the same time.
   Each lock file is also the journal of its contention: a process that had to wait for the lock
   appends ``<UTC time> pid <pid> waited <seconds> s for the lock (<what>)`` once it holds it, and the
   process that ran Ivy appends ``<UTC time> pid <pid> resolved <what> with Ivy in <seconds> s``; both
   lines are logged (INFO, logger ``airflow_dq_contracts.runtime.jars``) too.
3. A failure (Maven Central out of reach, a coordinate that does not exist) raises one
   :class:`JarResolutionError` that names the offline route: ``dq-contracts jars fetch`` on a
   connected machine, then copy the folder, or point ``$DQ_CONTRACTS_DELTA_JARS`` at a folder of jars.

``$DQ_CONTRACTS_DELTA_JARS`` (a folder of pre-resolved jars, e.g. baked into an image) skips all of
this for Delta.

Example::

    from airflow_dq_contracts.runtime import jars
    paths = jars.delta_jars()               # resolved on first use, then instant
    conf = {"spark.jars": ",".join(paths)}
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from airflow_dq_contracts.runtime import spark_config

JARS_DIR_ENV = "DQ_CONTRACTS_JARS_DIR"
COMPLETE_MARKER = ".complete"
#: How long a process waits for another one that resolves the same jars, and how long one Ivy run may take.
RESOLVE_TIMEOUT_SECONDS = 900.0
# Seconds between two tries of a held lock: short, since the lock is released when resolution ends.
_LOCK_POLL_SECONDS = 0.2
_COORDINATE = re.compile(r"^[A-Za-z0-9_.\-]+:[A-Za-z0-9_.\-]+:[A-Za-z0-9_.\-+]+$")

log = logging.getLogger(__name__)


class JarResolutionError(RuntimeError):
    """Jars could not be resolved (or a given jar folder is unusable); the message says what to do.

    Example::

        try:
            jars = delta_jars()
        except JarResolutionError as exc:
            print(exc)   # … run `dq-contracts jars fetch` on a machine that reaches Maven Central …
    """


def offline_route() -> str:
    """The sentence every resolution failure ends with: how to get the jars without Maven Central.

    >>> "dq-contracts jars fetch" in offline_route() and spark_config.DELTA_JARS_ENV in offline_route()
    True
    """
    return (
        "Offline route: run `dq-contracts jars fetch --dir DIR` on a machine that reaches Maven Central "
        f"and copy DIR to this machine (then set ${JARS_DIR_ENV}=DIR), or point ${spark_config.DELTA_JARS_ENV} "
        "at a folder holding the Delta jars."
    )


def default_jars_dir() -> Path:
    """Where resolved jars live: ``$DQ_CONTRACTS_JARS_DIR``, else the user's cache dir.

    Example::

        default_jars_dir()   # PosixPath('/home/airflow/.cache/airflow-dq-contracts/jars')
    """
    configured = os.environ.get(JARS_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "airflow-dq-contracts" / "jars"


def default_ivy_home() -> Path:
    """Spark 4's default Ivy home (``spark.jars.ivy`` unset): ``~/.ivy2.5.2``."""
    return Path(os.path.expanduser("~")) / ".ivy2.5.2"


def _normalise(coordinates: Sequence[str] | str) -> list[str]:
    items = [coordinates] if isinstance(coordinates, str) else list(coordinates)
    wanted = sorted({c.strip() for item in items for c in str(item).split(",") if c.strip()})
    bad = [c for c in wanted if not _COORDINATE.match(c)]
    if bad:
        raise JarResolutionError(f"packages must be Maven coordinates group:artifact:version, got {bad}")
    if not wanted:
        raise JarResolutionError("no Maven coordinates to resolve")
    return wanted


def folder_name(coordinates: Sequence[str] | str, intransitive: Sequence[str] = ()) -> str:
    """The folder name of a set of coordinates: readable, and unique through a hash of all of them
    (the ``intransitive`` ones, resolved without their dependencies, count as different).

    >>> folder_name("io.delta:delta-spark_4.1_2.13:4.4.0")
    'io.delta_delta-spark_4.1_2.13-4.4.0-0a039bb2bb52'
    """
    wanted = _normalise(coordinates)
    group, artifact, version = wanted[0].split(":")
    more = f"+{len(wanted) - 1}" if len(wanted) > 1 else ""
    alone = set(_normalise(intransitive)) if intransitive else set()
    key = "\n".join(f"{c}!" if c in alone else c for c in wanted)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return f"{group}_{artifact}-{version}{more}-{digest}"


def complete_jars(folder: Path) -> list[Path] | None:
    """The jars of a complete resolution folder; None when the folder is missing or incomplete."""
    if not (folder / COMPLETE_MARKER).is_file():
        return None
    found = sorted(folder.glob("*.jar"))
    return found or None


@contextlib.contextmanager
def exclusive_lock(lock_path: Path, deadline: float, what: str) -> Iterator[Callable[[str], None]]:
    """Hold an exclusive ``flock`` on ``lock_path``; wait for it until ``deadline`` (monotonic).

    A wait is journaled in the lock file (and logged) once the lock is held; the holder may journal more
    with the callable it gets (:func:`resolve` says that it ran Ivy). The journal's lines::

        2026-01-02T03:04:05.678901+00:00 pid 4242 waited 12.3 s for the lock (io.delta:delta-spark_4.1_2.13:4.4.0)
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)

    def note(event: str) -> None:
        """Append ``<UTC time> pid <pid> <event>`` to the lock file's journal (under the lock) and log it."""
        line = f"{dt.datetime.now(dt.timezone.utc).isoformat()} pid {os.getpid()} {event}"
        log.info("%s (%s)", line, lock_path)
        with contextlib.suppress(OSError):  # a read-only lock file: the log line says it
            os.lseek(fd, 0, os.SEEK_END)
            os.write(fd, (line + "\n").encode("utf-8"))

    try:
        began: float | None = None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                began = time.monotonic() if began is None else began
                if time.monotonic() >= deadline:
                    raise JarResolutionError(
                        f"gave up waiting for another process resolving {what} (lock {lock_path} held for too "
                        "long); if no such process runs, the lock's holder hangs: stop it and try again"
                    ) from None
                time.sleep(_LOCK_POLL_SECONDS)
        if began is not None:
            note(f"waited {time.monotonic() - began:.1f} s for the lock ({what})")
        yield note
    finally:
        os.close(fd)  # closing the descriptor releases the lock, also after a crash


def resolve(
    coordinates: Sequence[str] | str,
    jars_dir: Path | str | None = None,
    *,
    ivy_home: Path | str | None = None,
    ivy_settings: Path | str | None = None,
    timeout: float = RESOLVE_TIMEOUT_SECONDS,
    intransitive: Sequence[str] = (),
) -> list[Path]:
    """Resolve Maven coordinates with their runtime dependencies into local jars, once per machine.

    Returns the jars of ``<jars_dir>/<folder_name(coordinates)>/`` (see the module docstring for
    the locking). ``ivy_home`` is the Ivy cache to fill (``spark.jars.ivy``; default ``~/.ivy2.5.2``,
    so jars an earlier ``--packages`` run downloaded are reused offline); ``ivy_settings`` an Ivy
    settings file (``spark.jars.ivySettings``) for a private repository. ``scala-library`` is left
    out, as Spark's own resolution leaves it out. Coordinates also listed in ``intransitive`` are
    resolved without their dependencies (``hadoop-aws`` without the 600 MB AWS SDK bundle).

    Example::

        jars = resolve(["io.delta:delta-spark_4.1_2.13:4.4.0"], "/opt/dq-contracts/jars")
    """
    wanted = _normalise(coordinates)
    alone = sorted(set(_normalise(intransitive)) & set(wanted)) if intransitive else []
    root = Path(jars_dir).expanduser() if jars_dir is not None else default_jars_dir()
    name = folder_name(wanted, alone)
    folder = root / name
    found = complete_jars(folder)
    if found:
        return found
    what = ", ".join(wanted)
    deadline = time.monotonic() + timeout
    ivy_root = Path(ivy_home).expanduser() if ivy_home else default_ivy_home()
    with exclusive_lock(root / f".{name}.lock", deadline, what) as note:
        found = complete_jars(folder)  # the process we waited for has usually made it meanwhile
        if found:
            return found
        # Two resolutions of different coordinates into one Ivy cache are as unsafe as two of the same.
        with exclusive_lock(ivy_root / ".airflow-dq-contracts.lock", deadline, what):
            staging = Path(tempfile.mkdtemp(prefix=f".{name}.staging-", dir=root))
            began = time.monotonic()
            try:
                jars = _run_ivy(wanted, staging, ivy_root, ivy_settings, max(1.0, deadline - time.monotonic()), alone)
                for jar in jars.glob("org.scala-lang_scala-library-*.jar"):
                    jar.unlink()  # Spark ships its own Scala library
                (jars / COMPLETE_MARKER).write_text("\n".join(sorted(p.name for p in jars.glob("*.jar"))) + "\n")
                if folder.exists():  # not ours (made by hand, or a copy cut short): never half-used
                    shutil.rmtree(folder)
                os.rename(jars, folder)  # atomic: readers see every jar or no folder
                note(f"resolved {what} with Ivy in {time.monotonic() - began:.1f} s")
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    found = complete_jars(folder)
    if not found:
        raise JarResolutionError(f"resolving {what} left no jars in {folder}. {offline_route()}")
    return found


def _ivy_jar() -> Path:
    """Spark's own Ivy jar: the pyspark wheel's ``jars/`` (found without importing pyspark), else $SPARK_HOME's."""
    import importlib.util

    folders: list[Path] = []
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.submodule_search_locations:
        folders += [Path(location) / "jars" for location in spec.submodule_search_locations]
    if os.environ.get("SPARK_HOME"):
        folders.append(Path(os.environ["SPARK_HOME"]) / "jars")
    for folder in folders:
        found = sorted(folder.glob("ivy-*.jar"))
        if found:
            return found[-1]
    raise JarResolutionError(
        f"cannot resolve jars: no ivy-*.jar in {', '.join(map(str, folders)) or 'pyspark or $SPARK_HOME'}. "
        + offline_route()
    )


def _run_ivy(
    wanted: list[str],
    staging: Path,
    ivy_root: Path,
    settings: Path | str | None,
    timeout: float,
    intransitive: Sequence[str] = (),
) -> Path:
    """One Ivy run retrieving ``wanted`` and their runtime dependencies into ``staging/jars``."""
    digest = hashlib.sha256("\n".join([*wanted, *(f"{c}!" for c in intransitive)]).encode()).hexdigest()[:16]
    dependencies = "\n".join(
        f'    <dependency org="{g}" name="{a}" rev="{v}" conf="default->default(runtime)"'
        + (' transitive="false"' if f"{g}:{a}:{v}" in intransitive else "")
        + "/>"
        for g, a, v in (c.split(":") for c in wanted)
    )
    # A module name of its own per coordinate set: Ivy keeps resolution reports per module in its cache.
    (staging / "ivy.xml").write_text(
        '<ivy-module version="2.0">\n'
        f'  <info organisation="airflow-dq-contracts" module="spark-jars-{digest}" revision="1"/>\n'
        '  <configurations><conf name="default"/></configurations>\n'
        f"  <dependencies>\n{dependencies}\n  </dependencies>\n</ivy-module>\n"
    )
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    jars = staging / "jars"
    command = [
        java,
        "-jar",
        str(_ivy_jar()),
        "-ivy",
        str(staging / "ivy.xml"),
        "-cache",
        str(ivy_root / "cache"),
        "-confs",
        "default",
        "-retrieve",
        f"{jars}/[organisation]_[artifact]-[revision](-[classifier]).[ext]",
    ]
    if settings:
        command[3:3] = ["-settings", str(settings)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JarResolutionError(f"cannot run Ivy to resolve {', '.join(wanted)}: {exc}. {offline_route()}") from None
    if done.returncode != 0 or not any(jars.glob("*.jar")):
        output = (done.stdout + done.stderr).strip().splitlines()
        # Ivy's own summary lines ("unresolved dependency", "download failed", "Server access error") say why.
        reasons = [
            line.strip()
            for line in output
            if any(
                key in line
                for key in (
                    "UNRESOLVED",
                    "unresolved dependency",
                    "download failed",
                    "Server access error",
                    "UnknownHost",
                    "Connection refused",
                    "timed out",
                    "not found",
                )
            )
        ]
        detail = "\n".join((reasons or output)[-8:])
        raise JarResolutionError(
            f"could not resolve {', '.join(wanted)} into jars (Maven Central out of reach, or a coordinate "
            f"that does not exist):\n{detail}\n{offline_route()}"
        )
    return jars


def jars_in(folder: Path | str) -> list[Path]:
    """The ``*.jar`` files of a folder of pre-resolved jars (``$DQ_CONTRACTS_DELTA_JARS``)."""
    return sorted(Path(folder).expanduser().glob("*.jar"))


def delta_jars(
    jars_dir: Path | str | None = None,
    *,
    ivy_home: Path | str | None = None,
    ivy_settings: Path | str | None = None,
    spark_version: str | None = None,
) -> list[str]:
    """Delta's jars as local paths: ``$DQ_CONTRACTS_DELTA_JARS`` when set, else :func:`resolve` d once.

    Example::

        conf = {"spark.jars": ",".join(delta_jars())}
    """
    offline = os.environ.get(spark_config.DELTA_JARS_ENV)
    if offline:
        found = jars_in(offline)
        if not found:
            raise JarResolutionError(
                f"${spark_config.DELTA_JARS_ENV} is {offline!r}, but no *.jar is there. {offline_route()}"
            )
        return [str(jar) for jar in found]
    coordinate = spark_config.delta_package(spark_version)
    return [str(jar) for jar in resolve([coordinate], jars_dir, ivy_home=ivy_home, ivy_settings=ivy_settings)]


def planned_delta_folder(jars_dir: Path | str | None = None, spark_version: str | None = None) -> Path:
    """The folder :func:`delta_jars` uses (or will fill): ``$DQ_CONTRACTS_DELTA_JARS``, else the resolution folder.

    Example::

        planned_delta_folder()   # …/airflow-dq-contracts/jars/io.delta_delta-spark_4.1_2.13-4.4.0-0a039bb2bb52
    """
    offline = os.environ.get(spark_config.DELTA_JARS_ENV)
    if offline:
        return Path(offline).expanduser()
    root = Path(jars_dir).expanduser() if jars_dir is not None else default_jars_dir()
    return root / folder_name([spark_config.delta_package(spark_version)])


def delta_dependency_conf(ivy_home: str | None = None, ivy_settings: str | None = None) -> dict[str, str]:
    """``spark.jars`` with Delta's local jars (``$DQ_CONTRACTS_DELTA_JARS``, else resolved once).

    ``ivy_home`` / ``ivy_settings`` are the session's ``spark.jars.ivy`` / ``spark.jars.ivySettings``.

    Example::

        conf = {**spark_config.default_spark_conf(), **delta_dependency_conf()}   # {'spark.jars': '/…/delta-spark….jar,…'}
    """
    return {"spark.jars": ",".join(delta_jars(ivy_home=ivy_home, ivy_settings=ivy_settings))}


# --------------------------------------------------------------------------------------------
# The S3 filesystem (s3a://) for Spark

#: A folder of pre-resolved S3 filesystem jars (like ``$DQ_CONTRACTS_DELTA_JARS`` for Delta).
S3_JARS_ENV = "DQ_CONTRACTS_S3_JARS"
#: Hadoop release → the AWS SDK v2 release its ``hadoop-aws`` was built and tested with (its pom's
#: ``software.amazon.awssdk:bundle`` version) — for 3.4.1 two patch releases later, 2.24.8 instead of
#: 2.24.6 (same API): Maven mirrors are known to lack ``s3-transfer-manager`` 2.24.6 (the one this
#: project's CI reaches does), and one unresolvable module fails the whole resolution.
HADOOP_AWS_SDK: dict[str, str] = {"3.4.0": "2.23.19", "3.4.1": "2.24.8", "3.4.2": "2.29.52"}
#: The AWS SDK modules S3A needs, instead of the ~600 MB ``bundle`` (≈ 15 MB with dependencies):
#: the S3 client, its transfer manager (uploads, copies) and STS (assumed-role credentials).
S3_SDK_MODULES = ("s3", "s3-transfer-manager", "sts")
_VERSIONED_JAR = re.compile(r"^(?:[A-Za-z0-9_.\-]+_)?(?P<artifact>[A-Za-z0-9.\-]+?)-\d[\w.\-]*\.jar$")


def _spark_jar_folders() -> list[Path]:
    import importlib.util

    folders: list[Path] = []
    if os.environ.get("SPARK_HOME"):
        folders.append(Path(os.environ["SPARK_HOME"]) / "jars")
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.submodule_search_locations:
        folders += [Path(location) / "jars" for location in spec.submodule_search_locations]
    return [folder for folder in folders if folder.is_dir()]


def installed_hadoop_version() -> str | None:
    """The Hadoop release of the Spark that runs the job (its ``hadoop-client-api-*.jar``), found
    without importing pyspark; None when there is no Spark here."""
    for folder in _spark_jar_folders():
        for jar in sorted(folder.glob("hadoop-client-api-*.jar")):
            found = re.match(r"hadoop-client-api-(\d+\.\d+\.\d+)\.jar$", jar.name)
            if found:
                return found.group(1)
    return None


def s3_packages(hadoop_version: str | None = None) -> tuple[list[str], list[str]]:
    """The Maven coordinates of the ``s3a://`` filesystem for a Hadoop release, and which of them
    are resolved without their dependencies (``hadoop-aws``: its pom pulls the SDK ``bundle``).

    >>> wanted, alone = s3_packages("3.4.2")
    >>> alone, len(wanted)
    (['org.apache.hadoop:hadoop-aws:3.4.2'], 4)
    """
    version = hadoop_version or installed_hadoop_version()
    if version is None:
        raise JarResolutionError(
            "cannot tell which hadoop-aws to use: no Spark here (no hadoop-client-api-*.jar in pyspark or "
            f"$SPARK_HOME). {offline_route()}"
        )
    sdk = HADOOP_AWS_SDK.get(version)
    if sdk is None:
        raise JarResolutionError(
            f"no known AWS SDK release for Hadoop {version} (known: {', '.join(sorted(HADOOP_AWS_SDK))}); "
            f"point ${S3_JARS_ENV} at a folder holding hadoop-aws-{version}.jar and its AWS SDK v2 jars"
        )
    hadoop_aws = f"org.apache.hadoop:hadoop-aws:{version}"
    return [hadoop_aws, *(f"software.amazon.awssdk:{m}:{sdk}" for m in S3_SDK_MODULES)], [hadoop_aws]


def _provided_by_spark(
    jars: Sequence[Path], ours: tuple[str, ...] = ("software.amazon.", "org.apache.hadoop_")
) -> list[Path]:
    """``jars`` less those whose artifact Spark ships already (netty, slf4j, httpclient…): Spark's own
    classes come first on its class path anyway, and a second, older copy is only confusion. Jars whose
    file name starts with one of ``ours`` (the resolved packages themselves) are always kept."""
    provided = set()
    for folder in _spark_jar_folders():
        for jar in folder.glob("*.jar"):
            found = _VERSIONED_JAR.match(jar.name)
            if found:
                provided.add(found.group("artifact"))
    if "jcl-over-slf4j" in provided:
        provided.add("commons-logging")  # the same org.apache.commons.logging classes
    kept = []
    for jar in jars:
        found = _VERSIONED_JAR.match(jar.name)
        if jar.name.startswith(ours) or found is None or found.group("artifact") not in provided:
            kept.append(jar)
    return kept


def s3_jars(
    jars_dir: Path | str | None = None,
    *,
    ivy_home: Path | str | None = None,
    ivy_settings: Path | str | None = None,
    hadoop_version: str | None = None,
) -> list[str]:
    """The ``s3a://`` filesystem's jars as local paths: ``$DQ_CONTRACTS_S3_JARS`` when set, else
    ``hadoop-aws`` (matching Spark's Hadoop) with the AWS SDK v2 modules it needs, :func:`resolve` d once
    (same lock, same cache, offline once fetched), less what Spark ships already.

    Example::

        conf = {"spark.jars": ",".join(delta_jars() + s3_jars())}
    """
    offline = os.environ.get(S3_JARS_ENV)
    if offline:
        found = jars_in(offline)
        if not found:
            raise JarResolutionError(f"${S3_JARS_ENV} is {offline!r}, but no *.jar is there. {offline_route()}")
        return [str(jar) for jar in found]
    wanted, alone = s3_packages(hadoop_version)
    resolved = resolve(wanted, jars_dir, ivy_home=ivy_home, ivy_settings=ivy_settings, intransitive=alone)
    return [str(jar) for jar in _provided_by_spark(resolved)]


def planned_s3_folder(jars_dir: Path | str | None = None, hadoop_version: str | None = None) -> Path:
    """The folder :func:`s3_jars` uses (or will fill)."""
    offline = os.environ.get(S3_JARS_ENV)
    if offline:
        return Path(offline).expanduser()
    wanted, alone = s3_packages(hadoop_version)
    root = Path(jars_dir).expanduser() if jars_dir is not None else default_jars_dir()
    return root / folder_name(wanted, alone)


# --------------------------------------------------------------------------------------------
# Spark's Kafka source (``format: kafka`` datasets)

#: A folder of pre-resolved jars of Spark's Kafka source (like ``$DQ_CONTRACTS_DELTA_JARS`` for Delta).
KAFKA_JARS_ENV = "DQ_CONTRACTS_KAFKA_JARS"
#: Spark's Kafka source and the token provider it loads for delegation tokens (both at Spark's version).
KAFKA_ARTIFACTS = ("spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13")


_KAFKA_OURS = ("org.apache.spark_spark-sql-kafka-", "org.apache.spark_spark-token-provider-kafka-", "org.apache.kafka_")


def kafka_packages(spark_version: str | None = None) -> list[str]:
    """The Maven coordinates of Spark's Kafka source for a Spark release (default: the installed one).

    >>> kafka_packages("4.1.1")
    ['org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1', 'org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.1.1']
    """
    version = spark_version or spark_config.installed_spark_version() or spark_config.SPARK_VERSION
    return [f"org.apache.spark:{artifact}:{version}" for artifact in KAFKA_ARTIFACTS]


def kafka_jars(
    jars_dir: Path | str | None = None,
    *,
    ivy_home: Path | str | None = None,
    ivy_settings: Path | str | None = None,
    spark_version: str | None = None,
) -> list[str]:
    """Spark's Kafka source as local jars: ``$DQ_CONTRACTS_KAFKA_JARS`` when set, else :func:`kafka_packages`
    with their runtime dependencies (``kafka-clients``…), :func:`resolve` d once (same lock, same cache,
    offline once fetched), less what Spark ships already.

    Example::

        conf = {"spark.jars": ",".join(delta_jars() + kafka_jars())}
    """
    offline = os.environ.get(KAFKA_JARS_ENV)
    if offline:
        found = jars_in(offline)
        if not found:
            raise JarResolutionError(f"${KAFKA_JARS_ENV} is {offline!r}, but no *.jar is there. {offline_route()}")
        return [str(jar) for jar in found]
    wanted = kafka_packages(spark_version)
    resolved = resolve(wanted, jars_dir, ivy_home=ivy_home, ivy_settings=ivy_settings)
    return [str(jar) for jar in _provided_by_spark(resolved, _KAFKA_OURS)]


def planned_kafka_folder(jars_dir: Path | str | None = None, spark_version: str | None = None) -> Path:
    """The folder :func:`kafka_jars` uses (or will fill)."""
    offline = os.environ.get(KAFKA_JARS_ENV)
    if offline:
        return Path(offline).expanduser()
    root = Path(jars_dir).expanduser() if jars_dir is not None else default_jars_dir()
    return root / folder_name(kafka_packages(spark_version))
