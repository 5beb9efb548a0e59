"""The results store: where a run's results, quarantine counts, history and registry live.

Plain Python (delta-rs; no Spark, no Airflow):

* :mod:`.base` — the :class:`~.base.ResultsStore` interface (write/read a run, a history window, the
  registry, the committed version).
* :mod:`.delta` — the one delta-rs opener (:func:`~.delta.open_table`), locations, storage options,
  scans, and the one error family (:class:`~.delta.StoreError` ⊃ :class:`~.delta.TableNotFoundError`).
* :mod:`.results_store` — :class:`~.results_store.DeltaResultsStore`, the delta-rs implementation;
  ``read_results``, ``read_quarantine_count``, ``count_run_rows``.
* :mod:`.history` — a contract's rows over a window, summarised per check (``dq-contracts history``).
* :mod:`.registry` — the registry layout, its row, its reader.
* :mod:`.delta_log`, :mod:`.table_facts`, :mod:`.parquet_dir` — freshness and partition facts from
  table metadata (the sensors' questions), and the plain-Parquet fallback.
* :mod:`.delta_commits` — the commits delta-rs makes from a driver (a new run's results append, the
  registry upsert), with the checks that say when it may.

Spark side (may import pyspark; no plain module imports them):

* ``sinks`` — the facade the job imports: everything below under one name.
* ``spark_store`` — ``SparkResultsStore``, the interface inside a Spark job.
* ``spark_tables`` — targets (path or catalog name), safe creation, commit retries, ``replaceWhere``.
* ``spark_results`` — the results table's writes (append when new, replace on retry) and version.
* ``spark_rows`` — quarantine and valid rows (the valid/quarantine split, idempotent per run).
* ``registry_sink`` — the registry upsert through Spark; ``spark_history`` — history of a catalog table.
"""
