"""The Spark engine: evaluate a contract on a DataFrame (no Airflow imports here).

Example::

    from airflow_dq_contracts.contract import load_contract
    from airflow_dq_contracts.engine import evaluate, annotate

    contract = load_contract("orders.yaml")
    result = evaluate(contract, df, reference_time="2024-05-02T00:00:00Z")
    tagged = annotate(contract, df, result)     # rows + _dq_violations, for the quarantine split

The names are imported lazily, so importing a plain-Python helper of this package does not load
PySpark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .evaluator import Evaluator, evaluate
    from .row_verdicts import annotate

__all__ = ["Evaluator", "annotate", "evaluate"]


def __getattr__(name: str) -> Any:
    if name == "annotate":
        from .row_verdicts import annotate

        return annotate
    if name in __all__:
        from . import evaluator

        return getattr(evaluator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
