"""Building a SparkSession that can read and write Delta tables."""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from airflow_dq_contracts.runtime import jars, jvm_archive, spark_config
from airflow_dq_contracts.storage import s3 as storage

log = logging.getLogger(__name__)


def get_spark(
    app_name: str = "dq-contracts",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    local_tuning: bool = True,
    s3: bool = False,
    kafka: bool = False,
) -> SparkSession:
    """Return the active SparkSession, or build one with Delta on the classpath.

    Inside ``spark-submit`` a session already exists (its jars and conf come from the command
    line), so it is reused as is; only the user's extra ``conf`` is applied where allowed.
    Otherwise Delta's jars are resolved once per machine (:func:`airflow_dq_contracts.runtime.jars.delta_jars`,
    honouring ``spark.jars.ivy``) and added to ``spark.jars`` (raises
    :class:`~airflow_dq_contracts.runtime.jars.JarResolutionError` when that fails). With ``s3`` (a
    location of the run is on S3) the ``s3a`` filesystem's jars join them
    (:func:`~airflow_dq_contracts.runtime.jars.s3_jars`) and the settings of the standard AWS_*
    environment (:meth:`~airflow_dq_contracts.storage.s3.S3Settings.spark_conf`: endpoint, addressing,
    region — the keys stay in the environment, where the AWS SDK reads them) go under the user's ``conf``.
    With ``kafka`` (a ``format: kafka`` dataset) Spark's Kafka source joins them
    (:func:`~airflow_dq_contracts.runtime.jars.kafka_jars`).

    Example::

        spark = get_spark(master="local[2]")
        spark.range(3).write.format("delta").save("/tmp/t")
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    user = dict(conf or {})
    settings = spark_config.default_spark_conf(local=local_tuning)
    if s3:
        settings.update(storage.S3Settings.from_env().spark_conf())
    settings.update(user)
    if not any(p.strip().startswith("io.delta:delta-spark") for p in user.get("spark.jars.packages", "").split(",")):
        # Local jars resolved once per machine under a lock, never a concurrent Ivy resolve (jars.py).
        delta = jars.delta_dependency_conf(
            ivy_home=user.get("spark.jars.ivy"), ivy_settings=user.get("spark.jars.ivySettings")
        )
        settings["spark.jars"] = ",".join(filter(None, [user.get("spark.jars"), delta["spark.jars"]]))
    if s3:
        s3_jars = jars.s3_jars(ivy_home=user.get("spark.jars.ivy"), ivy_settings=user.get("spark.jars.ivySettings"))
        settings["spark.jars"] = ",".join(filter(None, [settings.get("spark.jars"), *s3_jars]))
    if kafka:
        kafka_jars = jars.kafka_jars(
            ivy_home=user.get("spark.jars.ivy"), ivy_settings=user.get("spark.jars.ivySettings")
        )
        settings["spark.jars"] = ",".join(filter(None, [settings.get("spark.jars"), *kafka_jars]))
    # The driver JVM starts here: map its classes from the machine's archive when one was built.
    settings = jvm_archive.with_archive(settings)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def startup_line(spark: SparkSession, python_started: float, session_started: float) -> str:
    """One progress line saying where a spark-submit job's start-up went (epoch seconds in).

    ``python_started`` is when the driver's Python process began (the job records it at import),
    ``session_started`` when it asked for the session. The driver JVM's own start time comes from
    its ``RuntimeMXBean``: JVM start → Python start is spark-submit's work (class loading, jar
    resolution, launching Python); Python start → session is the SparkContext and Delta set-up.
    The ``jvm_start=`` field is machine-readable for ``benchmarks/task_overhead.py``.

    Example::

        began = time.time()
        spark = get_spark()
        print(startup_line(spark, PROCESS_STARTED, began))
        # session: jvm_start=1763915000.123 jvm→python 3.41 s, python→session 1.02 s, session 2.80 s
    """
    now = time.time()
    try:
        jvm: Any = spark.sparkContext._jvm
        jvm_start = float(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime()) / 1000
    except Exception:  # noqa: BLE001 - Spark Connect: no driver JVM in reach, the client's own start-up
        return (
            f"session: python_start={python_started:.3f} python→session {session_started - python_started:.2f} s, "
            f"connect {now - session_started:.2f} s"
        )
    return (
        f"session: jvm_start={jvm_start:.3f} jvm→python {python_started - jvm_start:.2f} s, "
        f"python→session {session_started - python_started:.2f} s, session {now - session_started:.2f} s"
    )


#: Inputs up to this many bytes on disk (Spark's size estimate of the plan) count as *small*; the
#: Spark conf ``spark.dqcontracts.smallInputBytes`` overrides it (0 turns the tuning off).
SMALL_INPUT_BYTES = 8 * 1024 * 1024
SMALL_INPUT_CONF_KEY = "spark.dqcontracts.smallInputBytes"


#: Delta inputs whose data files total at most this many bytes are read by delta-rs on the driver
#: (``runner._driver_read``); ``spark.dqcontracts.driverReadBytes`` overrides it (0 turns it off).
DRIVER_READ_BYTES = 4 * 1024 * 1024
DRIVER_READ_CONF_KEY = "spark.dqcontracts.driverReadBytes"

#: DataFrames read on the driver → their data files' size on disk: Spark has no size estimate for
#: them (an RDD of Arrow batches counts as huge), so :meth:`SmallRunTuning.decide` looks here first.
DRIVER_READ_SIZES: weakref.WeakKeyDictionary[DataFrame, int] = weakref.WeakKeyDictionary()

#: DataFrames of a Delta source read through Spark Connect → the table's size on disk as Delta's
#: ``DESCRIBE DETAIL`` gives it (the server's metadata: this client may not see the files, and a
#: Connect client has no plan statistics to ask), for :meth:`SmallRunTuning.decide`.
SOURCE_SIZES: weakref.WeakKeyDictionary[DataFrame, int] = weakref.WeakKeyDictionary()

#: On Spark Connect, inputs up to this many bytes on disk are evaluated by Spark's interpreter (no
#: generated code at all); ``spark.dqcontracts.interpretedInputBytes`` overrides it (0 turns it off).
INTERPRETED_INPUT_BYTES = 256 * 1024
INTERPRETED_CONF_KEY = "spark.dqcontracts.interpretedInputBytes"


def driver_read_size(frame: DataFrame) -> int | None:
    """The on-disk size of a DataFrame read on the driver (see :data:`DRIVER_READ_SIZES`), else None.

    Never raises: a DataFrame that cannot be a weak key (another client's class) was not read there.
    """
    try:
        return DRIVER_READ_SIZES.get(frame)
    except TypeError:
        return None


def known_size(frame: DataFrame) -> int | None:
    """The on-disk size of a DataFrame read on the driver, or of a Delta source read through Spark Connect."""
    size = driver_read_size(frame)
    if size is not None:
        return size
    try:
        return SOURCE_SIZES.get(frame)
    except TypeError:
        return None


def carry_size(frame: DataFrame, derived: DataFrame) -> None:
    """``derived`` (``frame`` filtered) keeps ``frame``'s known on-disk size: an upper bound of its rows'."""
    for registry in (DRIVER_READ_SIZES, SOURCE_SIZES):
        try:
            size = registry.get(frame)
        except TypeError:  # not a weak key (another client's class): no size known
            return
        if size is not None:
            registry[derived] = size
            return


def driver_read_limit(spark: SparkSession) -> int:
    """The byte limit of the driver-side read; 0 when off or when the session has no driver JVM (Spark Connect)."""
    try:
        spark.sparkContext  # noqa: B018 - Spark Connect has none: its client may not see the data
        return int(spark.conf.get(DRIVER_READ_CONF_KEY, str(DRIVER_READ_BYTES)) or 0)
    except Exception:  # noqa: BLE001 - Connect, or an unreadable setting: Spark reads
        return 0


_WHOLE_STAGE = "spark.sql.codegen.wholeStage"
_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
_FACTORY_MODE = "spark.sql.codegen.factoryMode"

# Spark Connect sessions tuned right now (by ``id``): a suite's runs share their client's one session,
# and only the first run that enters tunes it (see SmallRunTuning).
_TUNING: set[int] = set()
_TUNING_LOCK = threading.Lock()


def _int_conf(spark: SparkSession, key: str, default: int) -> int:
    try:
        return int(spark.conf.get(key, str(default)) or 0)
    except ValueError:
        return default


class SmallRunTuning:
    """Cheaper Spark settings while a small run is checked, restored when the run ends.

    On a small input (a freshly landed partition) a check task's seconds go to compiling code, not
    to running it: whole-stage code generation compiles Java classes per query — Delta's own log
    replay, the shared scan with its dozens of aggregates, each write — which takes longer than
    interpreting a few thousand rows; and each grouped pass shuffles into
    ``spark.sql.shuffle.partitions`` tasks where one does. So:

    * on entering, whole-stage code generation is switched off *provisionally*: reading the Delta
      logs and estimating the input's size are small work whatever the table;
    * :meth:`decide` then takes Spark's on-disk size estimate of the input plus any reference
      tables: at most :data:`SMALL_INPUT_BYTES` (``spark.dqcontracts.smallInputBytes``; 0 turns all
      of this off) keeps code generation off and uses one shuffle partition; a larger run gets
      code generation back before its scan;
    * on leaving, the session's settings are restored (it may be the caller's session).

    **On Spark Connect** the server is warm, but it keeps generated classes per *session* (each
    session has its own class loader), and every check task opens a new one: the ~50 classes of a
    run's queries are compiled again for every task — about a second of the server's CPU, more
    than interpreting a small partition. So there, while the sizes are read, Spark's interpreter is
    also chosen provisionally (``spark.sql.codegen.factoryMode=NO_CODEGEN``), and :meth:`decide`
    keeps it for inputs up to :data:`INTERPRETED_INPUT_BYTES` (``spark.dqcontracts.interpretedInputBytes``)
    and whole-stage code generation off up to :data:`SMALL_INPUT_BYTES`; sizes come from Delta's
    ``DESCRIBE DETAIL`` (:data:`SOURCE_SIZES`), and a source of unknown size (not Delta) means no
    tuning. The shuffle partitions are the server's choice and stay. A setting the session already
    has (other than Spark's default) is never touched; of a suite's runs sharing one Connect session,
    only the first one in tunes it.

    Results are the same either way: Spark evaluates the same expressions, interpreted. A setting
    passed explicitly at submit (``--conf``) is never touched.

    Example::

        with SmallRunTuning(spark) as tuning:
            df = spark.read.format("delta").load(path)
            print(tuning.decide([df]))  # small input (~31,744 bytes ≤ 8,388,608): whole-stage codegen off, …
    """

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._previous: dict[str, str | None] = {}
        self._owned: int | None = None
        self._remote = False
        self.limit = _int_conf(spark, SMALL_INPUT_CONF_KEY, SMALL_INPUT_BYTES)
        self.interpreted_limit = 0
        try:
            submitted = spark.sparkContext.getConf()
        except Exception:  # noqa: BLE001 - Spark Connect: no SparkContext; the session's own settings decide
            self._init_remote(spark)
            return
        self._may_set_codegen = self.limit > 0 and not submitted.contains(_WHOLE_STAGE)
        ours = spark_config.LOCAL_CONF[_SHUFFLE_PARTITIONS]
        self._may_set_partitions = self.limit > 0 and submitted.get(_SHUFFLE_PARTITIONS, ours) == ours
        self._may_interpret = False

    def _init_remote(self, spark: SparkSession) -> None:
        self._remote = True
        self._may_set_partitions = self._may_set_codegen = self._may_interpret = False
        if self.limit <= 0:
            return
        self.interpreted_limit = min(self.limit, _int_conf(spark, INTERPRETED_CONF_KEY, INTERPRETED_INPUT_BYTES))
        self._may_set_codegen = spark.conf.get(_WHOLE_STAGE, None) in (None, "true")
        self._may_interpret = self.interpreted_limit > 0 and spark.conf.get(_FACTORY_MODE, None) in (
            None,
            "FALLBACK",
        )

    def _set(self, key: str, value: str) -> None:
        if key not in self._previous:
            self._previous[key] = self.spark.conf.get(key, None)
        self.spark.conf.set(key, value)

    def __enter__(self) -> SmallRunTuning:
        if self._remote and (self._may_interpret or self._may_set_codegen):
            # Spark Connect: one tuner per session at a time (a suite's runs share their client's session).
            with _TUNING_LOCK:
                if id(self.spark) in _TUNING:
                    self.limit = 0
                    self._may_set_codegen = self._may_interpret = False
                else:
                    _TUNING.add(id(self.spark))
                    self._owned = id(self.spark)
        try:
            if self._may_set_codegen:
                self._set(_WHOLE_STAGE, "false")
            if self._may_interpret:
                self._set(_FACTORY_MODE, "NO_CODEGEN")
        except BaseException:  # noqa: BLE001 - re-raised; only the cleanup runs here
            self.__exit__()  # no with-block will: give back what was set and the session's turn
            raise
        return self

    def decide(self, frames: Sequence[DataFrame]) -> str | None:
        """Keep the cheap settings for a small run (a note saying so) or give a large one its codegen back."""
        size: int | None = None
        if self.limit > 0:
            try:
                known = [known_size(frame) for frame in frames]
                size = sum(
                    k if k is not None else int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
                    for k, frame in zip(known, frames)
                )
            except Exception:  # noqa: BLE001 - Spark Connect or an exotic source: no estimate, no tuning
                size = None
        if size is None or size > self.limit:
            self._restore()
            return None
        changed = []
        if self._may_interpret and size <= self.interpreted_limit:
            changed.append("Spark's interpreter (no generated code)")
        elif self._may_interpret:
            self._give_back(_FACTORY_MODE)
        if self._may_set_codegen:
            changed.append("whole-stage codegen off")
        if self._may_set_partitions:
            self._set(_SHUFFLE_PARTITIONS, "1")
            changed.append("1 shuffle partition")
        if not changed:
            return None
        return f"small input (~{size:,} bytes ≤ {self.limit:,}): " + ", ".join(changed)

    def _give_back(self, key: str) -> None:
        """Give ``key`` back its value from before :meth:`__enter__` (unset when it had none)."""
        if key in self._previous:
            value = self._previous.pop(key)
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)

    def _restore(self) -> None:
        for key in list(self._previous):
            self._give_back(key)

    def __exit__(self, *exc: object) -> None:
        try:
            self._restore()
        finally:
            if self._owned is not None:
                with _TUNING_LOCK:
                    _TUNING.discard(self._owned)
                self._owned = None
