"""Async triggers for the deferrable sensors (polling Delta metadata in the triggerer).

Example::

    from airflow_dq_contracts.triggers import DeltaCompletenessTrigger, DeltaFreshnessTrigger
"""

from airflow_dq_contracts.triggers.delta_metadata import DeltaCompletenessTrigger, DeltaFreshnessTrigger

__all__ = ["DeltaCompletenessTrigger", "DeltaFreshnessTrigger"]
