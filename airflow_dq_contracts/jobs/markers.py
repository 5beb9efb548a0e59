"""The job's two marker lines — how the Spark job talks back to whoever submitted it (plain Python).

The job prints them on stdout (and appends them to ``--markers-out`` in cluster deploy mode); the
hook picks them out of the spark-submit output. This module is all the submitter needs of the job:
it imports neither Spark nor the job itself.

::

    DQ_CONTRACTS_DONE {"run_id": ..., "decision": ..., "row_count": ..., ...}
    DQ_CONTRACTS_ERROR {"kind": "invalid_contract" | "invalid_arguments" | "run_failed", "message": ...}

A suite (several contracts in one application, :class:`~airflow_dq_contracts.runspec.SuiteSpec`) ends with
ONE DONE line listing each run: the payload above when it was evaluated, else its own error::

    DQ_CONTRACTS_DONE {"suite": [{"run_id": ..., "decision": ...}, {"run_id": ..., "contract": ..., "error": {"kind": ..., "message": ...}}]}
"""

from __future__ import annotations

import json
from typing import Any

DONE_MARKER = "DQ_CONTRACTS_DONE"
ERROR_MARKER = "DQ_CONTRACTS_ERROR"
#: The DONE payload's key listing a suite's runs (one entry per run, in the suite's order).
SUITE_KEY = "suite"


def parse_marker(line: str) -> tuple[str, dict[str, Any]] | None:
    """(marker, payload) when ``line`` is one of the job's marker lines, else None.

    >>> parse_marker('DQ_CONTRACTS_DONE {"decision":"pass"}')
    ('DQ_CONTRACTS_DONE', {'decision': 'pass'})
    >>> parse_marker("26/01/01 INFO SparkContext: Running Spark") is None
    True
    """
    text = line.strip()
    for marker in (DONE_MARKER, ERROR_MARKER):
        if text.startswith(marker + " "):
            try:
                payload = json.loads(text[len(marker) + 1 :])
            except json.JSONDecodeError:
                return None
            return (marker, payload) if isinstance(payload, dict) else None
    return None
