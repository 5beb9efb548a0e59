"""Async triggers: the deferrable sensors' (polling Delta metadata in the triggerer) and the results watcher's
(``ContractVerdictTrigger``, an ``AssetWatcher``'s event trigger).

Example::

    from airflow_dq_contracts.triggers import ContractVerdictTrigger, DeltaCompletenessTrigger, DeltaFreshnessTrigger
"""

from airflow_dq_contracts.triggers.delta_metadata import DeltaCompletenessTrigger, DeltaFreshnessTrigger
from airflow_dq_contracts.triggers.results_watcher import ContractVerdictTrigger

__all__ = ["ContractVerdictTrigger", "DeltaCompletenessTrigger", "DeltaFreshnessTrigger"]
