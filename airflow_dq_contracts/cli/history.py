"""``dq-contracts history CONTRACT --results-table T [--days 90] [--json]``: which checks ever fire.

Reads the Delta results table with delta-rs (no Spark, no JVM): for each check of the contract,
over the ``--days`` before the newest reference time in the table — runs, failures, last
failure, the current baseline, and "never fired in N days" (retirement candidates, seed 003).

CONTRACT is a contract file (its baselines give the "current baseline" column, computed exactly
as the next run would) or just a contract name (then the newest run's expected bounds are shown).

Example::

    $ dq-contracts history contracts/orders.yaml --results-table /data/dq/results --days 365
    orders: 12 checks over 365 days up to 2024-05-02T00:00:00Z (results /data/dq/results)
      _table_/daily_volume        runs 365  failures 3  last failure 2024-04-07  baseline [41000, 205000]
      order_id/order_id_is_unique runs 365  failures 0  never fired in 364 days
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys

from airflow_dq_contracts.cli.connections import add_storage_conn_argument
from airflow_dq_contracts.results import format_time
from airflow_dq_contracts.storage.s3 import add_storage_option_argument

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_FAILED = 4


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``history`` on the ``dq-contracts`` sub-command parser."""
    parser = sub.add_parser("history", help="per check: runs, failures, last failure, baseline, never fired")
    parser.add_argument("contract", metavar="CONTRACT", help="contract file, or a contract name")
    parser.add_argument(
        "--results-table", required=True, metavar="PATH", help="Delta results table (path or URI; read with delta-rs)"
    )
    parser.add_argument(
        "--days", type=int, default=90, help="window, counted back from the newest reference time (default 90)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_storage_option_argument(parser)
    add_storage_conn_argument(parser)
    parser.set_defaults(func=run)


def _number(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:.6g}"


def run(args: argparse.Namespace) -> int:
    """The ``history`` command; returns the exit code (never a traceback)."""
    from airflow_dq_contracts.cli.connections import command_environment, resolve_storage
    from airflow_dq_contracts.contract import ContractValidationError, load_contract
    from airflow_dq_contracts.storage.locations import StoreError, TableLocation
    from airflow_dq_contracts.store.results import REPORT_COLUMNS, check_histories, open_results_store

    if args.days < 1:
        print("dq-contracts history: --days must be ≥ 1", file=sys.stderr)
        return EXIT_INVALID
    try:
        storage = resolve_storage(args, [args.results_table])  # --storage-conn-id, --storage-option, AWS_*
    except ValueError as exc:
        print(f"dq-contracts history: {exc}", file=sys.stderr)
        return EXIT_INVALID
    baselines = {}
    name = args.contract
    if os.path.exists(args.contract) or args.contract.endswith((".yaml", ".yml")):
        try:
            contract = load_contract(args.contract)
        except ContractValidationError as err:
            print(str(err), file=sys.stderr)
            return EXIT_INVALID
        name = contract.name
        baselines = {c.check_id: c.baseline for c in contract.all_checks() if c.baseline is not None}
    try:
        # The results table resolved once, with the options that reach it, and handed to the store.
        with command_environment(storage):
            where = TableLocation.resolve(args.results_table, storage_options=storage.options)
            rows = open_results_store(where).read_history(name, columns=REPORT_COLUMNS)
    except StoreError as exc:
        print(f"dq-contracts history: {storage.failure(exc, args.results_table)}", file=sys.stderr)
        return EXIT_FAILED
    histories = check_histories(rows, days=args.days, baselines=baselines)
    newest = max((r["reference_time"] for r in rows if r.get("reference_time") is not None), default=None)
    if args.json:
        report = {
            "contract": name,
            "results_table": args.results_table,
            "days": args.days,
            "newest_reference_time": format_time(newest),
            "checks": [h.to_dict() for h in histories],
        }
        print(json.dumps(report, indent=2, allow_nan=False))
        return EXIT_OK
    if not histories:
        print(f"{name}: no runs with a reference time in {args.results_table}")
        return EXIT_OK
    print(
        f"{name}: {len(histories)} checks over {args.days} days up to {format_time(newest)} "
        f"(results {args.results_table})"
    )
    width = max(len(h.check_id) for h in histories)
    for item in histories:
        parts = [f"runs {item.runs:>4}", f"failures {item.failures:>3}"]
        if item.last_failure is not None:
            parts.append(f"last failure {_day(item.last_failure)}")
        if item.never_fired_days is not None:
            parts.append(f"never fired in {item.never_fired_days} days")
        if item.baseline_min is not None or item.baseline_max is not None:
            parts.append(f"baseline [{_number(item.baseline_min)}, {_number(item.baseline_max)}]")
        elif item.baseline and item.baseline.startswith("learning"):
            parts.append(f"baseline {item.baseline}")
        dataset = f"  ({item.dataset})" if len({h.dataset for h in histories}) > 1 else ""
        print(f"  {item.check_id:<{width}}  " + "  ".join(parts) + dataset)
    return EXIT_OK


def _day(moment: dt.datetime) -> str:
    text = format_time(moment) or ""
    return text[:10] if text.endswith("T00:00:00Z") else text
