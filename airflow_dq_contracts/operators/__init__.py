"""Airflow operators: evaluate a contract with Spark, then route the DAG on the decision.

Example::

    from airflow_dq_contracts.operators import ContractBranchOperator, ContractCheckOperator
"""

from airflow_dq_contracts.operators.contract_branch import ContractBranchOperator
from airflow_dq_contracts.operators.contract_check import ContractCheckOperator

__all__ = ["ContractBranchOperator", "ContractCheckOperator"]
