"""Airflow hooks: submission of the packaged contract job (no pyspark import)."""

from airflow_dq_contracts.hooks.contract_submit import ContractJobError, ContractSubmitHook

__all__ = ["ContractJobError", "ContractSubmitHook"]
