"""Several contracts in ONE Spark application: each run as if alone, their Spark jobs side by side.

A check task that checks ten small tables pays one driver start instead of ten. The input is a
:class:`~airflow_dq_contracts.runspec.SuiteSpec` (ordinary run specs, each with its own run id,
dataset and output tables); each run goes through the same
:func:`~airflow_dq_contracts.engine.runner.run_contract` as a run alone, so its results rows,
quarantine/valid rows and summary are exactly what that run alone writes and returns.

* **Isolation.** Each run gets its own session, ``spark.newSession()``: the one SparkContext and
  its executors are shared, but the SQL settings a run changes for itself (the small-run tuning of
  :class:`~.session.SmallRunTuning`) and its temporary views stay its own — two runs side by side
  never restore each other's settings.
* **Concurrency.** Runs are submitted from a thread pool of ``spark.dqcontracts.suiteParallelism``
  threads (default :data:`DEFAULT_PARALLELISM`; 1 runs them one after the other). Spark schedules
  the jobs of concurrent threads side by side; each thread tags its jobs with a job group of its
  own run id (``dq-contracts:<run id>``), so the UI and ``statusTracker`` tell them apart. On a
  small run most of a contract's time is driver-side latency (planning, Delta log reads, commits),
  which the threads overlap.
* **Failure is per run.** A run whose contract does not load, whose spec does not fit it, or whose
  input cannot be read is that run's :class:`SuiteOutcome` with an ``error``; the others go on.
* **Retries.** Run ids come with the specs (the operator derives them per contract from the task
  instance), so a retried suite replaces each run's rows as a retried single run does.

Example::

    suite = SuiteSpec((RunSpec.for_contract(orders, run_id="r-orders", results_table="/wh/dq_results"),
                       RunSpec.for_contract(customers, run_id="r-customers", results_table="/wh/dq_results")))
    for outcome in run_suite(spark, suite):
        print(outcome.contract_name, outcome.result.decision if outcome.result else outcome.error)
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable

from pyspark.sql import SparkSession

from airflow_dq_contracts.contract import ContractValidationError, load_contract
from airflow_dq_contracts.contract.model import Contract
from airflow_dq_contracts.results import ContractResult
from airflow_dq_contracts.runspec import RunSpec, RunSpecError, SuiteSpec
from airflow_dq_contracts.store.spark_remote import SessionCapabilities

from .concurrency import conf_parallelism, run_concurrently
from .runner import run_contract
from .spark_errors import job_group

Progress = Callable[[str], None]

#: Runs evaluated at once when ``spark.dqcontracts.suiteParallelism`` does not say.
DEFAULT_PARALLELISM = 4
PARALLELISM_CONF_KEY = "spark.dqcontracts.suiteParallelism"

#: ``SuiteOutcome.error_kind`` values: the job's ERROR marker kinds, per run.
INVALID_CONTRACT = "invalid_contract"
INVALID_ARGUMENTS = "invalid_arguments"
RUN_FAILED = "run_failed"


@dataclasses.dataclass
class SuiteOutcome:
    """One run of a suite: its spec, its loaded contract, and its result or why it has none."""

    spec: RunSpec
    contract: Contract | None = None
    result: ContractResult | None = None
    error: BaseException | None = None
    error_kind: str = RUN_FAILED

    @property
    def contract_name(self) -> str | None:
        """The contract's name (None when its text did not load)."""
        return self.contract.name if self.contract is not None else None


def load_suite(suite: SuiteSpec) -> list[SuiteOutcome]:
    """Each run's contract loaded from its spec and the spec resolved against it — no Spark.

    A contract that does not load (``invalid_contract``) or a spec that does not fit its contract
    (``invalid_arguments``) is that run's error; the list keeps the suite's order.
    """
    outcomes: list[SuiteOutcome] = []
    for spec in suite.specs:
        outcome = SuiteOutcome(spec)
        try:
            if spec.contract_text is None:
                raise RunSpecError("the spec carries no contract text", field="contract_text")
            outcome.contract = load_contract(
                spec.contract_text,
                filename=spec.contract_origin,
                policy=dict(spec.policy) if spec.policy is not None else None,
            )
            outcome.spec = spec.resolve(outcome.contract)
        except ContractValidationError as exc:
            outcome.error, outcome.error_kind = exc, INVALID_CONTRACT
        except RunSpecError as exc:
            outcome.error, outcome.error_kind = exc, INVALID_ARGUMENTS
        outcomes.append(outcome)
    return outcomes


def suite_parallelism(spark: SparkSession, runs: int) -> int:
    """Threads for ``runs`` runs: ``spark.dqcontracts.suiteParallelism`` (default 4), at least 1, at most ``runs``."""
    return conf_parallelism(spark, PARALLELISM_CONF_KEY, DEFAULT_PARALLELISM, runs)


def run_suite_outcomes(
    spark: SparkSession,
    outcomes: list[SuiteOutcome],
    *,
    progress: Progress | None = None,
    parallelism: int | None = None,
    capabilities: SessionCapabilities | None = None,
) -> list[SuiteOutcome]:
    """Evaluate every loaded run of ``outcomes`` (those without an error yet), filling in result or error.

    ``parallelism`` overrides :func:`suite_parallelism`; ``capabilities`` is what ``spark`` can do (default:
    as the session tells). Returns ``outcomes``.
    """
    capabilities = capabilities or SessionCapabilities.of(spark)
    pending = [outcome for outcome in outcomes if outcome.error is None]
    threads = parallelism if parallelism is not None else suite_parallelism(spark, len(pending))
    say = progress or (lambda message: None)
    began = time.perf_counter()
    if threads <= 1 or len(pending) <= 1:
        for outcome in pending:
            _run_one(spark, outcome, say, capabilities)
    else:
        # Every run to its end (_run_one keeps every failure in its outcome); on Spark Connect each
        # thread carries the run's operation tag, so a stopped task interrupts all of them.
        jobs = [functools.partial(_run_one, spark, outcome, say, capabilities) for outcome in pending]
        run_concurrently(spark, jobs, threads, remote=capabilities.remote)
    failed = sum(1 for outcome in outcomes if outcome.result is None)
    say(
        f"suite: {len(outcomes)} contracts ({failed} without a result) in {time.perf_counter() - began:.2f} s, "
        f"{max(1, min(threads, len(pending) or 1))} at a time"
    )
    return outcomes


def run_suite(
    spark: SparkSession, suite: SuiteSpec, *, progress: Progress | None = None, parallelism: int | None = None
) -> list[SuiteOutcome]:
    """:func:`load_suite` then :func:`run_suite_outcomes`: every run of ``suite`` in this application."""
    return run_suite_outcomes(spark, load_suite(suite), progress=progress, parallelism=parallelism)


def _run_one(spark: SparkSession, outcome: SuiteOutcome, say: Progress, capabilities: SessionCapabilities) -> None:
    """One run in a session of its own; every failure is kept as the run's error, never raised."""
    contract = outcome.contract
    assert contract is not None
    name = contract.name

    def tagged(message: str) -> None:
        say(f"{name}: {message}")

    try:
        # Its own session (SmallRunTuning sets session confs); Spark Connect has no newSession and
        # leaves the server's settings alone, so its runs share the one session.
        session = spark if capabilities.remote else spark.newSession()
        with job_group(session, f"dq-contracts:{outcome.spec.run_id}", f"dq-contracts suite: {name}"):
            outcome.result = run_contract(session, contract, outcome.spec, progress=tagged, capabilities=capabilities)
    except Exception as exc:  # noqa: BLE001 - one run's failure is its own error, the others go on
        outcome.error, outcome.error_kind = exc, RUN_FAILED
        tagged(f"failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
