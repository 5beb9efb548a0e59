"""A table's location as one value, resolved once at the edge (operator, sensor, CLI) and passed down.

* :class:`TableLocation` — what the user wrote, where delta-rs reads it (a path or URI), its kind
  (``path`` or ``catalog``) and the storage options that reach it (never shown by ``repr``).
* :func:`is_path` — a path or URI, as opposed to a catalog table name.
* :func:`normalise_location` — ``~`` expanded, ``file:`` URIs made paths, relative paths absolute.
* :func:`resolve_location` — a target (path or table name) → the location delta-rs reads, using the
  warehouse layout for names (or where a job's catalog put them: :mod:`.catalog_names`).
* :class:`StoreError` — a table cannot be resolved, opened or read; every reader's one error family.

Example::

    >>> is_path("/data/dq/results"), is_path("s3://bucket/dq/results"), is_path("dq.results")
    (True, True, False)
    >>> resolve_location("silver.orders", "/wh")
    '/wh/silver.db/orders'
    >>> where = TableLocation.resolve("dq.results", "/wh", storage_options={"AWS_SECRET_ACCESS_KEY": "s3cr3t"})
    >>> where.uri, where.kind, where.name, "s3cr3t" in repr(where)
    ('/wh/dq.db/results', 'catalog', 'dq.results', False)
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse
from collections.abc import Mapping

from airflow_dq_contracts.storage import catalog_names

#: Where catalog table names are looked up when no warehouse is given (Spark's warehouse layout).
WAREHOUSE_ENV = "DQ_CONTRACTS_WAREHOUSE"
KIND_PATH = "path"
KIND_CATALOG = "catalog"

__all__ = [
    "KIND_CATALOG",
    "KIND_PATH",
    "WAREHOUSE_ENV",
    "StoreError",
    "TableLocation",
    "is_path",
    "normalise_location",
    "resolve_location",
    "warehouse_table_path",
]


class StoreError(Exception):
    """A table of the store cannot be resolved, opened or read (not Delta, unreachable, wrong schema, a bad name).

    ``location`` (also readable as ``path``) is the table concerned, when there is one.
    """

    def __init__(self, message: str, location: str | None = None) -> None:
        super().__init__(message)
        self.location = location

    @property
    def path(self) -> str | None:
        """The table concerned (the name the metadata readers have always used)."""
        return self.location


def is_path(target: str) -> bool:
    """True when ``target`` is a filesystem path or URI, False for a catalog table name.

    A target containing ``/``, ``\\`` or ``://``, or starting with ``.`` or ``~``, is a path;
    anything else (``results``, ``dq.results``, ``main.dq.results``) is a table name.

    >>> [is_path(t) for t in ("/tmp/r", "./r", "~/r", "C:\\\\r", "s3a://b/r", "dq.results")]
    [True, True, True, True, True, False]
    """
    text = target.strip()
    return "/" in text or "\\" in text or "://" in text or text.startswith((".", "~"))


def normalise_location(location: str) -> str:
    """A URI stays as it is (without a trailing ``/``); a local path is made absolute, ``~`` and ``file:`` resolved.

    >>> normalise_location("s3://b/t/"), normalise_location("file:///tmp/t")
    ('s3://b/t', '/tmp/t')
    """
    text = os.fspath(location).strip()
    if "://" in text and not text.startswith("file:"):
        return text.rstrip("/")
    if text.startswith("file:"):
        text = urllib.parse.urlparse(text).path
    return os.path.abspath(os.path.expanduser(text))


def warehouse_table_path(table: str, warehouse: str | None = None) -> str:
    """Path of a catalog table in Spark's default warehouse layout.

    ``db.table`` → ``<warehouse>/<db>.db/<table>``; ``table`` or ``default.table`` →
    ``<warehouse>/<table>``; a leading ``spark_catalog.`` is dropped. Names are lower-cased, as
    Spark's session catalog stores them. ``warehouse`` defaults to ``$DQ_CONTRACTS_WAREHOUSE``.

    >>> warehouse_table_path("Silver.Orders", "/data/warehouse")
    '/data/warehouse/silver.db/orders'
    >>> warehouse_table_path("orders", "s3://lake/wh/")
    's3://lake/wh/orders'
    """
    base = warehouse or os.environ.get(WAREHOUSE_ENV)
    if not base:
        raise StoreError(
            f"table {table!r} needs a warehouse folder to be found: pass warehouse=... "
            f"or set ${WAREHOUSE_ENV} (or give a path instead of a table name)"
        )
    parts = [p.strip().strip("`").lower() for p in str(table).split(".")]
    if len(parts) == 3 and parts[0] == "spark_catalog":
        parts = parts[1:]
    if not parts or any(not p for p in parts) or len(parts) > 2:
        raise StoreError(f"table {table!r} is not a table name of the form 'table' or 'database.table'")
    base = base.rstrip("/")
    if len(parts) == 1 or parts[0] == "default":
        return f"{base}/{parts[-1]}"
    return f"{base}/{parts[0]}.db/{parts[1]}"


def resolve_location(target: str, warehouse: str | None = None) -> str:
    """Where delta-rs reads ``target``: the path itself (``~`` expanded), or a table name — where a job found it
    in its catalog (:mod:`~airflow_dq_contracts.storage.catalog_names`), else in the warehouse layout.

    >>> resolve_location("/wh/dq_results"), resolve_location("dq.results", "/wh")
    ('/wh/dq_results', '/wh/dq.db/results')
    """
    if is_path(target):
        text = target.strip()
        return text if "://" in text else os.path.expanduser(text)
    # Where the job's catalog put the table, when a job recorded it (storage/catalog_names.py).
    recorded = catalog_names.lookup(warehouse or os.environ.get(WAREHOUSE_ENV), target)
    return recorded or warehouse_table_path(target, warehouse)


@dataclasses.dataclass(frozen=True)
class TableLocation:
    """One table, resolved: what the user wrote, where delta-rs reads it, its kind, the options that reach it.

    Built once at the edge with :meth:`resolve` (or :meth:`of`, which keeps a value it is given) and passed
    down as is: readers use :attr:`uri` and never resolve ``target`` again. ``storage_options`` (delta-rs's
    object-store options, credentials among them) are left out of ``repr`` and of equality.

    >>> TableLocation.resolve("/wh/dq_results").kind, str(TableLocation.resolve("s3://b/r"))
    ('path', 's3://b/r')
    >>> TableLocation.resolve("/wh/dq_results").with_options({"AWS_REGION": "eu-west-1"}).storage_options
    {'AWS_REGION': 'eu-west-1'}
    """

    #: The table as the user named it: a path, a URI or a catalog name.
    target: str
    #: Where delta-rs reads it (``~`` expanded; for a catalog name, where its catalog or the warehouse puts it).
    uri: str
    #: :data:`KIND_PATH` or :data:`KIND_CATALOG`.
    kind: str
    storage_options: Mapping[str, str] | None = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def resolve(
        cls, target: str, warehouse: str | None = None, *, storage_options: Mapping[str, str] | None = None
    ) -> TableLocation:
        """``target`` resolved (see :func:`resolve_location`); :class:`StoreError` for a name no warehouse places."""
        text = str(target).strip()
        kind = KIND_PATH if is_path(text) else KIND_CATALOG
        options = {str(k): str(v) for k, v in storage_options.items()} if storage_options else None
        return cls(target=text, uri=resolve_location(text, warehouse), kind=kind, storage_options=options)

    @classmethod
    def at(cls, location: str, *, storage_options: Mapping[str, str] | None = None) -> TableLocation:
        """A path or URI already resolved (no warehouse lookup), normalised once as delta-rs reads it.

        >>> TableLocation.at("s3://b/t/").uri, TableLocation.at("file:///tmp/t").uri
        ('s3://b/t', '/tmp/t')
        """
        text = str(location).strip()
        options = {str(k): str(v) for k, v in storage_options.items()} if storage_options else None
        return cls(target=text, uri=normalise_location(text), kind=KIND_PATH, storage_options=options)

    @classmethod
    def of(
        cls,
        location: TableLocation | str,
        warehouse: str | None = None,
        *,
        storage_options: Mapping[str, str] | None = None,
    ) -> TableLocation:
        """``location`` itself when it is already a value (options added when it has none), else resolved."""
        if isinstance(location, TableLocation):
            return (
                location if location.storage_options or not storage_options else location.with_options(storage_options)
            )
        return cls.resolve(location, warehouse, storage_options=storage_options)

    @property
    def is_catalog(self) -> bool:
        """True for a catalog table name (Spark finds it by name; delta-rs reads :attr:`uri`)."""
        return self.kind == KIND_CATALOG

    @property
    def name(self) -> str | None:
        """The catalog name, or None for a path."""
        return self.target if self.is_catalog else None

    @property
    def options(self) -> dict[str, str] | None:
        """The storage options as a plain dict (None without any), ready for delta-rs."""
        return dict(self.storage_options) if self.storage_options else None

    def with_options(self, storage_options: Mapping[str, str] | None) -> TableLocation:
        """The same table reached with ``storage_options``."""
        options = {str(k): str(v) for k, v in storage_options.items()} if storage_options else None
        return dataclasses.replace(self, storage_options=options)

    def __str__(self) -> str:
        return self.uri
