"""``suggest``: draft a contract from the data (and its history) — Spark side.

ONE profiling run (:mod:`.profile`: a single aggregate scan through the engine's own metric classes,
plus the grouped passes it needs) → the suggestion rules (:mod:`.rules`, plain Python) → YAML with
the evidence in comments (:mod:`.render`). The draft is loaded with
:func:`~airflow_dq_contracts.contract.load_contract` before it is returned, so what ``suggest`` gives
is always a contract ``dq-contracts validate`` accepts.

Example::

    from airflow_dq_contracts.engine.suggest import suggest

    suggestion = suggest(df, name="orders", dataset={"path": "/data/orders", "format": "delta"})
    print(suggestion.yaml)          # review, then commit it
    suggestion.contract             # the loaded Contract, ready for evaluate()
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.contract.baseline import HISTORY_COLUMNS, gated_runs
from airflow_dq_contracts.contract.model import Contract
from airflow_dq_contracts.storage.locations import is_path
from airflow_dq_contracts.store.results import TableLocation, open_results_store
from airflow_dq_contracts.timeutil import to_utc

from .model import ColumnProfile, Profile
from .profile import ProfileError, profile_frame
from .render import render_yaml
from .rules import Draft, draft_contract

__all__ = ["ColumnProfile", "Draft", "Profile", "ProfileError", "Suggestion", "suggest", "volume_history"]


@dataclasses.dataclass
class Suggestion:
    """What :func:`suggest` returns: the YAML text, the loaded contract, the draft and the profile."""

    yaml: str
    contract: Contract
    draft: Draft
    profile: Profile

    @property
    def document(self) -> dict[str, Any]:
        """The suggested contract as a mapping (what the YAML holds, without the comments)."""
        return self.draft.document


def volume_history(
    results_table: str, contract_name: str, reference_time: dt.datetime, *, spark: Any = None, lookback_days: int = 28
) -> list[tuple[dt.datetime, float, str]]:
    """Earlier ``num_rows`` values of ``contract_name``: (reference time, rows, check name), oldest first.

    The same points a ``baseline`` would use: passed checks of runs that were not gated, in the
    ``lookback_days`` before ``reference_time``. A path is read with delta-rs; a catalog table name
    with ``spark``. A table that does not exist yet is an empty history.
    """
    since = reference_time - dt.timedelta(days=lookback_days)
    columns = (*HISTORY_COLUMNS, "check_name", "check_type")
    if is_path(results_table):
        store = open_results_store(TableLocation.resolve(results_table))
        rows = store.read_history(contract_name, since=since, until=reference_time, columns=columns)
    else:
        if spark is None or not spark.catalog.tableExists(results_table):
            return []
        frame = spark.table(results_table).where(f"contract_name = '{contract_name.replace(chr(39), chr(39) * 2)}'")
        rows = [row.asDict() for row in frame.select(*columns).collect()]
    gated = gated_runs(rows)
    points = []
    for row in rows:
        moment = row.get("reference_time")
        if (
            row.get("check_type") != "num_rows"
            or row.get("status") != "passed"
            or row.get("run_id") in gated
            or row.get("metric_value") is None
            or moment is None
        ):
            continue
        moment = to_utc(moment)
        if since <= moment < reference_time:
            points.append((moment, float(row["metric_value"]), str(row.get("check_name") or "")))
    points.sort(key=lambda point: (point[0], point[1]))
    return points


def suggest(
    df: DataFrame,
    *,
    name: str = "suggested",
    dataset: dict[str, Any] | None = None,
    partition_by: Sequence[str] = (),
    sample: float | None = None,
    reference_time: dt.datetime | str | None = None,
    results_table: str | None = None,
    source: str | None = None,
    filter: str | None = None,
) -> Suggestion:
    """Profile ``df`` once and draft a contract named ``name`` (rules: :mod:`.rules`).

    ``dataset`` is written as the contract's ``dataset``; ``partition_by`` names partition columns
    (completeness, ``metadata.partitioned_by``); ``sample`` profiles a fraction (default: every
    row); ``reference_time`` (default now) is what the freshness evidence is measured against;
    ``results_table`` (path or catalog name) supplies earlier ``num_rows`` results of ``name`` so
    the volume band comes from history. Raises :class:`ProfileError` when the data cannot be profiled.
    """
    profile = profile_frame(df, sample=sample, partition_by=partition_by, reference_time=reference_time)
    if results_table:
        profile.history = volume_history(results_table, name, profile.reference_time, spark=df.sparkSession)
        profile.history_source = results_table
    draft = draft_contract(profile, name=name, dataset=dataset, source=source, filter=filter)
    text = render_yaml(draft)
    contract = load_contract(text, filename=f"<suggested {name}>")
    return Suggestion(text, contract, draft, profile)
