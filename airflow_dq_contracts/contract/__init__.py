"""The contract model, loader, validator semantics and diff — plain Python (no Airflow, no Spark).

Example::

    from airflow_dq_contracts.contract import load_contract, ContractValidationError
    try:
        contract = load_contract("contracts/orders.yaml")
    except ContractValidationError as err:
        print(err)          # every problem, one per line: file:line: path: message
"""

from .errors import ContractValidationError, ValidationIssue
from .loader import load_contract, parse_contract, validate_file
from .model import SLA, Check, Column, ColumnType, Contract, Dataset
from .validators import Validator

__all__ = [
    "SLA",
    "Check",
    "Column",
    "ColumnType",
    "Contract",
    "ContractValidationError",
    "Dataset",
    "ValidationIssue",
    "Validator",
    "load_contract",
    "parse_contract",
    "validate_file",
]
