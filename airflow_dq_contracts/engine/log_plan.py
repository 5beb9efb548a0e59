"""A Delta input read lazily: a contract the log answers whole runs with no DataFrame and no Spark job.

Statistics-first (:mod:`.statistics_first`) answers ``num_rows``, ``missing``/``count``, ``min``/``max``,
``freshness`` and ``completeness`` from the Delta log. When **every** check of a contract is of those
kinds (or a ``schema`` check, decided from the schema alone), nothing needs Spark: the schema comes
from the log's metadata (its ``schemaString``), the checks are planned against it without building a
Spark expression, and the log answers them. Only when some check needs the scan (or the log cannot
answer one) is the DataFrame built — :meth:`DeltaInput.frame` — and the run planned as usual, so the
answers are the scan's either way.

Example::

    source = StatisticsSource("/lake/orders")
    lazy = DeltaInput(spark, source, lambda: spark.read.format("delta").load("/lake/orders"))
    result = Evaluator(contract, lazy, statistics=source).run()
    lazy.builds                      # 0: answered from the log, no DataFrame built
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from airflow_dq_contracts.contract.column_paths import FIELD, Step, try_parse
from airflow_dq_contracts.contract.model import Check, Contract
from airflow_dq_contracts.runspec import DatasetSource
from airflow_dq_contracts.storage.s3 import env_delta_options
from airflow_dq_contracts.store.spark_remote import SessionCapabilities
from airflow_dq_contracts.store.tablemeta import open_snapshot

from .column_paths import ResolvedPath
from .metrics import Measurement, Metric, PlanContext, Scope, metric_for
from .metrics.schema import ColumnSchemaMetric, TableSchemaMetric
from .spark_errors import first_line, quiet_pyspark_errors
from .statistics_first import ANSWERABLE, Outcome, StatisticsSource, answer, statistics_enabled
from .text_read import is_marker


def filter_condition(df: DataFrame, text: str) -> Column:
    """Parse and analyse a SQL predicate against ``df``; ``ValueError`` naming the problem.

    >>> filter_condition(df, "amount >")            # doctest: +SKIP
    ValueError: invalid filter 'amount >': [PARSE_SYNTAX_ERROR] Syntax error at or near end of input…
    """
    try:
        with quiet_pyspark_errors():
            condition = F.expr(text)
            # WHERE analysis rejects non-boolean predicates, aggregates and windows, without a job.
            _ = df.where(condition).schema
    except Exception as exc:  # noqa: BLE001 - ParseException, AnalysisException…
        raise ValueError(f"invalid filter {text!r}: {first_line(exc)}") from None
    return condition


def case_sensitive(spark: SparkSession) -> bool:
    try:
        return str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"
    except Exception:  # noqa: BLE001 - a session whose conf cannot be read: Spark's default (insensitive)
        return False


class DeltaInput:
    """A Delta table to evaluate, its DataFrame built only when a check needs the scan.

    ``build`` makes the DataFrame (called at most once, on the first :meth:`frame`); ``builds`` counts
    the calls. :attr:`schema` is the table's schema as its log's metadata declares it, at the
    source's version (``source.version``; the newest when None).
    """

    def __init__(self, spark: SparkSession, source: StatisticsSource, build: Callable[[], DataFrame]) -> None:
        self.spark = spark
        self.source = source
        self.builds = 0
        self._build = build
        self._frame: DataFrame | None = None
        self._opened: tuple[Any, Any] | None = None

    @classmethod
    def at(cls, spark: SparkSession, location: str, **settings: Any) -> DeltaInput:
        """The Delta table at ``location`` (``settings``: the other fields of :class:`StatisticsSource`)."""
        source = StatisticsSource(location, **settings)

        def build() -> DataFrame:
            reader = spark.read.format("delta")
            if source.version is not None:
                reader = reader.option("versionAsOf", source.version)
            return reader.load(location)

        return cls(spark, source, build)

    @property
    def built(self) -> bool:
        return self._frame is not None

    def frame(self) -> DataFrame:
        """The DataFrame (built now if it was not yet)."""
        if self._frame is None:
            self.builds += 1
            self._frame = self._build()
        return self._frame

    def opened(self) -> tuple[Any, Any]:
        """The table opened at the source's version (:func:`open_snapshot`), once."""
        if self._opened is None:
            self._opened = open_snapshot(self.source.location, self.source.storage_options, self.source.version)
        return self._opened

    @property
    def schema(self) -> T.StructType:
        """The schema the log's metadata declares (``schemaString``)."""
        table, log = self.opened()
        text = log.schema_json if log is not None else table.schema().to_json()
        return T.StructType.fromJson(json.loads(text))


def statistics_source(
    source: DatasetSource,
    capabilities: SessionCapabilities,
    detail: Mapping[str, Any] | None = None,
    read: Mapping[str, Any] | None = None,
) -> StatisticsSource | None:
    """The Delta input whose log may answer checks before the scan (``engine/statistics_first.py``).

    A path read by this process's Spark is read where it is. A catalog-named input, or any input of a
    Spark Connect session (whose paths are the server's), is read at the ``location`` its ``DESCRIBE
    DETAIL`` gives (``detail``), and only if the log found there is that table (``id``): a process that
    cannot reach it, or finds another table at a local path of the same name, scans instead. The log is
    read at the version the run reads (``read``, :func:`source_read`) when it is known, not at whatever
    landed since.
    """
    if source.null_tokens or source.format != "delta":
        return None  # values read as NULL that the log counts as values: every check is scanned
    version = (read or {}).get("version")
    if source.path and not source.table and capabilities.driver_reads_paths:
        return StatisticsSource(source.path, env_delta_options(source.path), version=version)
    if not detail or str(detail.get("format") or "").lower() != "delta" or not detail.get("location"):
        return None
    location = str(detail["location"])
    table_id = detail.get("id")
    return StatisticsSource(
        location, env_delta_options(location), table_id=str(table_id) if table_id else None, version=version
    )


class _LogPlanContext(PlanContext):
    """Planning against the log's schema: a top-level column resolves without a Spark expression.

    Any other path is refused (the run is then planned as usual, against the DataFrame).
    """

    def path(self, name: str) -> ResolvedPath | str:
        steps = try_parse(name)
        field = self.field(name)
        if field is None or steps is None or len(steps) != 1 or steps[0].kind != FIELD:
            raise LookupError(f"{name}: not a top-level column of the log's schema")
        if self.field(steps[0].name) is not field:
            raise LookupError(f"{name}: not a top-level column of the log's schema")
        return ResolvedPath(field.name, (Step(FIELD, field.name),), field, field.dataType, field.nullable)


@dataclasses.dataclass
class LogAnswer:
    """Every evaluated check with its metric and its measurement from the log; the run's row count."""

    checks: list[tuple[Check, Metric, Measurement | None]]
    row_count: int
    outcome: Outcome


def _schema_only(metric: Metric) -> bool:
    """A schema check decided while planning: nothing for the scan nor a grouped pass."""
    try:
        return not metric.aggregations(Scope(None)) and not metric.group_keys()
    except Exception:  # noqa: BLE001 - it wants a Spark expression: it is planned as usual
        return False


def answer_from_log(
    contract: Contract,
    lazy: DeltaInput,
    case_sensitive: bool,
    reference_time: dt.datetime,
    progress: Callable[[str], None] | None = None,
) -> LogAnswer | None:
    """Every check of ``contract`` answered from the Delta log, or None (plan and scan as usual).

    No DataFrame is built and no Spark expression: the checks are planned against the log's schema
    (:class:`_LogPlanContext`). None as soon as one check is of another kind, has its own
    ``filter``, fails its precondition, or is not answered exactly (:func:`.statistics_first.answer`).
    """
    spark = lazy.spark
    checks = [c for c in contract.evaluated_checks() if c.enabled]
    if not contract.enforcement.statistics or not statistics_enabled(spark):
        return None
    metrics = [metric_for(c) for c in checks]
    if any(c.filter or not isinstance(m, ANSWERABLE + _SCHEMA) for c, m in zip(checks, metrics)):
        return None
    try:
        schema = lazy.schema
        if any(is_marker(f.name) for f in schema.fields):
            return None
        ctx = _LogPlanContext(schema, case_sensitive)
        if any(m.precondition(ctx) for m in metrics):
            return None  # the usual plan reports it
        for metric in metrics:
            metric.coordinate(metrics)
    except Exception:  # noqa: BLE001 - a path or a schema the log plan does not cover: planned as usual
        return None
    if not all(_schema_only(m) for m in metrics if isinstance(m, _SCHEMA)):
        return None
    candidates: Sequence[tuple[Check, Metric, bool]] = [(c, m, True) for c, m in zip(checks, metrics)]
    outcome = answer(spark, lazy.source, schema, None, candidates, reference_time, progress, opened=lazy.opened())
    wanted = [i for i, m in enumerate(metrics) if not isinstance(m, _SCHEMA)]
    if outcome.row_count is None or any(i not in outcome.answers for i in wanted):
        return None
    return LogAnswer(
        [(c, m, outcome.answers.get(i)) for i, (c, m) in enumerate(zip(checks, metrics))], outcome.row_count, outcome
    )


_SCHEMA = (ColumnSchemaMetric, TableSchemaMetric)
