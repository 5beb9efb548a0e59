"""The text of a ``sql`` check's query: its ``{placeholders}`` and the first-line statement guard.

Plain Python (no Spark). Both the check type's parameter validation (:mod:`.checks`) and the
reference rules (:mod:`.references`) read a query's text; the authority on what it *is* stays Spark's
own parser at run time (:func:`airflow_dq_contracts.engine.relational.safe_query`).

Example::

    >>> placeholders("SELECT count(*) FROM {dataset} d LEFT ANTI JOIN {customers} c USING (id)")
    ['dataset', 'customers']
"""

from __future__ import annotations

import re

#: ``{dataset}`` in a ``sql`` query is the checked dataset; every other placeholder is a reference.
DATASET_PLACEHOLDER = "dataset"
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Leading whitespace, comments and opening parentheses before a statement's first keyword.
_LEAD = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*", re.DOTALL)
_QUERY_KEYWORDS = ("select", "with")


def placeholders(query: str) -> list[str]:
    """The ``{name}`` placeholders of a ``sql`` query, in order of first use.

    >>> placeholders("SELECT * FROM {dataset} JOIN {dataset} USING (id) JOIN {orders} USING (id)")
    ['dataset', 'orders']
    """
    return list(dict.fromkeys(PLACEHOLDER.findall(query)))


def statement_problem(query: str) -> str | None:
    """Why ``query`` is obviously not a single query, or None (cheap first line of defence).

    The authority is Spark's own parser at run time (see ``engine/relational.py``); this catches
    the plain mistakes while the contract is validated, without a JVM.

    >>> statement_problem("DROP TABLE orders") is not None
    True
    >>> statement_problem("-- orphans\\nWITH x AS (SELECT 1) SELECT * FROM x") is None
    True
    """
    text = _LEAD.sub("", query, count=1)
    first = re.match(r"[A-Za-z]+", text)
    keyword = first.group(0).lower() if first else ""
    if keyword not in _QUERY_KEYWORDS:
        return (
            f"a sql check runs one query: SELECT … or WITH … SELECT …, got {(first.group(0) if first else text[:20])!r}"
        )
    return None
