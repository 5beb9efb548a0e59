"""The ``dq-contracts`` command (DESIGN §7).

``validate`` and ``diff`` are plain Python and start instantly; ``run`` starts a local Spark session;
``jars fetch|path`` resolves Delta's jars ahead of time / shows where they are (``jars_cli.py``).

Exit codes: 0 success (``run``: pass or quarantine), 1 invalid contract or arguments /
``diff`` found a breaking change, 2 usage error, 3 ``run`` decided *gate*, 4 the run itself failed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence

from airflow_dq_contracts.cli.connections import add_conn_id_argument, add_storage_conn_argument
from airflow_dq_contracts.cli.history import add_parser as add_history_parser
from airflow_dq_contracts.cli.interop import register as register_interop
from airflow_dq_contracts.cli.jars import add_parser as add_jars_parser
from airflow_dq_contracts.cli.report import add_parser as add_report_parser
from airflow_dq_contracts.cli.stream import add_parser as add_stream_parser
from airflow_dq_contracts.cli.suggest import add_parser as add_suggest_parser
from airflow_dq_contracts.contract.model import DATASET_FORMATS

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_GATE = 3
EXIT_RUN_FAILED = 4


def _cmd_validate(args: argparse.Namespace) -> int:
    from airflow_dq_contracts.contract import ContractValidationError
    from airflow_dq_contracts.contract.counts import count_checks
    from airflow_dq_contracts.contract.odcs.objects import load_contracts

    failures = 0
    for path in args.contracts:
        try:
            contracts = load_contracts(path)  # an ODCS document with several objects: one contract each
        except ContractValidationError as err:
            failures += 1
            for issue in err.issues:
                print(str(issue), file=sys.stderr)
            continue
        for origin, contract in contracts if not args.quiet else []:
            count = count_checks(contract)
            where = path if len(contracts) == 1 else origin
            print(f"{where}: ok ({contract.name} {contract.version or ''}, {count})".replace(" ,", ","))
            odcs = contract.metadata.get("odcs")
            for note in odcs.get("notes", []) if isinstance(odcs, dict) else []:  # ODCS readings chosen (#26)
                print(f"  note: {note}")
    return EXIT_INVALID if failures else EXIT_OK


def _cmd_diff(args: argparse.Namespace) -> int:
    from airflow_dq_contracts.contract import ContractValidationError, load_contract
    from airflow_dq_contracts.contract.diff import diff_contracts

    try:
        old = load_contract(args.old)
        new = load_contract(args.new)
    except ContractValidationError as err:
        for issue in err.issues:
            print(str(issue), file=sys.stderr)
        return EXIT_INVALID
    changes = diff_contracts(old, new)
    if args.json:
        import json

        print(json.dumps([c.to_dict() for c in changes], indent=2))
    else:
        if not changes:
            print(f"no schema or SLA changes between {old.version or args.old} and {new.version or args.new}")
        for change in changes:
            print(f"{change.kind.upper():10} {change.description}")
    breaking = [c for c in changes if c.breaking]
    if breaking and not args.json:
        print(f"{len(breaking)} breaking change(s)", file=sys.stderr)
    return EXIT_INVALID if breaking else EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    from airflow_dq_contracts.cli.connections import spark_command

    locations = [args.input, args.results_table, args.quarantine_table, args.valid_table]
    connections = contextlib.ExitStack()
    try:
        # --conn-id → the Connect server; --storage-conn-id → the run's environment and Spark settings
        connections.enter_context(spark_command(args, locations))
    except ValueError as exc:
        print(f"dq-contracts run: {exc}", file=sys.stderr)
        return EXIT_INVALID
    with connections:
        from airflow_dq_contracts.engine.cli_run import run_from_cli
        from airflow_dq_contracts.runs.spec import spec_from_args

        return run_from_cli(args, spec_from_args)


def build_parser() -> argparse.ArgumentParser:
    """The ``dq-contracts`` parser with every subcommand (DESIGN §7: the surface is fixed)."""
    # allow_abbrev=False everywhere: a prefix must never silently stand for another option
    # (``--reference X`` used to be taken as ``--reference-time X``).
    parser = argparse.ArgumentParser(
        prog="dq-contracts", description="Data contracts as quality gates.", allow_abbrev=False
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p_val = sub.add_parser("validate", allow_abbrev=False, help="validate contract files; exit 1 on any error")
    p_val.add_argument("contracts", nargs="+", metavar="CONTRACT")
    p_val.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    p_val.set_defaults(func=_cmd_validate)

    p_diff = sub.add_parser("diff", allow_abbrev=False, help="breaking changes between two versions of a contract")
    p_diff.add_argument("old", metavar="OLD")
    p_diff.add_argument("new", metavar="NEW")
    p_diff.add_argument("--json", action="store_true", help="print the changes as JSON")
    p_diff.set_defaults(func=_cmd_diff)

    p_run = sub.add_parser("run", allow_abbrev=False, help="evaluate a contract on a local Spark session")
    p_run.add_argument("contract", metavar="CONTRACT")
    source = p_run.add_mutually_exclusive_group()
    source.add_argument("--input", metavar="PATH", help="dataset path (default: the contract's dataset)")
    source.add_argument("--table", metavar="NAME", help="catalog table name")
    p_run.add_argument(
        "--input-format",
        choices=DATASET_FORMATS,
        default=None,
        help="format of --input (default: the contract's, else delta)",
    )
    p_run.add_argument("--filter", metavar="SQL", help="SQL predicate scoping the run (e.g. a partition)")
    p_run.add_argument(
        "--reference-time",
        metavar="ISO8601",
        help="time freshness/completeness are measured against (default: now, UTC)",
    )
    p_run.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="NAME=PATH[:FORMAT]",
        help="read the contract's reference NAME from PATH (format: the declared one unless "
        "the text after the last ':' names a format); repeatable",
    )
    p_run.add_argument("--run-id", metavar="ID", help="run id; the same id twice replaces its results")
    p_run.add_argument("--results-table", metavar="PATH", help="Delta results table (path or table name)")
    p_run.add_argument(
        "--incremental",
        action="store_true",
        help="check only the rows new since the last run of this contract on this dataset (docs/incremental.md)",
    )
    p_run.add_argument(
        "--checkpoint",
        metavar="LOCATION",
        help="with --incremental: the results table the checked ranges are recorded in (default: --results-table)",
    )
    p_run.add_argument("--quarantine-table", metavar="PATH", help="Delta table for violating rows")
    p_run.add_argument("--valid-table", metavar="PATH", help="Delta table for the remaining valid rows")
    p_run.add_argument("--json-out", metavar="FILE", help="write the summary JSON here ('-' for stdout)")
    p_run.add_argument("--master", default=None, help="Spark master (default local[*])")
    server = p_run.add_mutually_exclusive_group()
    server.add_argument(
        "--remote",
        metavar="sc://HOST:PORT",
        help="run as a Spark Connect client of this server (no local Spark); a token in $DQ_CONTRACTS_CONNECT_TOKEN",
    )
    add_conn_id_argument(server)
    p_run.add_argument(
        "--connect-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --remote: fail when the server does not answer within this (default 30)",
    )
    p_run.add_argument(
        "--shared-storage",
        action="store_true",
        help="with --remote: this machine sees the output tables at the paths the server writes them "
        "(a shared volume): the results and registry are committed from here by delta-rs, much faster",
    )
    p_run.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="object-store setting for Spark and delta-rs (object_store names, e.g. AWS_ENDPOINT_URL=…), over "
        "the standard AWS_* environment; repeatable; values are never printed",
    )
    add_storage_conn_argument(p_run)
    p_run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark conf")
    p_run.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p_run.set_defaults(func=_cmd_run)

    add_jars_parser(sub)
    add_report_parser(sub)
    add_history_parser(sub)
    add_suggest_parser(sub)  # draft a contract from the data
    add_stream_parser(sub)  # check a contract on a stream
    register_interop(sub)  # import datahub|dataplex, export datahub
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dq-contracts`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
