"""Airflow operators: evaluate a contract with Spark, then route the DAG on the decision.

Example::

    from airflow_dq_contracts.operators import ContractBranchOperator, ContractCheckOperator
"""

from airflow_dq_contracts.operators.assets import contract_asset
from airflow_dq_contracts.operators.contract_branch import ContractBranchOperator
from airflow_dq_contracts.operators.contract_check import ContractCheckOperator
from airflow_dq_contracts.operators.verdict import ContractVerdictOperator, require_contract

__all__ = [
    "ContractBranchOperator",
    "ContractCheckOperator",
    "ContractVerdictOperator",
    "contract_asset",
    "require_contract",
]
