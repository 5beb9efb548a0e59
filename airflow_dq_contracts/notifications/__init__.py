"""Airflow notifiers: alert a contract's owner when a run gates (or quarantines).

Example::

    from airflow_dq_contracts.notifications import ContractAlertNotifier
"""

from airflow_dq_contracts.notifications.contract_alert import ContractAlertNotifier

__all__ = ["ContractAlertNotifier"]
