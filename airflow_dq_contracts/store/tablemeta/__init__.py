"""Table metadata: what the sensors, their triggers and the statistics-first answers read (plain Python, no JVM).

* :mod:`.delta_log` — freshness and partition completeness from a Delta log (``FreshnessQuery``,
  ``CompletenessQuery``) and the column statistics of its add actions;
* :mod:`.log_reader` — the log read directly (JSON commits, checkpoints, deletion vectors) where delta-rs
  cannot scan the table (type widening, variant columns…);
* :mod:`.table_facts` — the facts those queries share (newest timestamps, partition values, gaps);
* :mod:`.parquet_dir` — the same questions of a plain Parquet folder;
* :mod:`.commits` — the commits after a version and the runs each wrote (what a results watcher polls).

Outside the store, modules import this package, not its modules.
"""

from __future__ import annotations

from airflow_dq_contracts.store.delta import access_refused
from airflow_dq_contracts.store.tablemeta.commits import (
    LandedCommit,
    appended_files,
    commits_after,
    newest_version,
    oldest_commit,
    source_ranges,
)
from airflow_dq_contracts.store.tablemeta.delta_log import (
    DELTA_RS_SCANS,
    CompletenessQuery,
    CompletenessResult,
    DeltaMetadataError,
    FreshnessQuery,
    FreshnessResult,
    TableNotFoundError,
    add_actions,
    open_snapshot,
    query_column,
    query_extreme,
    resolve_table_path,
)
from airflow_dq_contracts.store.tablemeta.log_reader import (
    LogSnapshot,
    UnsupportedFeatureError,
    count_nulls,
    finish_extreme,
    plan_extreme,
    read_log,
)
from airflow_dq_contracts.store.tablemeta.table_facts import epoch_micros

__all__ = [
    "DELTA_RS_SCANS",
    "CompletenessQuery",
    "CompletenessResult",
    "DeltaMetadataError",
    "FreshnessQuery",
    "FreshnessResult",
    "LandedCommit",
    "LogSnapshot",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "access_refused",
    "add_actions",
    "appended_files",
    "commits_after",
    "count_nulls",
    "epoch_micros",
    "finish_extreme",
    "newest_version",
    "oldest_commit",
    "open_snapshot",
    "plan_extreme",
    "query_column",
    "query_extreme",
    "source_ranges",
    "read_log",
    "resolve_table_path",
]
