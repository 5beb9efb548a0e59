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

    # a text file, read as ``dq-contracts run`` reads it, with reader options (kept in dataset.options)
    suggestion = suggest_input(spark, path="/data/penguins.csv", input_format="csv", input_options={"sep": ";"})

A CSV or JSON dataset is profiled for missing-value tokens (``NA``, ``NULL``, ``-``…): a string
column whose other values all have one type is drafted as that type and the tokens go to
``dataset.null_values`` (:func:`~.profile.read_text_types`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from airflow_dq_contracts import runspec
from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.contract.baseline import HISTORY_COLUMNS, gated_runs
from airflow_dq_contracts.contract.model import Contract
from airflow_dq_contracts.engine.runner import read_dataset
from airflow_dq_contracts.storage.locations import is_path
from airflow_dq_contracts.store.results import TableLocation, open_results_store
from airflow_dq_contracts.timeutil import to_utc

from .model import ColumnProfile, Profile
from .profile import ProfileError, profile_frame
from .render import render_yaml
from .rules import Draft, draft_contract

__all__ = [
    "TEXT_FORMATS",
    "ColumnProfile",
    "Draft",
    "Profile",
    "ProfileError",
    "Suggestion",
    "input_dataset",
    "read_input",
    "suggest",
    "suggest_input",
    "volume_history",
]

#: Dataset formats whose values are text: their string columns are profiled for missing-value tokens.
TEXT_FORMATS = runspec.TEXT_FORMATS


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
    input_options: Mapping[str, Any] | None = None,
    null_tokens: bool | None = None,
) -> Suggestion:
    """Profile ``df`` once and draft a contract named ``name`` (rules: :mod:`.rules`).

    ``dataset`` is written as the contract's ``dataset``; ``partition_by`` names partition columns
    (completeness, ``metadata.partitioned_by``); ``sample`` profiles a fraction (default: every
    row); ``reference_time`` (default now) is what the freshness evidence is measured against;
    ``results_table`` (path or catalog name) supplies earlier ``num_rows`` results of ``name`` so
    the volume band comes from history. ``input_options`` — the reader options ``df`` was read
    with — are written into ``dataset.options`` (to read a path with them, :func:`suggest_input`).
    ``null_tokens`` (default: when ``dataset`` is a CSV or JSON path) profiles string columns that
    hide one type behind missing-value tokens as that type and writes the tokens as
    ``dataset.null_values``. Raises :class:`ProfileError` when the data cannot be profiled.
    """
    if input_options:
        if not dataset:
            raise ValueError("input_options are written into dataset.options: give the dataset too")
        dataset = {**dataset, "options": {**dict(dataset.get("options") or {}), **dict(input_options)}}
    if null_tokens is None:
        null_tokens = bool(dataset and dataset.get("path") and str(dataset.get("format", "")).lower() in TEXT_FORMATS)
    profile = profile_frame(
        df, sample=sample, partition_by=partition_by, reference_time=reference_time, null_tokens=null_tokens
    )
    if results_table:
        profile.history = volume_history(results_table, name, profile.reference_time, spark=df.sparkSession)
        profile.history_source = results_table
    draft = draft_contract(profile, name=name, dataset=dataset, source=source, filter=filter)
    text = render_yaml(draft)
    contract = load_contract(text, filename=f"<suggested {name}>")
    return Suggestion(text, contract, draft, profile)


def input_dataset(
    path: str | None = None,
    table: str | None = None,
    input_format: str | None = None,
    input_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``dataset`` a draft declares for a path (in ``input_format``, default delta) or a table.

    >>> input_dataset("/d/p.csv", input_format="csv", input_options={"sep": ";"})
    {'path': '/d/p.csv', 'format': 'csv', 'options': {'sep': ';'}}
    >>> input_dataset(table="silver.orders")
    {'table': 'silver.orders'}
    """
    dataset: dict[str, Any] = {"table": table} if table else {"path": path, "format": (input_format or "delta").lower()}
    if input_options:
        dataset["options"] = {str(key): str(value) for key, value in input_options.items()}
    return dataset


def read_input(spark: SparkSession, dataset: Mapping[str, Any], filter: str | None = None) -> DataFrame:
    """``dataset`` (:func:`input_dataset`) read as ``dq-contracts run`` reads a contract's dataset.

    Its reader options apply (a CSV has ``header`` and ``inferSchema`` on unless they say otherwise);
    ``filter`` is pushed down. Raises what :func:`~airflow_dq_contracts.engine.runner.read_dataset` raises.
    """
    stub = load_contract({"name": "suggest-input", "dataset": dict(dataset)})
    return read_dataset(spark, stub, filter=filter)


def suggest_input(
    spark: SparkSession,
    *,
    path: str | None = None,
    table: str | None = None,
    input_format: str | None = None,
    input_options: Mapping[str, Any] | None = None,
    filter: str | None = None,
    **options: Any,
) -> Suggestion:
    """Read a path or a table as ``run`` does (reader options included) and :func:`suggest` on it.

    The draft's ``dataset`` names the input with its format and ``input_options``; ``options`` are
    :func:`suggest`'s (``name``, ``partition_by``, ``sample``, ``reference_time``, ``results_table``…).
    """
    dataset = input_dataset(path, table, input_format, input_options)
    df = read_input(spark, dataset, filter)
    options.setdefault("source", table or path)
    return suggest(df, dataset=dataset, filter=filter, **options)
