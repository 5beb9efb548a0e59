"""``dq-contracts import datahub|dataplex|odcs|…`` and ``dq-contracts export datahub|odcs`` (registered in :mod:`..cli`).

The import formats are those of :mod:`airflow_dq_contracts.interop.formats` (a format registered there, or
by an entry point, is a subcommand here); ``odcs`` is compiled by the contract loader's ODCS reader.

Exit codes follow the main CLI: 0 done, 1 refused (every refusal printed, located), 2 usage; with
``--partial``, 3 when the contract was written without the refused rules (each printed, located).

Example::

    dq-contracts import datahub assertions.yaml -o contracts/purchase_events.yaml
    dq-contracts import dataplex rules.json --table shop.orders -o contracts/orders.yaml
    dq-contracts export datahub contracts/purchase_events.yaml -o assertions.yaml
    dq-contracts import odcs shop.odcs.yaml -o contracts/          # one contract per object
    dq-contracts export odcs contracts/orders.yaml -o orders.odcs.yaml
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

EXIT_OK, EXIT_INVALID, EXIT_PARTIAL = 0, 1, 3
PARTIAL_HELP = "import every rule that maps exactly; list each refused one (exit status 3)"


def _write(text: str, output: str | None) -> None:
    if output and output != "-":
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def _report(issues: Any) -> int:
    for issue in issues:
        print(str(issue), file=sys.stderr)
    return EXIT_INVALID


def _write_many(contracts: dict[str, str], output: str | None) -> int:
    """One contract per object/dataset: into directory ``output`` (``<name>.yaml``), or one to a file/stdout.

    ``output`` is a directory when it is one, ends with ``/``, or several contracts are written; a directory
    that does not exist yet is created.
    """
    to_file = not output or output == "-" or (not os.path.isdir(output) and not output.endswith(("/", os.sep)))
    if len(contracts) == 1 and to_file:
        try:
            _write(next(iter(contracts.values())), output)
        except OSError as exc:
            print(f"cannot write {output}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_INVALID
        return EXIT_OK
    if not output or output == "-":
        names = ", ".join(contracts)
        print(f"{len(contracts)} datasets ({names}): give -o DIR for one contract each", file=sys.stderr)
        return EXIT_INVALID
    try:
        os.makedirs(output, exist_ok=True)
        for name, text in contracts.items():
            safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
            _write(text, os.path.join(output, f"{safe}.yaml"))
    except OSError as exc:
        print(f"cannot write the contracts into directory {output}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INVALID
    return EXIT_OK


def _cmd_import_odcs(args: argparse.Namespace) -> int:
    from airflow_dq_contracts.contract import ContractValidationError
    from airflow_dq_contracts.interop.odcs import import_odcs

    try:
        result = import_odcs(args.files[0], object_name=args.object, partial=args.partial)
    except ContractValidationError as err:
        return _report(err.issues)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    status = _write_many(result.contracts, args.output)
    for issue in result.refused:
        print(f"refused: {issue}", file=sys.stderr)
    return EXIT_PARTIAL if status == EXIT_OK and result.refused else status


def _cmd_import(args: argparse.Namespace) -> int:
    from airflow_dq_contracts.contract import ContractValidationError

    if args.source == "odcs":
        return _cmd_import_odcs(args)
    from airflow_dq_contracts.interop.common import Source
    from airflow_dq_contracts.interop.formats import import_formats

    fmt = import_formats()[args.source]
    settings = {"name": args.name, "partial": args.partial, **{o.dest: getattr(args, o.dest) for o in fmt.options}}
    try:
        result = fmt.convert([Source.read(path) for path in args.files], settings)
    except ContractValidationError as err:
        return _report(err.issues)
    status = _write_many(result.contracts, args.output)
    for issue in result.refused:
        print(f"refused: {issue}", file=sys.stderr)
    return EXIT_PARTIAL if status == EXIT_OK and result.refused else status


def _cmd_export(args: argparse.Namespace) -> int:
    from airflow_dq_contracts.contract import ContractValidationError, load_contract
    from airflow_dq_contracts.interop.datahub_export import export_datahub_report

    try:
        contract = load_contract(args.contract)
        if args.target == "odcs":
            from airflow_dq_contracts.interop.odcs import export_odcs

            _write(export_odcs(contract), args.output)
            return EXIT_OK
    except ContractValidationError as err:
        return _report(err.issues)
    text, refused = export_datahub_report(contract, platform=args.platform, env=args.env)
    if refused and not args.skip_unsupported:
        return _report(refused)
    for issue in refused:
        print(f"skipped: {issue}", file=sys.stderr)
    _write(text, args.output)
    return EXIT_OK


def register(sub: Any) -> None:
    """Add the ``import`` and ``export`` subcommands to the main parser's subparsers."""
    p_import = sub.add_parser("import", help="turn DataHub assertions / Dataplex rules into a contract")
    sources = p_import.add_subparsers(dest="source", required=True)
    # Every registered import format (interop/formats.py: built-in, in-process or by entry point).
    from airflow_dq_contracts.interop.formats import import_formats

    for fmt in import_formats().values():
        p = sources.add_parser(fmt.name, help=fmt.help)
        p.add_argument("files", nargs="+", metavar="FILE")
        p.add_argument(
            "-o", "--output", metavar="CONTRACT|DIR", help="a file, or a directory for one contract per dataset"
        )
        p.add_argument("--name", help="contract name (default: the table's last name part)")
        p.add_argument("--partial", action="store_true", help=PARTIAL_HELP)
        groups: dict[str, Any] = {}
        for option in fmt.options:
            if option.group is not None and option.group not in groups:
                groups[option.group] = p.add_mutually_exclusive_group()
            where = p if option.group is None else groups[option.group]
            where.add_argument(option.flag, help=option.help, metavar=option.metavar, choices=option.choices)
        p.set_defaults(func=_cmd_import)
    p = sources.add_parser("odcs", help="compile an ODCS v3 document (one contract per schema object)")
    p.add_argument("files", nargs=1, metavar="FILE")
    p.add_argument(
        "-o",
        "--output",
        metavar="CONTRACT|DIR",
        help="a file (one object) or a directory, created when missing (DIR/ or several objects; default stdout)",
    )
    p.add_argument("--object", help="import only this schema object")
    p.add_argument("--partial", action="store_true", help=PARTIAL_HELP)
    p.set_defaults(func=_cmd_import)

    p_export = sub.add_parser("export", help="turn a contract into DataHub assertions (exact mappings only)")
    targets = p_export.add_subparsers(dest="target", required=True)
    p = targets.add_parser("datahub", help="export DataHub assertion YAML")
    p.add_argument("contract", metavar="CONTRACT")
    p.add_argument("-o", "--output", metavar="FILE", help="write here (default stdout)")
    p.add_argument("--platform", default="delta", help="DataHub platform of the URN when the contract has none")
    p.add_argument("--env", default="PROD", help="DataHub environment of the URN (default PROD)")
    p.add_argument(
        "--skip-unsupported",
        action="store_true",
        help="export what maps exactly, list the rest on stderr (default: refuse, exit 1)",
    )
    p.set_defaults(func=_cmd_export)
    p = targets.add_parser("odcs", help="export an ODCS v3.1.0 document (our extra checks as type: custom)")
    p.add_argument("contract", metavar="CONTRACT")
    p.add_argument("-o", "--output", metavar="FILE", help="write here (default stdout)")
    p.set_defaults(func=_cmd_export)
