"""The error the submit hook raises when the contract job fails (no pyspark import).

Its own module so that the hook and its standalone-cluster route raise the same class without
importing each other.

Example::

    raise ContractJobError("spark-submit could not start", kind="submit_failed")
"""

from __future__ import annotations

from airflow_dq_contracts.version_compat import AirflowException


class ContractJobError(AirflowException):
    """The Spark job failed. ``str()`` is the job's own error text when the job could report it.

    ``kind`` is ``run_failed``, ``invalid_contract``, ``invalid_arguments``, ``submit_failed``
    (spark-submit died before the job said anything: JVM, cluster or network trouble) or
    ``master_lost`` (cluster deploy mode: the master stopped answering while the driver ran).

    >>> ContractJobError("no such table", kind="run_failed").kind
    'run_failed'
    """

    def __init__(self, message: str, kind: str = "run_failed") -> None:
        super().__init__(message)
        self.kind = kind


__all__ = ["ContractJobError"]
