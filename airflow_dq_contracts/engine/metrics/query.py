"""``sql``: the author's own query over this run's temp views — a value, or the failing rows.

The query is vetted by :func:`airflow_dq_contracts.engine.relational.safe_query` (exactly one
query, run as a subquery) and run in its own pass (:meth:`SqlMetric.own_query`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_dq_contracts.contract.queries import DATASET_PLACEHOLDER, PLACEHOLDER, placeholders
from airflow_dq_contracts.engine.relational import UnsafeQuery, reference_frame, safe_query
from airflow_dq_contracts.engine.spark_types import NUMERIC_TYPES, to_float, type_name

from .base import MeasureContext, Measurement, Metric, PlanContext

#: rows of a ``return: rows`` query quoted in the message
SHOWN_ROWS = 5


class SqlMetric(Metric):
    """``sql``: the author's query — a value (``return: value``) or failing rows (``return: rows``)."""

    check_type, level = "sql", "table"

    def precondition(self, ctx: PlanContext) -> str | None:
        query = self.check.params["query"]
        for name in placeholders(query):
            if name not in ctx.views:
                if name == DATASET_PLACEHOLDER:
                    return "the dataset has no temp view in this run"
                _, problem = reference_frame(ctx.references, name)
                return problem or f"reference {name!r} has no temp view in this run"
        if ctx.frame is None:
            return "sql needs a Spark session"
        text = PLACEHOLDER.sub(lambda m: ctx.views.get(m.group(1), m.group(0)), query)
        try:
            self.frame = safe_query(ctx.frame.sparkSession, text)
        except UnsafeQuery as exc:
            return f"query refused: {exc}"
        fields = self.frame.schema.fields
        if self.check.params.get("return") == "value" and (
            len(fields) != 1 or not isinstance(fields[0].dataType, NUMERIC_TYPES)
        ):
            shown = ", ".join(f"{f.name} {type_name(f.dataType)}" for f in fields)
            return f"return: value needs exactly one numeric column; the query returns ({shown})"
        return None

    def own_query(self) -> list[Any] | None:
        if self.check.params.get("return") == "value":
            return list(self.frame.limit(2).collect())
        shown = [
            ", ".join(f"{k}={v!r}" for k, v in row.asDict().items()) for row in self.frame.limit(SHOWN_ROWS).collect()
        ]
        count = len(shown) if len(shown) < SHOWN_ROWS else self.frame.count()
        return [count, shown]

    def measure(self, scan: Sequence[Any], grouped: Sequence[Any], ctx: MeasureContext) -> Measurement:
        if self.check.params.get("return") == "value":
            rows: Sequence[Any] = ctx.extra
            if len(rows) != 1:
                return Measurement.failure(
                    f"return: value needs exactly one row; the query returned {len(rows)}"
                    + ("+" if len(rows) > 1 else "")
                )
            value = to_float(rows[0][0])
            if value is None:
                return Measurement.failure("the query returned NULL")
            return Measurement(value)
        count, shown = int(ctx.extra[0]), ctx.extra[1]
        note = ("first rows: " + " | ".join(shown)) if shown else ""
        return Measurement(float(count), failed_rows=None, note=note)
