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
from typing import Any

from pyspark.sql import SparkSession

from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.contract.model import Contract
from airflow_dq_contracts.results import DECISION_GATE, ContractResult
from airflow_dq_contracts.runspec import RunSpec, RunSpecError
from airflow_dq_contracts.runtime.jars import JarResolutionError
from airflow_dq_contracts.storage.s3 import mentions_s3, parse_storage_options, storage_environment
from airflow_dq_contracts.store.spark_remote import SessionCapabilities

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
    endpoint settings).
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
                s3=mentions_s3(spec, contract, os.environ.get("DQ_CONTRACTS_WAREHOUSE")),
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
        contract = load_contract(args.contract)
    except ContractValidationError as err:
        for issue in err.issues:
            print(str(issue), file=sys.stderr)
        return EXIT_INVALID
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
        say(
            f"contract {contract.name} {contract.version or ''}".rstrip()
            + f": {sum(1 for _ in contract.evaluated_checks())} checks"
        )
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

    summary = result.summary()
    text = json.dumps(summary, indent=2, allow_nan=False)
    if json_out == "-":
        print(text)
    elif json_out:
        try:
            with open(json_out, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
        except OSError as exc:
            print(f"dq-contracts run: cannot write --json-out {json_out!r}: {exc.strerror}", file=sys.stderr)
            return EXIT_RUN_FAILED
        say(f"summary written to {json_out}")
    if not quiet:
        # With the JSON on stdout, the human summary goes to stderr so the JSON stays parseable.
        _print_outcome(result, sys.stderr if json_out == "-" else sys.stdout)
    return EXIT_GATE if result.decision == DECISION_GATE else EXIT_OK
