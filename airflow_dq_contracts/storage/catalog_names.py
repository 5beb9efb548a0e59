"""Catalog table names → their storage locations, as the job that used them found them (plain Python).

The Airflow side reads Delta tables with delta-rs, which knows locations, not names. A name resolves
through the catalog the *job* used — its metastore (Hive, Unity Catalog, Glue) may put a table anywhere,
and on Spark Connect the catalog lives on the server. So the job asks its catalog (``DESCRIBE DETAIL``)
for every catalog name it read or wrote and reports ``{name: location}`` in its DONE marker; the operator
uses those locations for its read-back and report, puts them in the summary (``locations``), and
records each one here — one small JSON file per name under ``<warehouse>/_dq_catalog/`` — so that
sensors, the report and ``dq-contracts history`` on the Airflow side resolve the name the same way
(:func:`airflow_dq_contracts.storage.locations.resolve_location` looks here first, then falls back to
Spark's default warehouse layout ``<warehouse>/<db>.db/<table>``).

Example::

    record("/wh", "dq.results", "file:/srv/wh/dq.db/results")
    lookup("/wh", "DQ.Results")     # '/srv/wh/dq.db/results'
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.parse

__all__ = ["CATALOG_FOLDER", "lookup", "normalise_name", "record"]

CATALOG_FOLDER = "_dq_catalog"


def normalise_name(name: str) -> str:
    """A name as the session catalog stores it: lower case, no backticks, no ``spark_catalog.``.

    >>> normalise_name("spark_catalog.`DQ`.Results")
    'dq.results'
    """
    parts = [part.strip().strip("`").lower() for part in name.split(".")]
    if len(parts) == 3 and parts[0] == "spark_catalog":
        parts = parts[1:]
    return ".".join(parts)


def _location(value: str) -> str:
    # Spark reports local tables as file:/… URIs; delta-rs and the rest of the package use the path.
    return urllib.parse.urlparse(value).path if value.startswith("file:") else value


def _file(warehouse: str, name: str) -> str:
    return os.path.join(warehouse, CATALOG_FOLDER, normalise_name(name) + ".json")


def record(warehouse: str | None, name: str, location: str) -> str | None:
    """Remember where ``name`` lives (an atomic write); the file written, None for a remote warehouse.

    >>> import tempfile; wh = tempfile.mkdtemp()
    >>> _ = record(wh, "dq.results", "file:/srv/wh/dq.db/results"); lookup(wh, "dq.results")
    '/srv/wh/dq.db/results'
    """
    if not warehouse or "://" in warehouse:
        return None  # object-store warehouses: the job's marker and the summary carry the locations
    path = _file(os.path.expanduser(warehouse), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle, staging = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump({"name": normalise_name(name), "location": _location(location)}, out)
    os.replace(staging, path)
    return path


def lookup(warehouse: str | None, name: str) -> str | None:
    """Where the job last found ``name``, or None when no job recorded it under ``warehouse``."""
    if not warehouse or "://" in warehouse:
        return None
    try:
        with open(_file(os.path.expanduser(warehouse), name), encoding="utf-8") as handle:
            location = json.load(handle).get("location")
    except (OSError, ValueError, AttributeError):
        return None
    return location if isinstance(location, str) and location else None
