"""``dq-contracts run`` (DESIGN §7): the command line → one :class:`~airflow_dq_contracts.runspec.RunSpec` → a run.

The CLI half of the engine: :func:`run_from_cli` has the run's spec built from the parsed arguments
once by the function it is given (``dq-contracts`` passes :func:`airflow_dq_contracts.runs.spec.spec_from_args`,
the spec building the operator shares), validated once against the contract, starts a local SparkSession (its log in a file, progress lines on stderr) and calls
:func:`~airflow_dq_contracts.engine.runner.run_contract`; the summary JSON goes to ``--json-out``.
Only ``airflow_dq_contracts.cli`` imports this module (never the Airflow side).

Exit codes: 0 pass or quarantine · 1 invalid contract or arguments · 3 gate · 4 the run failed.

Example::

    from airflow_dq_contracts.cli.main import build_parser
    code = run_from_cli(build_parser().parse_args(["run", "orders.yaml", "--input", "/data/orders"]), spec_from_args)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.contract.counts import count_checks
from airflow_dq_contracts.contract.model import Contract
from airflow_dq_contracts.contract.odcs.objects import load_contracts
from airflow_dq_contracts.contract.validators import slug
from airflow_dq_contracts.results import DECISION_GATE, ContractResult, error_summary, make_run_id
from airflow_dq_contracts.runspec import RunSpec, RunSpecError
from airflow_dq_contracts.runtime.jars import JarResolutionError
from airflow_dq_contracts.storage.s3 import mentions_s3, parse_storage_options, storage_environment
from airflow_dq_contracts.store.spark_remote import SessionCapabilities
from airflow_dq_contracts.timeutil import format_time, utcnow

from .connect_session import (
    DEFAULT_CONNECT_TIMEOUT,
    ConnectUnreachable,
    apply_session_conf,
    redact,
    remote_session,
)
from .evaluator import first_line
from .runner import DatasetError, Progress, run_contract
from .session import get_spark
from .suite import SuiteOutcome, run_suite_outcomes

if TYPE_CHECKING:
    import datetime as dt

# Exit codes of ``dq-contracts run`` (the same as airflow_dq_contracts.cli.main, which imports no Spark).
EXIT_OK = 0
EXIT_INVALID = 1
EXIT_GATE = 3
EXIT_RUN_FAILED = 4

#: How the command line names a spec field in its messages.
CLI_OPTIONS = {
    "reference_time": "--reference-time",
    "references": "--reference",
    "input_format": "--input-format",
    "filter": "--filter",
    "run_id": "--run-id",
}


def _cli_message(exc: RunSpecError) -> str:
    """The error in the command line's words (``--reference-time: …`` rather than ``reference_time: …``)."""
    option = CLI_OPTIONS.get(exc.field or "")
    return f"{option}: {exc.reason}" if option else str(exc)


@contextlib.contextmanager
def _jvm_output_to(log_path: str) -> Iterator[None]:
    """Point this process's stdout/stderr at ``log_path`` while the Spark JVM starts.

    The JVM inherits the file descriptors at launch, so Ivy's resolution report, log4j's start-up
    warnings and every later Spark log line go to the file instead of the user's terminal; Python
    gets its own descriptors back as soon as the session exists.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    target = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def _conf_pairs(items: list[str] | None) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RunSpecError(f"--conf expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return ""


def _start_spark(
    args: argparse.Namespace, contract: Contract, say: Progress, spec: RunSpec | None = None
) -> tuple[SparkSession, bool]:
    """The session to run on and whether we started it (an active one is reused, never stopped).

    A run with a location on S3 gets the ``s3a`` filesystem (jars, and the standard AWS_* environment's
    endpoint settings); a run of a Kafka dataset gets Spark's Kafka source.
    """
    conf = _conf_pairs(getattr(args, "conf", None))
    master = getattr(args, "master", None) or "local[*]"
    remote = getattr(args, "remote", None)
    if remote:  # --remote: a Spark Connect client, no local JVM (engine/connect_session.py)
        timeout = getattr(args, "connect_timeout", None)
        try:
            spark = remote_session(remote, DEFAULT_CONNECT_TIMEOUT if timeout is None else timeout)
        except ConnectUnreachable as exc:
            raise DatasetError(str(exc)) from None
        say(f"spark: Spark Connect session on {redact(remote)}")
        for note in apply_session_conf(spark, conf):  # --conf: the session's runtime settings
            say(note)
        return spark, True
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    handle, log_path = tempfile.mkstemp(prefix="dq-contracts-spark-", suffix=".log")
    os.close(handle)
    began = time.perf_counter()
    try:
        with _jvm_output_to(log_path):
            spark = get_spark(
                app_name=f"dq-contracts:{contract.name}",
                master=master,
                conf=conf,
                s3=mentions_s3(spec, contract, os.environ.get("DQ_CONTRACTS_WAREHOUSE"), getattr(args, "input", None)),
                kafka=(spec.source.format if spec and spec.source else contract.dataset.format) == "kafka",
            )
    except JarResolutionError as exc:  # its whole text: what failed and the offline route
        raise DatasetError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - report why Spark did not start, with its own words
        raise DatasetError(
            f"Spark did not start ({first_line(exc)}); last lines of {log_path}:\n{_tail(log_path)}"
        ) from None
    say(f"spark: {master} session in {time.perf_counter() - began:.1f} s (Spark log: {log_path})")
    return spark, True


def start_spark(args: argparse.Namespace, name: str, say: Progress) -> tuple[SparkSession, bool]:
    """The local session another ``dq-contracts`` command (``suggest``) runs on, started as ``run`` starts it.

    ``args`` gives ``--master`` and ``--conf``; returns (session, whether it was started here: stop it then).
    """
    return _start_spark(args, load_contract({"name": name}), say)


def _print_outcome(result: ContractResult, out: Any) -> None:
    counts = result.counts()
    print(
        f"{result.contract_name}: decision {result.decision} (status {result.status}; "
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} error; "
        f"{result.row_count:,} rows; run {result.run_id})",
        file=out,
    )
    for record in result.checks:
        if record.status != "passed":
            print(
                f"  {record.status.upper():6} {record.severity} {record.action:10} {record.check_id}: {record.message}",
                file=out,
            )


def run_from_cli(args: argparse.Namespace, spec_of: Callable[[argparse.Namespace, Contract], RunSpec]) -> int:
    """``dq-contracts run`` (DESIGN §7). Returns the exit code; never lets a traceback through.

    ``spec_of`` builds the run's spec from ``args`` and the contract (raising ``RunSpecError``).

    0 pass or quarantine · 1 invalid contract or arguments · 3 gate · 4 the run failed.
    """
    quiet = bool(getattr(args, "quiet", False))
    json_out = getattr(args, "json_out", None)

    def say(message: str) -> None:
        if not quiet:
            print(f"[dq-contracts] {message}", file=sys.stderr, flush=True)

    try:
        contracts = load_contracts(args.contract)  # an ODCS document with several objects: one suite
    except ContractValidationError as err:
        for issue in err.issues:
            print(str(issue), file=sys.stderr)
        return EXIT_INVALID
    if len(contracts) > 1:
        return _run_many(args, spec_of, contracts, say)
    contract = contracts[0][1]
    try:
        # Spark (its JVM inherits them) and delta-rs read object-store settings from this process's environment.
        storage = parse_storage_options(getattr(args, "storage_option", None))
    except ValueError as exc:
        print(f"dq-contracts run: {exc}", file=sys.stderr)
        return EXIT_INVALID
    spark: SparkSession | None = None
    started = False
    restore = contextlib.ExitStack()  # the environment as it was, once the run is over
    restore.enter_context(storage_environment(storage))
    try:
        spec = spec_of(args, contract)
        _conf_pairs(getattr(args, "conf", None))
        say(f"contract {contract.name} {contract.version or ''}".rstrip() + f": {count_checks(contract)}")
        spark, started = _start_spark(args, contract, say, spec)
        # What the session can do, told once here (--remote, --shared-storage) and handed down.
        shared = bool(getattr(args, "remote", None) and getattr(args, "shared_storage", False))
        capabilities = SessionCapabilities.of(spark, shared_storage=shared)
        result = run_contract(spark, contract, spec, progress=say, capabilities=capabilities)
    except RunSpecError as exc:
        print(f"dq-contracts run: {_cli_message(exc)}", file=sys.stderr)
        return EXIT_INVALID
    except DatasetError as exc:
        print(f"dq-contracts run: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except Exception as exc:  # noqa: BLE001 - SinkError, Spark failures: one readable line, no traceback
        print(f"dq-contracts run: failed: {first_line(exc, limit=2000)}", file=sys.stderr)
        return EXIT_RUN_FAILED
    finally:
        if spark is not None and started:
            with contextlib.suppress(Exception):
                spark.stop()
        restore.close()

    if not _write_summary(result.summary(), json_out, say):
        return EXIT_RUN_FAILED
    if not quiet:
        # With the JSON on stdout, the human summary goes to stderr so the JSON stays parseable.
        _print_outcome(result, sys.stderr if json_out == "-" else sys.stdout)
    return EXIT_GATE if result.decision == DECISION_GATE else EXIT_OK


def _write_summary(summary: dict[str, Any], json_out: str | None, say: Progress) -> bool:
    """The summary JSON to ``--json-out`` (``-``: stdout); False when the file cannot be written."""
    text = json.dumps(summary, indent=2, allow_nan=False)
    if json_out == "-":
        print(text)
    elif json_out:
        try:
            with open(json_out, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
        except OSError as exc:
            print(f"dq-contracts run: cannot write --json-out {json_out!r}: {exc.strerror}", file=sys.stderr)
            return False
        say(f"summary written to {json_out}")
    return True


# --------------------------------------------------------------------------------------- several contracts

#: The placeholder a per-contract output table carries when one file holds several contracts.
CONTRACT_PLACEHOLDER = "{contract}"
_DECISION_RANK = {"pass": 0, "quarantine": 1, DECISION_GATE: 2}


def _member_args(args: argparse.Namespace, contract: Contract) -> argparse.Namespace:
    """The run's arguments for one contract of several: its own run id and output tables."""
    member = argparse.Namespace(**vars(args))
    for name in ("quarantine_table", "valid_table"):
        value = getattr(args, name, None)
        setattr(member, name, value.replace(CONTRACT_PLACEHOLDER, slug(contract.name)) if value else None)
    if getattr(args, "run_id", None):
        member.run_id = make_run_id(args.run_id, contract.name)  # deterministic: the same id again replaces
    return member


def _suite_arguments(args: argparse.Namespace, count: int) -> str | None:
    """Why ``args`` cannot run ``count`` contracts at once (as ``contract=[…]`` on the operator), or None."""
    for name, flag in (("input", "--input"), ("table", "--table")):
        if getattr(args, name, None):
            return f"{flag} names one dataset; the document describes {count} (each object reads its own)"
    if getattr(args, "reference", None):
        return "--reference is refused with several contracts: each declares its own"
    for name, flag in (("quarantine_table", "--quarantine-table"), ("valid_table", "--valid-table")):
        value = getattr(args, name, None)
        if value and CONTRACT_PLACEHOLDER not in value:
            return f"with several contracts, {flag} must contain {CONTRACT_PLACEHOLDER} (one table per contract)"
    return None


def _error_entry(outcome: SuiteOutcome, contract: Contract) -> dict[str, Any]:
    """A contract's summary when its run produced no result: status error, decision gate (fails closed)."""
    error = outcome.error
    return error_summary(contract, outcome.spec, f"{outcome.error_kind}: {first_line(error) if error else ''}", at=None)


def _run_many(
    args: argparse.Namespace,
    spec_of: Callable[[argparse.Namespace, Contract], RunSpec],
    contracts: list[tuple[str, Contract]],
    say: Progress,
) -> int:
    """Several contracts of one file (an ODCS document's objects) in one session, as ``contract=[…]``.

    Each gets its own run, results rows and output tables (``{contract}`` in ``--quarantine-table`` /
    ``--valid-table``); the summary is the operator's suite summary; the exit code the combined decision's
    (a run that failed: 4).
    """
    quiet, json_out = bool(getattr(args, "quiet", False)), getattr(args, "json_out", None)
    problem = _suite_arguments(args, len(contracts))
    if problem:
        print(f"dq-contracts run: {problem}", file=sys.stderr)
        return EXIT_INVALID
    try:
        storage = parse_storage_options(getattr(args, "storage_option", None))
        _conf_pairs(getattr(args, "conf", None))
        outcomes = [SuiteOutcome(spec_of(_member_args(args, c), c), c) for _, c in contracts]
    except (ValueError, RunSpecError) as exc:
        message = _cli_message(exc) if isinstance(exc, RunSpecError) else str(exc)
        print(f"dq-contracts run: {message}", file=sys.stderr)
        return EXIT_INVALID
    started_at = utcnow()
    spark: SparkSession | None = None
    started = False
    with contextlib.ExitStack() as restore:
        restore.enter_context(storage_environment(storage))
        try:
            say(f"{len(contracts)} contracts: " + "; ".join(f"{c.name} ({count_checks(c)})" for _, c in contracts))
            spark, started = _start_spark(args, contracts[0][1], say, outcomes[0].spec)
            shared = bool(getattr(args, "remote", None) and getattr(args, "shared_storage", False))
            capabilities = SessionCapabilities.of(spark, shared_storage=shared)
            run_suite_outcomes(spark, outcomes, progress=say, capabilities=capabilities)
        except DatasetError as exc:
            print(f"dq-contracts run: {exc}", file=sys.stderr)
            return EXIT_RUN_FAILED
        finally:
            if spark is not None and started:
                with contextlib.suppress(Exception):
                    spark.stop()
    summaries = [
        o.result.summary() if o.result is not None else _error_entry(o, c) for o, (_, c) in zip(outcomes, contracts)
    ]
    suite = suite_summary(getattr(args, "run_id", None), summaries, started_at)
    if not _write_summary(suite, json_out, say):
        return EXIT_RUN_FAILED
    out = sys.stderr if json_out == "-" else sys.stdout
    for outcome, summary in zip(outcomes, summaries):
        if quiet:
            continue
        if outcome.result is not None:
            _print_outcome(outcome.result, out)
        else:
            print(f"{summary['contract']['name']}: no result ({summary['error']})", file=out)
    if not quiet:
        each = ", ".join(f"{name}: {decision}" for name, decision in suite["decisions"].items())
        print(f"suite of {len(summaries)} contracts: decision {suite['decision']} ({each})", file=out)
    if any(outcome.result is None for outcome in outcomes):
        return EXIT_RUN_FAILED
    return EXIT_GATE if suite["decision"] == DECISION_GATE else EXIT_OK


def suite_summary(run_id: str | None, summaries: list[dict[str, Any]], started_at: dt.datetime) -> dict[str, Any]:
    """The summary of several contracts run together: the operator's suite summary (``contract=[…]``)."""
    counts = {key: sum(int(s["counts"].get(key, 0)) for s in summaries) for key in ("passed", "failed", "error")}
    statuses = {"passed": 0, "failed": 1, "error": 2}
    return {
        "suite": 1,
        "run_id": run_id or make_run_id(*(str(s["run_id"]) for s in summaries)),
        "decision": max((s["decision"] for s in summaries), key=lambda d: _DECISION_RANK.get(d, 2), default="pass"),
        "status": max((s["status"] for s in summaries), key=lambda status: statuses.get(status, 2)),
        "counts": counts,
        "decisions": {s["contract"]["name"]: s["decision"] for s in summaries},
        "contracts": summaries,
        "started_at": format_time(started_at),
        "finished_at": format_time(utcnow()),
    }
