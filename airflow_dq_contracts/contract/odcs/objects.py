"""An ODCS document with several objects as several contracts: what ``validate``, ``run`` and the operator run
as one suite (one contract per ``schema[]`` object, each named after its object).

:func:`load_contracts` is :func:`~airflow_dq_contracts.contract.load_contract` for a source that may hold
several contracts: a native contract file or a one-object ODCS document gives one, ``FILE#OBJECT`` the
object named, a document with several objects one per object (compiled once, every refusal of the whole
document located in it). A document describing nothing (an empty or missing ``schema``) is refused at its
``schema`` line. :func:`object_documents` gives each object's compiled contract document — what the
operator ships to the job for each member of the suite.

Example::

    >>> text = '''
    ... apiVersion: v3.1.0
    ... kind: DataContract
    ... id: shop
    ... version: 1.0.0
    ... status: active
    ... schema:
    ...   - {name: orders, properties: [{name: id, physicalType: bigint, required: true}]}
    ...   - {name: customers, properties: [{name: id, physicalType: bigint, primaryKey: true}]}
    ... '''
    >>> [(origin, c.name, c.dataset.table) for origin, c in load_contracts(text, filename="shop.odcs.yaml")]
    [('shop.odcs.yaml#orders', 'orders', 'orders'), ('shop.odcs.yaml#customers', 'customers', 'customers')]
    >>> [name for name, _ in object_documents(text, "shop.odcs.yaml")]
    ['orders', 'customers']
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path as FsPath
from typing import Any

from ..errors import ContractValidationError, ValidationIssue
from ..loader import load_contract
from ..model import Contract
from ..yamlsrc import YamlSyntaxError, format_path, load_yaml
from . import CompiledObject, compile_checked, is_odcs


def _read(source: str | os.PathLike[str], filename: str | None) -> tuple[str, str] | None:
    """(text, name) of a contract file; None for text (or ``FILE#OBJECT``, which ``load_contract`` reads)."""
    if not isinstance(source, os.PathLike) and ("\n" in source or source.lstrip().startswith("{")):
        return None
    path = FsPath(source)
    if not path.exists():
        return None  # FILE#OBJECT, or a missing file: load_contract says which, located
    try:
        return path.read_text(encoding="utf-8"), filename or str(path)
    except (OSError, UnicodeDecodeError):
        return None  # load_contract reports it as it always does


def _objects(text: str, filename: str) -> list[CompiledObject] | None:
    """Every object of an ODCS document (None: not an ODCS document); raises every refusal, located."""
    try:
        data, smap, duplicates = load_yaml(text, filename)
    except YamlSyntaxError:
        return None  # load_contract reports it, located
    if not is_odcs(data):
        return None
    return compile_checked(data, smap, duplicates).require_objects()


def object_documents(text: str, filename: str) -> list[tuple[str, dict[str, Any]]] | None:
    """``(object name, compiled contract document)`` of each object of an ODCS document with several objects.

    None for anything else (a native contract, a one-object document: one contract, as before). Raises
    ``ContractValidationError`` with every refusal of the document, located in it.
    """
    objects = _objects(text, filename)
    if objects is None or len(objects) == 1:
        return None
    for obj in objects:  # each must be a valid contract: its problems located in the ODCS file
        _contract(obj, filename, None)
    return [(obj.name, obj.document) for obj in objects]


def _contract(obj: CompiledObject, filename: str, policy: dict[str, Any] | None) -> Contract:
    """The object's contract; a problem the contract language finds is located in the ODCS file."""
    try:
        return load_contract(obj.document, filename=filename, policy=policy)
    except ContractValidationError as err:
        lines = {format_path(path): line for path, line in obj.lines.items()}
        located = []
        for issue in err.issues:
            prefix = max((p for p in lines if issue.path == p or issue.path.startswith(p)), key=len, default=None)
            line = issue.line if issue.line is not None or prefix is None else lines[prefix]
            located.append(dataclasses.replace(issue, line=line))
        raise obj.relocate(ContractValidationError(located)) from None


def load_contracts(
    source: str | os.PathLike[str], *, filename: str | None = None, policy: dict[str, Any] | None = None
) -> list[tuple[str, Contract]]:
    """``(origin, contract)`` of each contract a source holds (see the module docs).

    ``origin`` is the file (or ``filename``) for one contract, ``FILE#OBJECT`` for each object of a
    document with several. Raises ``ContractValidationError`` with every problem, located.
    """
    read = _read(source, filename)
    if read is None and (
        isinstance(source, os.PathLike) or ("\n" not in source and not source.lstrip().startswith("{"))
    ):
        return [(filename or str(source), load_contract(source, filename=filename, policy=policy))]  # FILE#OBJECT…
    text, name = read if read is not None else (str(source), filename or "<string>")
    objects = _objects(text, name)
    if objects is None or len(objects) == 1:
        return [(name, load_contract(text, filename=name, policy=policy))]
    issues: list[ValidationIssue] = []
    loaded: list[tuple[str, Contract]] = []
    for obj in objects:
        try:
            loaded.append((f"{name}#{obj.name}", _contract(obj, name, policy)))
        except ContractValidationError as err:
            issues.extend(err.issues)
    if issues:
        raise ContractValidationError(issues)
    return loaded


def load_object(text: str, filename: str, name: str) -> dict[str, Any]:
    """The compiled contract document of object ``name`` of an ODCS document (``FILE#OBJECT`` read as text)."""
    data, smap, duplicates = load_yaml(text, filename)
    if not is_odcs(data):
        message = f"#{name} selects an object of an ODCS document; this is not one"
        raise ContractValidationError([ValidationIssue(filename, None, "", message)])
    obj = compile_checked(data, smap, duplicates).select(name)
    _contract(obj, filename, None)
    return obj.document


__all__ = ["load_contracts", "load_object", "object_documents"]
