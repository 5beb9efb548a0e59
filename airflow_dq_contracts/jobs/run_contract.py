"""The ``spark-submit`` entry point: evaluate one contract on one dataset and write the Delta outputs.

Thin on purpose: it reads the run's :class:`~airflow_dq_contracts.runspec.RunSpec` once, loads its
contract once, and calls :func:`airflow_dq_contracts.engine.runner.run_contract` with the spec. No
Airflow import (the job runs on Spark nodes that have no Airflow).

Everything — the contract text included — travels *inside the submission* as one argument:
``--spec=<base64 JSON>``, or ``--spec-file=NAME`` for a large spec shipped with ``--files`` — so the
driver never needs a path that only the Airflow worker can see. It works unchanged in client and
cluster deploy mode.

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

Example (what the operator submits; the spec built by
:meth:`~airflow_dq_contracts.runspec.RunSpec.job_arguments`)::

    spark-submit --py-files airflow_dq_contracts-<hash>.zip dq_contracts_job_<hash>.py \\
        --spec=eyJ2ZXJzaW9uIjoxLCJjb250cmFjdF90ZXh0Ijoi...
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_dq_contracts.jobs.markers import DONE_MARKER, ERROR_MARKER, SUITE_KEY

if TYPE_CHECKING:
    from airflow_dq_contracts.engine.suite import SuiteOutcome
    from airflow_dq_contracts.results import ContractResult
    from airflow_dq_contracts.runspec import RunSpec, SuiteSpec

# The package's other modules are imported where they are used: this module imports with the standard
# library alone (a driver that lacks a dependency still gets a marker saying so, not an ImportError).

# When this driver's Python began (epoch seconds): the start-up progress line measures from it.
PROCESS_STARTED = time.time()

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_INVALID = 2
# A JVM exception's text can carry a whole stack trace: keep the head, which names the cause.
MAX_ERROR_CHARS = 4000


def build_parser() -> argparse.ArgumentParser:
    """The job's command line: the run's :class:`~airflow_dq_contracts.runspec.RunSpec`, and the marker file.

    ``--markers-out`` is the submitter's own addition (standalone cluster mode appends it to the
    arguments it was given); it wins over the spec's ``markers_out``.
    """
    from airflow_dq_contracts.runspec import SPEC_FILE_OPTION, SPEC_OPTION

    parser = argparse.ArgumentParser(
        prog="dq-contracts-job", description="Evaluate a data contract on Spark.", allow_abbrev=False
    )
    spec = parser.add_mutually_exclusive_group(required=True)
    spec.add_argument(SPEC_OPTION, dest="spec", metavar="BASE64", help="the run's spec: base64 of its JSON")
    spec.add_argument(
        SPEC_FILE_OPTION,
        dest="spec_file",
        metavar="PATH",
        help="the run's spec as a JSON file: a path the driver can read, or the name of a file "
        "shipped with spark-submit --files",
    )
    parser.add_argument(
        "--markers-out",
        metavar="FILE",
        help="also append the DONE/ERROR marker lines to this file (cluster deploy mode: the "
        "submitter cannot see the driver's stdout)",
    )
    # Spark Connect transport (hooks/spark_connect.py): this process is the Connect client; the token
    # comes in $DQ_CONTRACTS_CONNECT_TOKEN, never on the command line.
    parser.add_argument("--remote", metavar="sc://HOST:PORT", help="run as a Spark Connect client of this server")
    parser.add_argument(
        "--connect-timeout", type=float, metavar="SECONDS", help="fail when the server does not answer within this"
    )
    parser.add_argument("--connection", metavar="NAME", help="the Airflow connection's id, for error messages")
    parser.add_argument(
        "--shared-storage",
        action="store_true",
        help="with --remote: this process sees the output tables at the paths the server writes them "
        "(the operator's read-back needs it): results and registry are committed here by delta-rs",
    )
    return parser


def _run_failed(exc: BaseException, markers_out: str | None) -> int:
    """One readable ERROR marker + exit 1 for a failed run, or for the Connect job's stop on SIGTERM
    (engine/connect_session.py's ``RunInterrupted``, a BaseException); any other BaseException is re-raised."""
    if isinstance(exc, Exception):
        traceback.print_exc()
        message = error_text(exc)
    else:
        module = sys.modules.get("airflow_dq_contracts.engine.connect_session")
        if module is None or not isinstance(exc, module.RunInterrupted):
            raise exc
        message = str(exc)
    _emit(ERROR_MARKER, {"kind": "run_failed", "message": message}, markers_out)
    return EXIT_RUN_FAILED


def _shared_storage(args: argparse.Namespace | None) -> bool:
    """``--shared-storage`` with ``--remote``: this client sees the server's output paths."""
    return bool(getattr(args, "remote", None) and getattr(args, "shared_storage", False))


def _session_settings(spark: Any, args: argparse.Namespace | None) -> None:
    """With ``--remote``: the operator's ``spark_conf`` (passed by environment) set on the Connect session."""
    if not getattr(args, "remote", None):
        return  # spark-submit applied them with --conf
    from airflow_dq_contracts.engine.connect_session import apply_session_conf, session_conf_from_env

    for note in apply_session_conf(spark, session_conf_from_env()):
        _progress(note)


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


def read_spec(args: argparse.Namespace) -> RunSpec | SuiteSpec:
    """The run's spec — or a suite of them — from the parsed arguments (inline, or the file);
    :class:`RunSpecError` if unreadable."""
    from airflow_dq_contracts.runspec import SPEC_FILE_OPTION, RunSpecError, decode_argument, read_document

    if args.spec is not None:
        return read_document(decode_argument(args.spec))
    path = args.spec_file
    found = path if os.path.isfile(path) else _shipped_file(path)
    if found is None:
        raise RunSpecError(
            f"spec file {path!r} is neither readable on the driver nor shipped with --files", field=SPEC_FILE_OPTION
        )
    try:
        with open(found, encoding="utf-8") as handle:
            return read_document(handle.read())
    except (OSError, UnicodeError) as exc:
        raise RunSpecError(f"cannot read {found}: {exc}", field=SPEC_FILE_OPTION) from None


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
    """Evaluate the run the spec describes; print the markers; return the exit code."""
    from airflow_dq_contracts.contract import ContractValidationError, load_contract
    from airflow_dq_contracts.runspec import RunSpecError, SuiteSpec

    markers_out = args.markers_out
    try:
        spec = read_spec(args)
        if isinstance(spec, SuiteSpec):  # several contracts, one application: engine/suite.py
            return run_suite(spec, markers_out, args)
        markers_out = markers_out or spec.markers_out
        if spec.contract_text is None:
            raise RunSpecError("the spec carries no contract text", field="contract_text")
        contract = load_contract(
            spec.contract_text,
            filename=spec.contract_origin,
            policy=dict(spec.policy) if spec.policy is not None else None,
        )
        # The spec crossed a process boundary: the one check of it against its contract (its dataset
        # resolved), before Spark.
        spec = spec.resolve(contract)
    except RunSpecError as exc:
        _emit(ERROR_MARKER, {"kind": "invalid_arguments", "message": str(exc)}, markers_out)
        print(f"dq-contracts-job: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except ContractValidationError as exc:
        _emit(ERROR_MARKER, {"kind": "invalid_contract", "message": str(exc)}, markers_out)
        print(str(exc), file=sys.stderr)
        return EXIT_INVALID

    try:
        from airflow_dq_contracts.engine.connect_session import ConnectUnreachable, job_session, run_scope
        from airflow_dq_contracts.engine.runner import run_contract
        from airflow_dq_contracts.engine.session import startup_line
        from airflow_dq_contracts.store.sinks import run_locations
        from airflow_dq_contracts.store.spark_remote import SessionCapabilities, catalog_locations

        # Inside spark-submit the master, jars and conf come from the command line; local tuning
        # would be wrong on a cluster, so the submitter passes it explicitly when it wants it.
        # With --remote this process is a Spark Connect client instead (engine/connect_session.py).
        session_started = time.time()
        try:
            spark = job_session(f"dq-contracts:{contract.name}", args.remote, args.connect_timeout, args.connection)
        except ConnectUnreachable as exc:
            _emit(ERROR_MARKER, {"kind": "submit_failed", "message": str(exc)}, markers_out)
            return EXIT_RUN_FAILED
        _progress(startup_line(spark, PROCESS_STARTED, session_started))
        capabilities = SessionCapabilities.of(spark, shared_storage=_shared_storage(args))
        _session_settings(spark, args)
        with run_scope(spark, spec.run_id, remote=capabilities.remote):
            result = run_contract(spark, contract, spec, progress=_progress, capabilities=capabilities)
            # Where the catalog put the named tables: the Airflow side reads them there (store/catalog_names.py).
            locations = catalog_locations(
                spark,
                [spec.table, spec.results_table, spec.quarantine_table, spec.valid_table],
                known=run_locations(spark, result.run_id, capabilities),  # the writes' lookups, not asked again
            )
        summary = result.summary()
        if spec.summary_out:
            with open(spec.summary_out, "w", encoding="utf-8") as handle:
                json.dump(summary, handle, indent=2, default=str)
    except BaseException as exc:  # noqa: BLE001 - failures and the Connect stop become a marker; the rest re-raised
        return _run_failed(exc, markers_out)

    _emit(DONE_MARKER, {**done_payload(summary, result), "locations": locations}, markers_out)
    return EXIT_OK


def done_payload(summary: dict[str, Any], result: ContractResult) -> dict[str, Any]:
    """What the DONE marker says of one evaluated run (the submitter cross-checks it with the table)."""
    return {
        "run_id": summary["run_id"],
        "decision": summary["decision"],
        "status": summary["status"],
        "row_count": summary["row_count"],
        "checks": len(summary["checks"]),
        "quarantine": summary.get("quarantine"),
        "valid": summary.get("valid"),
        "results_table": summary.get("results_table"),
        "results_version": result.results_version,
        "read": result.source_read,
        "started_at": summary["started_at"],
        "finished_at": summary["finished_at"],
    }


def run_suite(suite: SuiteSpec, markers_out: str | None, args: argparse.Namespace | None = None) -> int:
    """Evaluate every run of ``suite`` in this one application; ONE DONE marker lists each run's outcome.

    A run that fails (its input missing, its contract invalid) is that run's ``error`` entry in the
    marker (``{"run_id", "contract", "error": {"kind", "message"}}``), never the others' failure:
    the job exits 0 once every run was attempted. Only what concerns the whole application (Spark
    did not start) is an ERROR marker and exit 1.
    """
    try:
        from airflow_dq_contracts.engine.connect_session import job_session, run_scope
        from airflow_dq_contracts.engine.session import startup_line
        from airflow_dq_contracts.engine.suite import load_suite, run_suite_outcomes
        from airflow_dq_contracts.store.spark_remote import SessionCapabilities

        outcomes = load_suite(suite)
        session_started = time.time()
        # --remote: a Spark Connect client (engine/connect_session.py), as for one run.
        remote = getattr(args, "remote", None)
        spark = job_session(
            f"dq-contracts:suite of {len(outcomes)}",
            remote,
            getattr(args, "connect_timeout", None),
            getattr(args, "connection", None),
        )
        _progress(startup_line(spark, PROCESS_STARTED, session_started))
        capabilities = SessionCapabilities.of(spark, shared_storage=_shared_storage(args))
        _session_settings(spark, args)
        with run_scope(spark, outcomes[0].spec.run_id if outcomes else None, remote=capabilities.remote):
            run_suite_outcomes(spark, outcomes, progress=_progress, capabilities=capabilities)
        entries = [_suite_entry(outcome) for outcome in outcomes]
    except BaseException as exc:  # noqa: BLE001 - failures and the Connect stop become a marker; the rest re-raised
        return _run_failed(exc, markers_out)
    _emit(DONE_MARKER, {SUITE_KEY: entries}, markers_out)
    return EXIT_OK


def _suite_entry(outcome: SuiteOutcome) -> dict[str, Any]:
    if outcome.result is None:
        error = outcome.error or RuntimeError("not evaluated")
        return {
            "run_id": outcome.spec.run_id,
            "contract": outcome.contract_name,
            "error": {"kind": outcome.error_kind, "message": error_text(error)},
        }
    summary = outcome.result.summary()
    if outcome.spec.summary_out:
        with open(outcome.spec.summary_out, "w", encoding="utf-8") as handle:
            json.dump(summary, handle, indent=2, default=str)
    return done_payload(summary, outcome.result)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and run; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return EXIT_INVALID if exc.code else EXIT_OK
    return run(args)


if __name__ == "__main__":  # pragma: no cover - spark-submit goes through the bundle's launcher
    # ``python -m`` is the Spark Connect transport's entry (hooks/spark_connect.py): by now the run's
    # session is released and its markers are out, so the interpreter's teardown of pandas, pyarrow
    # and gRPC (a few tenths of a second of a short task) is skipped.
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
