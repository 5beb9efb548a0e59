"""Delta sinks of an evaluation: the results table, the quarantine table and the valid-rows table.

The Spark side of the results store, as the job imports it. This module is a facade; the code is in

* :mod:`~airflow_dq_contracts.store.spark_tables` — targets, safe creation, one-commit writes,
  conflict retries (:class:`SinkError`, :func:`is_conflict`);
* :mod:`~airflow_dq_contracts.store.results.spark_writes` — the results table (:func:`write_results`,
  :func:`committed_version`, :func:`read_results`);
* :mod:`~airflow_dq_contracts.store.sinks.spark_rows` — quarantine and valid rows (:func:`split_annotated`,
  :func:`write_quarantine`, :func:`write_valid`, :func:`clear_run_rows`);
* :mod:`~airflow_dq_contracts.store.results.spark_registry` — the registry upsert (:func:`write_registry`);
* :mod:`~airflow_dq_contracts.store.results.driver_commits` — the commits delta-rs makes from the driver
  (plain Python, shared with :class:`~airflow_dq_contracts.store.results.delta_store.DeltaResultsStore`);
* :mod:`~airflow_dq_contracts.store.results.spark_store` — :class:`SparkResultsStore`, the store interface
  over all of them.

Spark side (imports no Airflow). Every sink is **idempotent per run id**: a write is one Delta
commit that overwrites exactly the rows of its run (``replaceWhere "run_id = '…'"``) and adds the
new ones, so an Airflow retry of the same run replaces its rows instead of adding a second copy,
while other runs' rows are untouched. Readers never see a half-replaced run: the delete and the
append are the same atomic commit.

The results and the registry are a handful of rows per run: a new run's results and the registry
upsert are committed by delta-rs from the driver (:mod:`~airflow_dq_contracts.store.results.driver_commits`: tables of the exact
schema on the local filesystem or S3 — on S3 delta-rs is their only writer, its conditional writes
keep concurrent drivers safe), in milliseconds instead of the seconds a cold JVM spends in Delta's write
path; Spark's Delta writes them otherwise, and always writes the quarantine and valid rows.

A run's *first* write needs no replacement: when the table certainly holds no row of the run
yet — read with delta-rs on the driver (:func:`~airflow_dq_contracts.store.results.driver_commits.run_absent`: a metadata lookup
plus at most that run's files, no Spark job) — the rows are appended in one plain commit instead. That skips
Delta's state reconstruction of the whole table that a ``replaceWhere`` needs to find the files
to remove, which is most of a small run's write and grows with the table's history. Whenever
that cannot be known (a catalog table name, no ``deltalake`` on the driver, a table delta-rs
cannot read) the write replaces as before, so a retry always replaces.

Concurrency: Delta uses optimistic concurrency. Appends of new runs do not conflict with each
other; a *replacing* write (a retry) conflicts with any commit that added files to the table while
it ran (its ``replaceWhere`` read the whole table). Such conflicts are retried with jittered
exponential backoff, up to ``max_attempts``; when they are exhausted a :class:`SinkError` names the table and the number of attempts. A missing
table (results, quarantine and valid alike) is created with an empty first commit, so any
number of writers creating it race only on Delta's put-if-absent of version 0; the losers retry,
refresh the JVM's cached Delta log of the path (a stale one keeps saying "no table") and find the
winner's table, waiting for it by time (:data:`CREATION_WAIT_SECONDS`), not by a count of looks.

Targets are a path/URI (``/data/dq/results``, ``s3a://bucket/dq/results``) or a catalog table
name (``dq.results``), see :func:`is_path`.

Layouts:

* **results** — exactly :data:`~airflow_dq_contracts.results.RESULT_COLUMNS` (DESIGN §5), created
  on first use, partitioned by ``contract_name``: dashboards and history queries ask about one
  contract ("the last 30 runs of orders"), so they read one directory; the number of contracts
  is small, whereas partitioning by ``run_id`` would create one directory of tiny files per run.
* **quarantine** and **valid** — the input's columns plus the run's bookkeeping columns, with schema
  evolution across runs: see :mod:`~airflow_dq_contracts.store.sinks.spark_rows`.

Spark code (the engine, the job) imports this facade only, for the Spark results store and history too.

Example::

    from airflow_dq_contracts.store import sinks
    sinks.write_results(spark, result.checks, "/data/dq/results", run_id=result.run_id)
    bad, good = sinks.split_annotated(annotated_df)[::-1]
    sinks.write_quarantine(spark, bad, "/data/dq/quarantine/orders", run_id=result.run_id)
    sinks.write_valid(spark, good, "/data/silver/orders_valid", run_id=result.run_id)
"""

from __future__ import annotations

from airflow_dq_contracts.store.delta import is_path
from airflow_dq_contracts.store.results.driver_commits import arrow_schema, driver_table
from airflow_dq_contracts.store.results.spark_history import HistorySource, load_history
from airflow_dq_contracts.store.results.spark_registry import REGISTRY_SCHEMA, write_registry
from airflow_dq_contracts.store.results.spark_store import SparkResultsStore
from airflow_dq_contracts.store.results.spark_writes import (
    RESULTS_PARTITION_COLUMNS,
    RESULTS_SCHEMA,
    committed_version,
    read_results,
    write_results,
)
from airflow_dq_contracts.store.sinks.spark_rows import (
    QUARANTINING_ACTIONS,
    clear_run_rows,
    probe_run_tables,
    split_annotated,
    write_quarantine,
    write_valid,
)
from airflow_dq_contracts.store.spark_tables import (
    CREATION_WAIT_SECONDS,
    RETRY_BASE_SECONDS,
    RETRY_MAX_SECONDS,
    SinkError,
    is_conflict,
    run_locations,
    spark_sql_string,
)

__all__ = [
    "CREATION_WAIT_SECONDS",
    "HistorySource",
    "QUARANTINING_ACTIONS",
    "REGISTRY_SCHEMA",
    "RESULTS_PARTITION_COLUMNS",
    "RESULTS_SCHEMA",
    "RETRY_BASE_SECONDS",
    "RETRY_MAX_SECONDS",
    "SinkError",
    "SparkResultsStore",
    "arrow_schema",
    "clear_run_rows",
    "committed_version",
    "driver_table",
    "is_conflict",
    "is_path",
    "load_history",
    "probe_run_tables",
    "read_results",
    "run_locations",
    "spark_sql_string",
    "split_annotated",
    "write_quarantine",
    "write_registry",
    "write_results",
    "write_valid",
]
