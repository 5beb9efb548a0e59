"""The ``spark-submit`` entry point: evaluate one contract on one dataset and write the Delta outputs.

Thin on purpose: argument parsing, contract decoding, and a call to
:func:`airflow_dq_contracts.engine.runner.run_contract`. No Airflow import (the job runs on Spark
nodes that have no Airflow).

The contract travels *inside the submission* — base64 text in ``--contract-b64`` (or a file shipped
with ``--files`` and named by ``--contract-file``) — so the driver never needs a path that only the
Airflow worker can see. It works unchanged in client and cluster deploy mode.

The job talks back on stdout with two single-line markers, which the operator's hook picks out of
the spark-submit output (in client mode the driver's stdout *is* that output)::

    DQ_CONTRACTS_DONE {"run_id": ..., "decision": ..., "row_count": ..., ...}
    DQ_CONTRACTS_ERROR {"kind": "invalid_contract" | "invalid_arguments" | "run_failed", "message": ...}

The authoritative result is the Delta results table (the operator reads it back); the markers
only carry the run-level facts and, on failure, the job's own error text. In standalone *cluster*
deploy mode the driver's stdout stays on the Spark worker, so the hook also passes
``--markers-out FILE`` (a file in a folder both sides see) and the job appends the same lines there.

Exit codes: 0 evaluated (whatever the decision — gating is the caller's call), 1 the run failed,
2 bad arguments or an invalid contract.

Example (what the operator submits)::

    spark-submit --py-files airflow_dq_contracts-<hash>.zip dq_contracts_job_<hash>.py \\
        --contract-b64 bmFtZTogb3JkZXJz... --contract-name contracts/orders.yaml \\
        --input /data/orders --input-format delta --filter "order_date = '2024-05-01'" \\
        --reference-time 2024-05-02T00:00:00Z --run-id dq-3f2a... \\
        --results-table /wh/dq_results --quarantine-table /wh/quarantine/orders
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import sys
import time
import traceback
from typing import Any, Sequence

# When this driver's Python began (epoch seconds): the start-up progress line measures from it.
PROCESS_STARTED = time.time()

DONE_MARKER = "DQ_CONTRACTS_DONE"
ERROR_MARKER = "DQ_CONTRACTS_ERROR"
EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_INVALID = 2
# A JVM exception's text can carry a whole stack trace: keep the head, which names the cause.
MAX_ERROR_CHARS = 4000


class JobArgumentError(ValueError):
    """Arguments that cannot describe a run (missing contract, undecodable text…)."""


def encode_contract(text: str) -> str:
    """Contract text → the ``--contract-b64`` argument.

    >>> decode_contract(encode_contract("name: orders\\n"))
    'name: orders\\n'
    """
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def decode_contract(value: str) -> str:
    """Inverse of :func:`encode_contract`; a clear error on garbage."""
    try:
        return base64.b64decode(value.encode("ascii"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise JobArgumentError(f"--contract-b64 is not base64 of UTF-8 text: {exc}") from None


def job_arguments(
    *,
    contract_b64: str | None = None,
    contract_file: str | None = None,
    contract_name: str | None = None,
    policy: dict[str, Any] | None = None,
    input_path: str | None = None,
    input_format: str | None = None,
    table: str | None = None,
    filter: str | None = None,  # noqa: A002 - the fixed public name of the option
    reference_time: str | None = None,
    run_id: str | None = None,
    results_table: str | None = None,
    quarantine_table: str | None = None,
    valid_table: str | None = None,
    dag_id: str | None = None,
    task_id: str | None = None,
    airflow_run_id: str | None = None,
    summary_out: str | None = None,
    markers_out: str | None = None,
    references: list[str] | None = None,
) -> list[str]:
    """The job's command-line arguments, built from keywords (the submitter's side of :func:`build_parser`).

    >>> job_arguments(contract_b64="bmFtZTogdA==", run_id="r1", filter="d = '2024-01-01'")
    ['--contract-b64=bmFtZTogdA==', "--filter=d = '2024-01-01'", '--run-id=r1']
    """
    pairs: list[tuple[str, Any]] = [
        ("--contract-b64", contract_b64), ("--contract-file", contract_file), ("--contract-name", contract_name),
        ("--policy-json", json.dumps(policy, sort_keys=True) if policy else None),
        ("--input", input_path), ("--table", table), ("--input-format", input_format), ("--filter", filter),
        ("--reference-time", reference_time), ("--run-id", run_id), ("--results-table", results_table),
        ("--quarantine-table", quarantine_table), ("--valid-table", valid_table), ("--dag-id", dag_id),
        ("--task-id", task_id), ("--airflow-run-id", airflow_run_id), ("--summary-out", summary_out),
        ("--markers-out", markers_out),
    ]
    out: list[str] = []
    for flag, value in pairs:
        if value is not None and value != "":
            # One "--flag=value" element: a value starting with "-" (a filter like "-1 < x") can
            # never be mistaken for an option; spark-submit passes application arguments verbatim.
            out.append(f"{flag}={value}")
    # NAME=PATH[:FORMAT] overrides of the contract's references, carried unchanged.
    out.extend(f"--reference={item}" for item in references or [])
    return out


def parse_marker(line: str) -> tuple[str, dict[str, Any]] | None:
    """(marker, payload) when ``line`` is one of the job's marker lines, else None.

    >>> parse_marker('DQ_CONTRACTS_DONE {"decision":"pass"}')
    ('DQ_CONTRACTS_DONE', {'decision': 'pass'})
    >>> parse_marker("26/01/01 INFO SparkContext: Running Spark") is None
    True
    """
    text = line.strip()
    for marker in (DONE_MARKER, ERROR_MARKER):
        if text.startswith(marker + " "):
            try:
                payload = json.loads(text[len(marker) + 1:])
            except json.JSONDecodeError:
                return None
            return (marker, payload) if isinstance(payload, dict) else None
    return None


def build_parser() -> argparse.ArgumentParser:
    """The job's command line (also documented in the module docstring)."""
    parser = argparse.ArgumentParser(prog="dq-contracts-job", description="Evaluate a data contract on Spark.",
                                     allow_abbrev=False)
    contract = parser.add_mutually_exclusive_group(required=True)
    contract.add_argument("--contract-b64", metavar="TEXT", help="contract YAML/JSON text, base64-encoded")
    contract.add_argument("--contract-file", metavar="PATH",
                          help="contract file: a path the driver can read, or the name of a file shipped "
                               "with spark-submit --files")
    parser.add_argument("--contract-name", metavar="NAME", help="file name used to locate contract errors")
    parser.add_argument("--policy-json", metavar="JSON", help="severity → action policy override (JSON)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--input", metavar="PATH", help="dataset path (default: the contract's dataset)")
    source.add_argument("--table", metavar="NAME", help="catalog table name")
    parser.add_argument("--input-format", default=None, help="format of --input (default: the contract's)")
    parser.add_argument("--filter", metavar="SQL", help="SQL predicate scoping the run")
    parser.add_argument("--reference-time", metavar="ISO8601", help="time freshness is measured against")
    parser.add_argument("--run-id", metavar="ID", help="run id; the same id twice replaces its results")
    parser.add_argument("--reference", action="append", default=[], metavar="NAME=PATH[:FORMAT]",
                        help="read the contract's reference NAME from PATH; repeatable")
    parser.add_argument("--results-table", metavar="TARGET")
    parser.add_argument("--quarantine-table", metavar="TARGET")
    parser.add_argument("--valid-table", metavar="TARGET")
    parser.add_argument("--dag-id")
    parser.add_argument("--task-id")
    parser.add_argument("--airflow-run-id")
    parser.add_argument("--summary-out", metavar="FILE", help="also write the summary JSON here (driver-local)")
    parser.add_argument("--markers-out", metavar="FILE",
                        help="also append the DONE/ERROR marker lines to this file (cluster deploy mode: the "
                             "submitter cannot see the driver's stdout)")
    return parser


def _shipped_file(name: str) -> str | None:
    """Find a file shipped with ``--files``: in the working directory (YARN), else in SparkFiles."""
    basename = os.path.basename(name)
    if os.path.isfile(basename):
        return os.path.abspath(basename)
    # SparkFiles needs a SparkContext; only start one when spark-submit launched us (the gateway
    # variables are set by its PythonRunner), never for a plain-Python call with a wrong path.
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    from pyspark import SparkFiles

    from airflow_dq_contracts.engine.session import get_spark

    get_spark(app_name="dq-contracts", local_tuning=False)
    candidate = SparkFiles.get(basename)
    return candidate if os.path.isfile(candidate) else None


def read_contract_text(args: argparse.Namespace) -> tuple[str, str]:
    """(contract text, file name for error locations) from the arguments."""
    if args.contract_b64 is not None:
        text = decode_contract(args.contract_b64)
        # load_contract reads a single line as a file name: keep the text a document.
        return (text if "\n" in text else text + "\n"), args.contract_name or "<contract>"
    path = args.contract_file
    found = path if os.path.isfile(path) else _shipped_file(path)
    if found is None:
        raise JobArgumentError(f"contract file {path!r} is neither readable on the driver nor shipped with --files")
    with open(found, encoding="utf-8") as handle:
        return handle.read(), args.contract_name or path


def _emit(marker: str, payload: dict[str, Any], copy_to: str | None = None) -> None:
    # One line, flushed: the hook reads the driver's stdout line by line, interleaved with Spark's log.
    line = f"{marker} {json.dumps(payload, separators=(',', ':'), default=str)}"
    print(line, flush=True)
    if copy_to:
        try:
            # One append of one line: a reader sees the whole line or nothing of it.
            with open(copy_to, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        except OSError as exc:
            # Best effort: the results table stays the authority; the submitter then reports the
            # driver's final state instead of the job's own words.
            print(f"dq-contracts-job: cannot write the marker file {copy_to}: {exc}", file=sys.stderr, flush=True)


def _progress(message: str) -> None:
    # Flushed at once: interleaved with Spark's own output in the task log, in order.
    print(f"[dq-contracts] {message}", flush=True)


def error_text(exc: BaseException) -> str:
    """The exception's own message, trimmed of JVM stack frames and capped in length."""
    text = str(exc).strip() or type(exc).__name__
    kept = [line for line in text.splitlines() if not line.lstrip().startswith("at ")]
    text = "\n".join(kept).strip()
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + " …(truncated)"
    name = type(exc).__name__
    return text if text.startswith(name) else f"{name}: {text}"


def run(args: argparse.Namespace) -> int:
    """Evaluate as the arguments say; print the markers; return the exit code."""
    from airflow_dq_contracts.contract import ContractValidationError, load_contract

    try:
        text, filename = read_contract_text(args)
        policy = json.loads(args.policy_json) if args.policy_json else None
        if policy is not None and not isinstance(policy, dict):
            raise JobArgumentError("--policy-json must be a JSON object (severity → action)")
        contract = load_contract(text, filename=filename, policy=policy)
    except (JobArgumentError, json.JSONDecodeError) as exc:
        _emit(ERROR_MARKER, {"kind": "invalid_arguments", "message": str(exc)}, args.markers_out)
        print(f"dq-contracts-job: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except ContractValidationError as exc:
        _emit(ERROR_MARKER, {"kind": "invalid_contract", "message": str(exc)}, args.markers_out)
        print(str(exc), file=sys.stderr)
        return EXIT_INVALID

    try:
        from airflow_dq_contracts.engine.runner import run_contract
        from airflow_dq_contracts.engine.session import get_spark, startup_line

        # Inside spark-submit the master, jars and conf come from the command line; local tuning
        # would be wrong on a cluster, so the submitter passes it explicitly when it wants it.
        session_started = time.time()
        spark = get_spark(app_name=f"dq-contracts:{contract.name}", local_tuning=False)
        _progress(startup_line(spark, PROCESS_STARTED, session_started))
        result = run_contract(
            spark,
            contract,
            input_path=args.input,
            input_format=args.input_format,
            table=args.table,
            filter=args.filter,
            reference_time=args.reference_time,
            run_id=args.run_id,
            results_table=args.results_table,
            quarantine_table=args.quarantine_table,
            valid_table=args.valid_table,
            dag_id=args.dag_id,
            task_id=args.task_id,
            airflow_run_id=args.airflow_run_id,
            progress=_progress,
            references=args.reference,
            contract_text=text,
        )
        summary = result.summary()
        if args.summary_out:
            with open(args.summary_out, "w", encoding="utf-8") as handle:
                json.dump(summary, handle, indent=2, default=str)
    except Exception as exc:  # noqa: BLE001 - every failure becomes one readable marker + exit 1
        traceback.print_exc()
        _emit(ERROR_MARKER, {"kind": "run_failed", "message": error_text(exc)}, args.markers_out)
        return EXIT_RUN_FAILED

    _emit(DONE_MARKER, {
        "run_id": summary["run_id"],
        "decision": summary["decision"],
        "status": summary["status"],
        "row_count": summary["row_count"],
        "checks": len(summary["checks"]),
        "quarantine": summary.get("quarantine"),
        "valid": summary.get("valid"),
        "results_table": summary.get("results_table"),
        "results_version": result.results_version,
        "started_at": summary["started_at"],
        "finished_at": summary["finished_at"],
    }, args.markers_out)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and run; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return EXIT_INVALID if exc.code else EXIT_OK
    return run(args)


if __name__ == "__main__":  # pragma: no cover - spark-submit goes through the bundle's launcher
    sys.exit(main())
