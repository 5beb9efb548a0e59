"""airflow-dq-contracts: data contracts as executable quality gates in Apache Airflow.

Three worlds, kept apart: ``contract`` (plain Python), ``engine``/``jobs`` (Spark, no Airflow),
``operators``/``sensors``/``triggers`` (Airflow, no pyspark). ``results`` is their shared language.
"""

__version__ = "0.1.0"

from airflow_dq_contracts._moved import install as _install_moved_modules

_install_moved_modules()
