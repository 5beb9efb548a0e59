"""The import formats ``dq-contracts import NAME`` reads: each turns located source documents into contracts.

A format is an :class:`ImportFormat`: its name (the subcommand), a line of help, the options it takes beside
the common ones (``FILE…``, ``-o``, ``--name``, ``--partial``), and ``convert(sources, settings)`` → an
:class:`~airflow_dq_contracts.interop.common.ImportResult` (one contract per dataset, the refusals when
``partial``; raising ``ContractValidationError`` with every refusal, located, otherwise). DataHub and Dataplex
are registered here; another format is registered with :func:`register_import_format` — in the process
that builds the CLI, or by a distribution's entry point in the group ``airflow_dq_contracts.import_formats``
(the entry point names an ``ImportFormat``), read when the CLI builds its parser. ODCS is not one of them:
it is a contract *format* the loader reads directly (``dq-contracts import odcs`` compiles it).

Example::

    register_import_format(ImportFormat("toy", "toy rule files", convert=my_convert,
                                        options=(ImportOption("--owner", "the team that owns it"),)))
    # then: dq-contracts import toy rules.yaml --owner shop -o contracts/orders.yaml
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import sys
from collections.abc import Callable, Mapping
from typing import Any

from .common import ImportResult, Source

__all__ = [
    "ENTRY_POINT_GROUP",
    "ImportFormat",
    "ImportOption",
    "import_formats",
    "register_import_format",
]

ENTRY_POINT_GROUP = "airflow_dq_contracts.import_formats"
#: Subcommands of ``dq-contracts import`` that are not import formats (a contract format the loader reads).
RESERVED = frozenset({"odcs"})


@dataclasses.dataclass(frozen=True)
class ImportOption:
    """A command-line option of one format: ``--flag VALUE`` → ``settings[dest]`` (None when not given).

    Options sharing a ``group`` exclude each other (``--table`` or ``--path``).
    """

    flag: str
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    group: str | None = None

    @property
    def dest(self) -> str:
        """The settings key: ``--reference-table`` → ``reference_table``."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclasses.dataclass(frozen=True)
class ImportFormat:
    """One source format: ``convert(sources, settings)`` with settings ``name``, ``partial`` and its options."""

    name: str
    help: str
    convert: Callable[[list[Source], Mapping[str, Any]], ImportResult]
    options: tuple[ImportOption, ...] = ()


_FORMATS: dict[str, ImportFormat] = {}
_PLUGINS_READ = False


def register_import_format(fmt: ImportFormat) -> None:
    """Make ``fmt`` a subcommand of ``dq-contracts import`` (replaces a format of the same name).

    >>> register_import_format(ImportFormat("odcs", "no", convert=lambda sources, settings: None))
    Traceback (most recent call last):
    ...
    ValueError: 'odcs' is not an import format name: it is taken by the CLI
    """
    if not fmt.name or fmt.name in RESERVED or not fmt.name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"{fmt.name!r} is not an import format name: it is taken by the CLI")
    _FORMATS[fmt.name] = fmt


def import_formats() -> dict[str, ImportFormat]:
    """Every registered format by name: the built-in ones, then the entry points' (read once)."""
    global _PLUGINS_READ
    if not _PLUGINS_READ:
        _PLUGINS_READ = True
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                fmt = entry.load()
                if not isinstance(fmt, ImportFormat):
                    raise TypeError(f"it names a {type(fmt).__name__}, not an ImportFormat")
                register_import_format(fmt)
            except Exception as exc:  # noqa: BLE001 - one broken plugin must not take the CLI down
                print(f"import format {entry.name!r} ({entry.value}) not loaded: {exc}", file=sys.stderr)
    return dict(_FORMATS)


def _datahub(sources: list[Source], settings: Mapping[str, Any]) -> ImportResult:
    from .datahub import import_datahub_each

    return import_datahub_each(
        sources, name=settings.get("name"), dataset=settings.get("dataset"), partial=bool(settings.get("partial"))
    )


def _dataplex(sources: list[Source], settings: Mapping[str, Any]) -> ImportResult:
    from .dataplex import import_dataplex_result

    where = (settings.get("name"), settings.get("table"), settings.get("path"), settings.get("format"))
    return import_dataplex_result(sources, *where, partial=bool(settings.get("partial")))


register_import_format(
    ImportFormat(
        "datahub",
        "import DataHub assertion YAML files",
        convert=_datahub,
        options=(ImportOption("--dataset", "import only the assertions on this dataset URN", metavar="URN"),),
    )
)
register_import_format(
    ImportFormat(
        "dataplex",
        "import Dataplex rule JSON/YAML files",
        convert=_dataplex,
        options=(
            ImportOption("--table", "the dataset the rules check (catalog table)", group="target"),
            ImportOption("--path", "the dataset the rules check (path)", group="target"),
            ImportOption("--format", "format of --path", choices=("delta", "parquet", "csv", "json", "orc")),
        ),
    )
)
