"""Sensors that wait on a table's metadata (Delta log via delta-rs; no Spark, no JVM).

Example::

    from airflow_dq_contracts.sensors import CompletenessSensor, FreshnessSensor
"""

from airflow_dq_contracts.sensors.completeness import CompletenessSensor
from airflow_dq_contracts.sensors.freshness import FreshnessSensor

__all__ = ["CompletenessSensor", "FreshnessSensor"]
