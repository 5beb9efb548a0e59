"""``dq-contracts stream``: check a contract on its dataset as a stream (DESIGN §10).

    dq-contracts stream CONTRACT [--checkpoint LOCATION] [--trigger available-now|INTERVAL]
        [--input PATH [--input-format F] | --table NAME] [--results-table T]
        [--quarantine-table Q] [--valid-table V] [--master M] [--conf K=V]

Row-level checks on every micro-batch (quarantine and valid rows appended exactly once), table-level
checks per event-time window of the contract's ``stream`` key, results per window in the results
table (:mod:`airflow_dq_contracts.engine.streams`, docs/streaming.md). ``--trigger available-now``
(the default) processes what is there and exits; an interval (``"30 seconds"``) runs until stopped.
``--checkpoint`` defaults to ``<folder of the results table>/_dq_checkpoints/<contract>/stream``.

Exit codes: 0 done · 1 invalid contract or arguments · 4 the stream failed.
"""

from __future__ import annotations

import argparse
import sys

from airflow_dq_contracts.contract.model import DATASET_FORMATS
from airflow_dq_contracts.contract.streaming import parse_duration

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_FAILED = 4


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``stream`` on the ``dq-contracts`` sub-command parser."""
    parser = sub.add_parser("stream", allow_abbrev=False, help="check a contract on its dataset as a stream")
    parser.add_argument("contract", metavar="CONTRACT")
    parser.add_argument("--checkpoint", metavar="LOCATION", help="the query's checkpoint and window state")
    parser.add_argument(
        "--trigger",
        default="available-now",
        metavar="available-now|INTERVAL",
        help="available-now (default: process what is there, then stop) or an interval like '30 seconds'",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--input", metavar="PATH", help="dataset path (default: the contract's dataset)")
    source.add_argument("--table", metavar="NAME", help="catalog table name")
    parser.add_argument("--input-format", choices=DATASET_FORMATS, default=None, help="format of --input")
    parser.add_argument("--results-table", metavar="PATH", help="Delta results table (one run per window)")
    parser.add_argument("--quarantine-table", metavar="PATH", help="Delta table for violating rows")
    parser.add_argument("--valid-table", metavar="PATH", help="Delta table for the valid rows")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark conf")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(func=_cmd_stream)


def _cmd_stream(args: argparse.Namespace) -> int:
    from airflow_dq_contracts.contract import ContractValidationError, load_contract

    def say(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    try:
        contract = load_contract(args.contract)
    except ContractValidationError as err:
        for issue in err.issues:
            print(str(issue), file=sys.stderr)
        return EXIT_INVALID
    if args.trigger != "available-now" and not parse_duration(args.trigger):
        print(
            f"dq-contracts stream: --trigger must be available-now or an interval like '30 seconds', got {args.trigger!r}",
            file=sys.stderr,
        )
        return EXIT_INVALID
    from airflow_dq_contracts.engine.streams import default_checkpoint

    checkpoint = args.checkpoint or (default_checkpoint(args.results_table, contract) if args.results_table else None)
    if not checkpoint:
        print(
            "dq-contracts stream: give --checkpoint (or --results-table, whose folder holds the default)",
            file=sys.stderr,
        )
        return EXIT_INVALID
    from airflow_dq_contracts.engine.cli_run import start_spark
    from airflow_dq_contracts.engine.streams import run_stream

    try:
        spark, started = start_spark(args, contract.name, say)
    except Exception as exc:  # noqa: BLE001 - why Spark did not start, in its words
        print(f"dq-contracts stream: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        run_stream(
            spark,
            contract,
            checkpoint=checkpoint,
            trigger=args.trigger,
            results_table=args.results_table,
            quarantine_table=args.quarantine_table,
            valid_table=args.valid_table,
            input_path=args.input,
            input_format=args.input_format,
            table=args.table,
            progress=say,
        )
    except Exception as exc:  # noqa: BLE001 - the query's failure, one line
        print(f"dq-contracts stream: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if started:
            spark.stop()
    return EXIT_OK
