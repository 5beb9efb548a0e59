"""``dq-contracts suggest``: draft a contract from the data (and its history) — DESIGN §9.

    dq-contracts suggest --input PATH [--input-format F] [--input-option KEY=VALUE …] | --table NAME
        [--filter SQL] [--results-table T] [--sample FRACTION] [-o FILE] [--format native|odcs]
        [--name NAME] [--partition-column C] [--reference-time ISO8601] [--master M] [--conf K=V]

Reads the input exactly as ``dq-contracts run`` does (``engine.runner.read_dataset``: the filter
pushed down, CSV with a header and inferred types, ``--input-option``s as the reader's options and
the draft's ``dataset.options``), profiles it once (:mod:`airflow_dq_contracts.engine.suggest`) and
writes the draft — YAML with the evidence in comments, or an ODCS v3 document — to ``-o FILE`` or
stdout. A Delta input's partition columns are read from its log (delta-rs); ``--partition-column``
names them for other inputs. The draft is validated before it is written.

Exit codes: 0 written · 1 invalid arguments · 4 the input could not be read or profiled.

Example::

    $ dq-contracts suggest --input /data/orders --filter "order_date = '2024-05-01'" -o contracts/orders.yaml
    $ dq-contracts validate contracts/orders.yaml
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

from airflow_dq_contracts.cli.connections import add_conn_id_argument, add_storage_conn_argument
from airflow_dq_contracts.contract.counts import count_checks
from airflow_dq_contracts.contract.model import DATASET_FORMATS

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_FAILED = 4


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``suggest`` on the ``dq-contracts`` sub-command parser."""
    parser = sub.add_parser(
        "suggest", allow_abbrev=False, help="draft a contract from the data: types, keys, values, ranges, SLA"
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", metavar="PATH", help="dataset path")
    source.add_argument("--table", metavar="NAME", help="catalog table name")
    parser.add_argument(
        "--input-format", choices=DATASET_FORMATS, default=None, help="format of --input (default delta)"
    )
    parser.add_argument(
        "--input-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a reader option of --input, e.g. sep=; (repeatable; written into the draft's dataset.options)",
    )
    parser.add_argument("--filter", metavar="SQL", help="SQL predicate: profile only these rows (e.g. one partition)")
    parser.add_argument(
        "--results-table", metavar="PATH", help="results table of earlier runs: the volume band comes from its history"
    )
    parser.add_argument(
        "--sample", type=float, metavar="FRACTION", help="profile a random fraction (0 < f < 1); default: every row"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the draft here (default: stdout)")
    parser.add_argument("--format", choices=("native", "odcs"), default="native", help="native YAML or ODCS v3")
    parser.add_argument("--name", help="contract name (default: the table name or the input's last path part)")
    parser.add_argument(
        "--partition-column",
        action="append",
        default=[],
        metavar="COLUMN",
        help="a partition column (repeatable; a Delta input's own are found in its log)",
    )
    parser.add_argument(
        "--reference-time", metavar="ISO8601", help="what freshness is measured against (default: now, UTC)"
    )
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    add_conn_id_argument(parser)
    add_storage_conn_argument(parser)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark conf")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(func=run)


def default_name(input_path: str | None, table: str | None) -> str:
    """The contract name a source suggests: the table's last part, or the path's last directory.

    >>> default_name("/data/silver/orders/", None), default_name(None, "main.silver.orders")
    ('orders', 'orders')
    """
    if table:
        return table.split(".")[-1].strip("`") or "suggested"
    base = os.path.basename(os.path.normpath(input_path or "")) or "suggested"
    return os.path.splitext(base)[0] or "suggested"


def delta_partition_columns(path: str) -> list[str]:
    """The partition columns in a Delta table's log (delta-rs), or [] when it is not a Delta table."""
    from airflow_dq_contracts.store import StoreError, open_table

    try:
        table = open_table(path, what="input")
    except (StoreError, OSError):
        return []
    with contextlib.suppress(Exception):  # an unreadable log is read by Spark, which will say why
        return list(table.metadata().partition_columns)
    return []


def input_options(items: list[str]) -> dict[str, str]:
    """``--input-option KEY=VALUE`` pairs as a mapping (the last of a repeated key wins).

    >>> input_options(["sep=;", "nullValue=NA", "quote=="])
    {'sep': ';', 'nullValue': 'NA', 'quote': '='}
    """
    options: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"--input-option expects KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    return options


def _problem(args: argparse.Namespace) -> str | None:
    try:
        input_options(args.input_option)
    except ValueError as exc:
        return str(exc)
    if args.sample is not None and not 0 < args.sample < 1:
        return f"--sample must be a fraction between 0 and 1 (exclusive), got {args.sample:g}"
    if args.reference_time:
        from airflow_dq_contracts.timeutil import parse_time

        try:
            parse_time(args.reference_time)
        except ValueError as exc:
            return f"--reference-time: {exc}"
    return None


def run(args: argparse.Namespace) -> int:
    """``dq-contracts suggest``; returns the exit code, never a traceback."""
    problem = _problem(args)
    if problem:
        print(f"dq-contracts suggest: {problem}", file=sys.stderr)
        return EXIT_INVALID

    def say(message: str) -> None:
        if not args.quiet:
            print(f"[dq-contracts] {message}", file=sys.stderr, flush=True)

    from airflow_dq_contracts.cli.connections import spark_command
    from airflow_dq_contracts.engine.suggest.cli_run import suggest_from_cli

    connections = contextlib.ExitStack()  # --conn-id, --storage-conn-id: resolved once, undone at the end
    try:
        connections.enter_context(spark_command(args, [args.input, args.results_table]))
    except ValueError as exc:
        print(f"dq-contracts suggest: {exc}", file=sys.stderr)
        return EXIT_INVALID
    with connections:
        return _suggest(args, say, suggest_from_cli)


def _suggest(args: argparse.Namespace, say: Any, suggest_from_cli: Any) -> int:
    name = args.name or default_name(args.input, args.table)
    partitions = list(args.partition_column)
    fmt = (args.input_format or "delta").lower()
    if args.input and fmt == "delta" and not partitions:
        partitions = delta_partition_columns(args.input)
    try:
        suggestion = suggest_from_cli(
            args,
            name=name,
            input_format=fmt,
            partition_by=partitions,
            say=say,
            input_options=input_options(args.input_option),
        )
    except ValueError as exc:  # the run cannot be described (bad filter, unknown partition column)
        print(f"dq-contracts suggest: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except RuntimeError as exc:  # the input could not be read or profiled
        print(f"dq-contracts suggest: {exc}", file=sys.stderr)
        return EXIT_FAILED
    text = suggestion.yaml
    if args.format == "odcs":
        from airflow_dq_contracts.contract import ContractValidationError
        from airflow_dq_contracts.interop.odcs import export_odcs

        try:
            text = export_odcs(suggestion.contract)
        except ContractValidationError as err:
            for issue in err.issues:
                print(f"dq-contracts suggest --format odcs: {issue}", file=sys.stderr)
            return EXIT_FAILED
    if args.output:
        try:
            # the folder is created as `import odcs -o DIR` creates its own (contracts/ of a new project)
            os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            print(f"dq-contracts suggest: cannot write {args.output!r}: {exc.strerror}", file=sys.stderr)
            return EXIT_FAILED
        say(f"draft contract {name!r} written to {args.output} ({_summary(suggestion)})")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _summary(suggestion: Any) -> str:
    profile = suggestion.profile
    return f"{profile.rows:,} rows profiled in {len(profile.passes)} passes; {count_checks(suggestion.contract)}"
