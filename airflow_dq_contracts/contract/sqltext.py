"""SQL text written once: identifiers and literals for Spark SQL and for standard SQL (DataFusion).

Plain Python. Two dialects meet in this package and they quote differently:

* **Spark SQL** (the engine, the compiled ODCS/DataHub/Dataplex conditions, ``replaceWhere``):
  identifiers in backticks (a backtick doubled), strings in single quotes with backslash escapes
  (Spark's default parser reads ``\\'`` and ``\\\\``).
* **Standard SQL** (delta-rs's DataFusion, which reads the results and metadata tables): identifiers
  in double quotes, strings in single quotes with the quote doubled.

Example::

    >>> quote_identifier("order id"), quote_identifier_if_needed("order_id")
    ('`order id`', 'order_id')
    >>> print(spark_string("it's"), standard_string("it's"))
    'it\\'s' 'it''s'
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote_identifier(name: str) -> str:
    """A column name as a Spark SQL identifier, always backquoted (dots and spaces are part of the name).

    >>> quote_identifier("a`b"), quote_identifier("a.b")
    ('`a``b`', '`a.b`')
    """
    return "`" + name.replace("`", "``") + "`"


def quote_identifier_if_needed(name: str) -> str:
    """A Spark SQL identifier as a reader would write it: bare when a plain name, else backquoted.

    >>> quote_identifier_if_needed("order_id"), quote_identifier_if_needed("order id")
    ('order_id', '`order id`')
    """
    return name if _PLAIN_NAME.fullmatch(name) else quote_identifier(name)


def unquote_identifier(text: str) -> str:
    """The name a Spark SQL identifier stands for (the inverse of :func:`quote_identifier`).

    >>> unquote_identifier("`a``b`"), unquote_identifier("order_id")
    ('a`b', 'order_id')
    """
    if len(text) >= 2 and text.startswith("`") and text.endswith("`"):
        return text[1:-1].replace("``", "`")
    return text


def quote_standard_identifier(name: str) -> str:
    """A column name as a standard SQL identifier (double quotes, a quote doubled), e.g. for DataFusion.

    >>> print(quote_standard_identifier('a"b'))
    "a""b"
    """
    return '"' + name.replace('"', '""') + '"'


def delta_path_table(path: str) -> str:
    """The Spark SQL name of the Delta table stored at ``path`` (``delta.`<path>```).

    >>> delta_path_table("/lake/orders")
    'delta.`/lake/orders`'
    """
    return "delta." + quote_identifier(path)


def spark_string(value: str) -> str:
    """A single-quoted Spark SQL string literal (backslash escapes, Spark's default parser).

    >>> print(spark_string("it's a \\\\ test"))
    'it\\'s a \\\\ test'
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def standard_string(value: str) -> str:
    """A single-quoted standard SQL string literal (a quote doubled), e.g. for DataFusion.

    >>> print(standard_string("it's"))
    'it''s'
    """
    return "'" + value.replace("'", "''") + "'"


def spark_literal(value: Any) -> str:
    """A Spark SQL literal for a scalar: numbers as written, booleans bare, anything else as a string.

    >>> print(spark_literal("it's"), spark_literal(5), spark_literal(0.5), spark_literal(True))
    'it\\'s' 5 0.5 true
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return spark_string(str(value))


def datafusion_literal(value: Any) -> str | None:
    """A partition value as a standard SQL (DataFusion) literal; None for a type this does not map.

    >>> datafusion_literal(True), datafusion_literal(3), datafusion_literal("it's")
    ('true', '3', "'it''s'")
    >>> datafusion_literal(dt.date(2024, 1, 31)), datafusion_literal(1.5)
    ("DATE '2024-01-31'", None)
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return standard_string(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return f"DATE '{value.isoformat()}'"
    return None
