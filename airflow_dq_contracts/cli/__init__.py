"""The ``dq-contracts`` command line: one module per command family.

``main`` (validate, run, diff and the dispatcher), ``history``, ``jars`` (Delta's jars and the JVM
archive), ``report``, ``interop`` (import/export). Each module imports its heavy parts lazily, so
``dq-contracts validate`` starts without Spark or Airflow.
"""

from airflow_dq_contracts.cli.main import main

__all__ = ["main"]
