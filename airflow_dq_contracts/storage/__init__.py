"""Storage, credentials and table locations — one plain package (no pyspark, no Airflow).

* :mod:`.locations` — :class:`~.locations.TableLocation`, the value a table's location travels as once the
  edge (operator, sensor, CLI) resolved it; :func:`~.locations.is_path`, :func:`~.locations.resolve_location`
  and the one error family :class:`~.locations.StoreError`.
* :mod:`.catalog_names` — catalog table names → the locations the job's catalog gave them.
* :mod:`.naming` — the default warehouse and the default results, quarantine and report locations.
* :mod:`.s3` — S3 settings in one vocabulary for delta-rs, Spark's ``s3a`` and the job's environment.
* :mod:`.connections` — an Airflow connection's fields → :class:`~.connections.StorageCredentials`
  (the lookup and masking stay on the Airflow side, in ``hooks/storage.py``).

Example::

    >>> from airflow_dq_contracts.storage import TableLocation
    >>> TableLocation.resolve("silver.orders", "/wh").uri
    '/wh/silver.db/orders'
"""

from __future__ import annotations

from airflow_dq_contracts.storage.locations import StoreError, TableLocation, is_path, resolve_location

__all__ = ["StoreError", "TableLocation", "is_path", "resolve_location"]
