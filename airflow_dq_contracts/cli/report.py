"""``dq-contracts report``: write the HTML report of a run from the results table (no Spark).

Example::

    dq-contracts report --results-table /wh/dq_results --contract orders --days 30 -o report.html
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from airflow_dq_contracts.cli.connections import add_storage_conn_argument
from airflow_dq_contracts.storage.s3 import add_storage_option_argument

EXIT_OK = 0
EXIT_FAILED = 4


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``report`` subcommand on the ``dq-contracts`` parser."""
    parser = sub.add_parser("report", help="write a self-contained HTML report of a run from the results table")
    parser.add_argument("--results-table", required=True, metavar="PATH", help="Delta results table (path or URI)")
    parser.add_argument("--contract", required=True, metavar="NAME", help="contract name")
    parser.add_argument("--run-id", metavar="ID", help="run to report (default: the contract's latest)")
    parser.add_argument("--days", type=int, default=30, help="history shown in the trend charts (default 30)")
    parser.add_argument(
        "--quarantine-table",
        metavar="PATH",
        help="quarantine table for row samples (default: the one in the contract registry)",
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the HTML")
    add_storage_option_argument(parser)
    add_storage_conn_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build and write the report; one readable line on failure, never a traceback."""
    from airflow_dq_contracts.cli.connections import command_environment, resolve_storage
    from airflow_dq_contracts.report import load_report_data, render_report, write_report
    from airflow_dq_contracts.storage.locations import StoreError, TableLocation

    if args.days < 1:
        print("dq-contracts report: --days must be at least 1", file=sys.stderr)
        return 1
    try:  # --storage-conn-id, --storage-option, the AWS_* environment
        storage = resolve_storage(args, [args.results_table, args.quarantine_table, args.output])
    except ValueError as exc:
        print(f"dq-contracts report: {exc}", file=sys.stderr)
        return 1
    options = storage.options
    restore = contextlib.ExitStack()  # the environment as it was (no instance-metadata probe meanwhile)
    restore.enter_context(command_environment(storage))
    try:
        # The results table resolved once, with the options that reach it (the report reads it as given).
        where = TableLocation.resolve(args.results_table, storage_options=options)
        data = load_report_data(
            where,
            args.contract,
            run_id=args.run_id,
            days=args.days,
            quarantine_table=args.quarantine_table,
            storage_options=options,
        )
        page = render_report(data)
        location = write_report(page, args.output, storage_options=options)
    except (StoreError, OSError, ValueError) as exc:
        print(f"dq-contracts report: {storage.failure(exc, args.results_table)}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        restore.close()
    print(location)
    return EXIT_OK
