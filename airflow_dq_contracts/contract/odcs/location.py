"""Where an ODCS object's data is, and what our own export carries that ODCS has no field for.

**Location.** An object's dataset is its ``physicalName`` (else ``name``) as a catalog table — unless the
document has exactly one server with a ``path`` (or ``location``: ``local``, ``s3``, ``azure``… servers):
then it is that path, in the server's ``format``. ``{object}`` (or ``{model}``, datacontract-cli's
spelling) in the path stands for the object's ``physicalName``; a document with several objects and a
path without a placeholder has each object in a folder of that name under the path (a note says so).
Several servers with a path: which one a run reads is the deployment's choice, so the table name stays
(a note says so; ``--input`` / ``input_path=`` give the path at run time).

**Carrier.** ``export odcs`` writes what the standard cannot say in the object's ``customProperties`` under
``property: airflow-dq-contracts``: ``unversioned: true`` (ODCS requires a ``version``; the contract had
none), ``dataset`` (a dataset the standard spelling does not give exactly: none at all, reader options,
``null_values``), ``enforcement`` (a non-default one, as the contract writes it), ``metadata`` (the contract's own metadata besides ``odcs``), ``native: true`` (the
contract was not compiled from ODCS: it has no ``metadata.odcs``). The import reads it back, so
contract → ODCS → contract is an identity.

Example::

    >>> from airflow_dq_contracts.contract.yamlsrc import SourceMap
    >>> from .common import Found
    >>> data = {"servers": [{"server": "lake", "type": "s3", "location": "s3://b/{object}", "format": "parquet"}]}
    >>> object_dataset(Found(SourceMap("o.yaml")), data, "orders", 2, [])
    {'path': 's3://b/orders', 'format': 'parquet'}
"""

from __future__ import annotations

from typing import Any

from ..model import DATASET_FORMATS
from ..yamlsrc import Path, format_path
from .common import Found

#: The ``customProperties`` entry our export writes on an object (what ODCS has no field for).
CARRIER = "airflow-dq-contracts"
CARRIER_KEYS = ("unversioned", "dataset", "enforcement", "metadata", "native")
PLACEHOLDERS = ("{object}", "{model}")
SEVERAL_OBJECTS_NOTE = "several objects under one server path: each object is read at <path>/<physicalName>"
SEVERAL_SERVERS_NOTE = "several servers with a path: the object's physicalName is the dataset (a table)"


def _server_path(server: dict) -> str | None:
    for key in ("path", "location"):
        value = server.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def object_dataset(found: Found, data: dict, table: str, count: int, notes: list[str]) -> dict[str, Any]:
    """The ``dataset:`` of one object (``table`` is its physicalName, else name); see the module docs."""
    servers = data.get("servers")
    with_path = [
        (index, server)
        for index, server in enumerate(servers if isinstance(servers, list) else [])
        if isinstance(server, dict) and _server_path(server) is not None
    ]
    if not with_path:
        return {"table": table}
    if len(with_path) > 1:
        note = f"servers: {SEVERAL_SERVERS_NOTE}"
        if note not in notes:
            notes.append(note)
        return {"table": table}
    index, server = with_path[0]
    where: Path = ("servers", index)
    location = str(_server_path(server))
    if any(p in location for p in PLACEHOLDERS):
        for placeholder in PLACEHOLDERS:
            location = location.replace(placeholder, table)
    elif count > 1:
        location = f"{location.rstrip('/')}/{table}"
        notes.append(f"{format_path(where)}: {SEVERAL_OBJECTS_NOTE}")
    dataset: dict[str, Any] = {"path": location}
    fmt = server.get("format")
    if fmt is not None:
        if isinstance(fmt, str) and fmt.strip().lower() in DATASET_FORMATS:
            dataset["format"] = fmt.strip().lower()
        elif not any(issue.path == format_path(where + ("format",)) for issue in found.issues):  # once for all
            known = ", ".join(DATASET_FORMATS)
            found.refuse(where + ("format",), f"server format {fmt!r} cannot be read; known: {known}")
    return dataset


def carried(found: Found, raw: dict, path: Path, doc: dict[str, Any]) -> None:
    """Apply the object's ``airflow-dq-contracts`` custom property (our export's carrier) to ``doc``."""
    entries = raw.get("customProperties")
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict) or entry.get("property") != CARRIER:
            continue
        where = path + ("customProperties", index, "value")
        value = entry.get("value")
        if not isinstance(value, dict):
            found.refuse(where, f"the {CARRIER} property is a mapping, got {value!r}")
            continue
        found.keys(value, CARRIER_KEYS, where, f"the {CARRIER} property")
        if value.get("unversioned") is True:
            doc.pop("version", None)
        if "dataset" in value:
            dataset = value["dataset"]
            if dataset is None:
                doc.pop("dataset", None)
            elif isinstance(dataset, dict):
                doc["dataset"] = dict(dataset)
            else:
                found.refuse(where + ("dataset",), f"'dataset' is a mapping or null, got {dataset!r}")
        if isinstance(value.get("enforcement"), dict):
            doc["enforcement"] = dict(value["enforcement"])
        metadata = value.get("metadata") or {}
        if not isinstance(metadata, dict):
            found.refuse(where + ("metadata",), f"'metadata' is a mapping, got {metadata!r}")
            continue
        own = {k: v for k, v in metadata.items() if k != "odcs"}
        odcs = {} if value.get("native") is True else {"odcs": doc.get("metadata", {}).get("odcs")}
        doc["metadata"] = {**own, **{k: v for k, v in odcs.items() if v is not None}}
        if not doc["metadata"]:
            doc.pop("metadata")


__all__ = ["CARRIER", "carried", "object_dataset"]
