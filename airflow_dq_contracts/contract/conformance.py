"""Schema conformance in plain Python: does a dataset's column fit its declaration, and if a declared
column is missing, which present column is it probably called now?

The Spark side (:class:`airflow_dq_contracts.engine.metrics.schema.ColumnSchemaMetric`) turns the data's
schema into :class:`~.model.ColumnType` values and asks this module; nothing here needs Spark.

**Compatible** uses the type families and widening rules of :mod:`.diff`: the data's type must be
the declared one or *widen* to it losslessly (``int`` data where ``long`` is declared is fine —
every value fits; ``long`` data where ``int`` is declared, or ``string`` where ``long`` is declared,
is not). A declaration that leaves a detail open accepts any value of it: ``decimal`` without a
precision accepts every decimal, ``list`` without ``value_type`` every list.

**Rename hint.** When a declared column is missing, the likely replacement is an *undeclared*
present column of a compatible type, ranked by the name tokens it shares (``mcc_code`` and
``merchant_mcc`` share ``mcc``) and only then by edit-distance similarity — difflib alone scores
that pair 0.30 and would never suggest it. With no shared token, only a very close spelling (ratio
≥ 0.8, ``customerid`` for ``customer_id``) is offered: a wrong hint is worse than none.

Example::

    >>> from airflow_dq_contracts.contract.model import ColumnType
    >>> compatible(ColumnType("long"), ColumnType("int")), compatible(ColumnType("long"), ColumnType("string"))
    (True, False)
    >>> rename_hint("mcc_code", ColumnType("string"), [("merchant_mcc", ColumnType("string")),
    ...                                                ("ingest_batch", ColumnType("long"))])
    'merchant_mcc'
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from .diff import widens
from .model import ColumnType

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^0-9A-Za-z]+")
CLOSE_SPELLING = 0.8


def compatible(declared: ColumnType | None, actual: ColumnType) -> bool:
    """Whether data of type ``actual`` satisfies the declaration ``declared`` (None: any type).

    >>> compatible(ColumnType("decimal"), ColumnType("decimal", precision=18, scale=4))
    True
    >>> compatible(ColumnType("timestamp"), ColumnType("date"))
    False
    """
    if declared is None:
        return True
    if declared.kind != actual.kind:
        return widens(actual, declared)
    if declared.kind == "decimal":
        if declared.precision is None:
            return True
        same = (declared.precision, declared.scale or 0) == (actual.precision, actual.scale or 0)
        return same or widens(actual, declared)
    if declared.kind in ("list", "map"):
        return _element_fits(declared.value_type, actual.value_type) and (
            declared.kind == "list" or _element_fits(declared.key_type, actual.key_type)
        )
    return True


def _element_fits(declared: ColumnType | None, actual: ColumnType | None) -> bool:
    if declared is None:
        return True
    return actual is not None and compatible(declared, actual)


def name_tokens(name: str) -> set[str]:
    """The lower-case words of a column name (``merchantMcc_code`` → ``{merchant, mcc, code}``).

    >>> sorted(name_tokens("merchantMcc_code"))
    ['code', 'mcc', 'merchant']
    """
    return {part.lower() for part in _SPLIT.split(_CAMEL.sub("_", name)) if part}


def rename_hint(missing: str, declared: ColumnType | None, undeclared: Sequence[tuple[str, ColumnType]]) -> str | None:
    """The undeclared present column that ``missing`` was most likely renamed to, or None.

    Only columns of a compatible type qualify. Ranked by shared name tokens (Jaccard), then by
    spelling similarity; without a shared token, only a close spelling.

    >>> rename_hint("amount", ColumnType("double"), [("amount_eur", ColumnType("string"))]) is None
    True
    """
    candidates = [name for name, kind in undeclared if compatible(declared, kind)]
    if not candidates:
        return None
    wanted = name_tokens(missing)

    def score(name: str) -> tuple[float, float]:
        tokens = name_tokens(name)
        shared = len(wanted & tokens) / len(wanted | tokens) if wanted | tokens else 0.0
        return shared, difflib.SequenceMatcher(None, missing.lower(), name.lower()).ratio()

    best = max(candidates, key=score)
    shared, spelling = score(best)
    if shared > 0 or spelling >= CLOSE_SPELLING:
        return best
    return None
