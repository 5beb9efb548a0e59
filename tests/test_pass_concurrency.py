"""A run's scan and grouped passes are submitted together (engine/concurrency.py).

Asserted: the jobs really overlap (they meet at a barrier no sequential run could reach), results
come back in job order, every job runs to its end before the first failure is raised, parallelism 1
runs in the caller's thread; PySpark's error loggers, silenced by concurrent passes, come back as
they were; and on real Spark an evaluation with the passes submitted together gives the same
results, stats in the same order, as one pass after the other.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from airflow_dq_contracts.engine.concurrency import PASS_PARALLELISM_CONF_KEY, pass_parallelism, run_concurrently
from airflow_dq_contracts.engine.spark_errors import _PYSPARK_ERROR_LOGGERS, quiet_pyspark_errors


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _Session:
    """Stands in for a classic session where only ``conf`` is asked (no Spark job is run here)."""

    def __init__(self, **conf: str) -> None:
        self.conf = _Conf(dict(conf))


def test_jobs_overlap_and_come_back_in_order():
    barrier = threading.Barrier(3, timeout=60)
    threads: list[str] = []

    def job(n: int) -> int:
        threads.append(threading.current_thread().name)
        barrier.wait()  # only reachable when three jobs run at once
        return n * 10

    assert run_concurrently(_Session(), [lambda n=n: job(n) for n in range(3)], 3) == [0, 10, 20]  # type: ignore[misc]
    assert all(name.startswith("dq-pass") for name in threads)


def test_every_job_ends_before_the_first_failure_is_raised():
    ended: list[int] = []

    def job(n: int) -> int:
        if n in (1, 3):
            raise ValueError(f"job {n} failed")
        ended.append(n)
        return n

    with pytest.raises(ValueError, match="job 1 failed"):
        run_concurrently(_Session(), [lambda n=n: job(n) for n in range(5)], 2)  # type: ignore[misc]
    assert sorted(ended) == [0, 2, 4]


def test_parallelism_one_runs_in_the_callers_thread_in_order():
    seen: list[tuple[int, str]] = []

    def job(n: int) -> None:
        seen.append((n, threading.current_thread().name))

    run_concurrently(_Session(), [lambda n=n: job(n) for n in range(3)], 1)  # type: ignore[misc]
    assert seen == [(n, threading.current_thread().name) for n in range(3)]


@pytest.mark.parametrize(
    ("conf", "jobs", "expected"),
    [({}, 9, 4), ({}, 2, 2), ({PASS_PARALLELISM_CONF_KEY: "1"}, 5, 1), ({PASS_PARALLELISM_CONF_KEY: "0"}, 5, 1)],
)
def test_pass_parallelism_from_the_conf(conf: dict[str, str], jobs: int, expected: int):
    assert pass_parallelism(_Session(**conf), jobs) == expected  # type: ignore[arg-type]


def test_quiet_errors_from_concurrent_passes_restore_the_loggers():
    loggers = [logging.getLogger(name) for name in _PYSPARK_ERROR_LOGGERS]
    before = [lg.disabled for lg in loggers]
    inside = threading.Barrier(2, timeout=60)
    first_left = threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with quiet_pyspark_errors():
            inside.wait()
        first_left.set()

    def second() -> None:
        with quiet_pyspark_errors():
            inside.wait()
            first_left.wait(60)
            seen.append(all(lg.disabled for lg in loggers))  # still silenced: the other pass left first

    run_concurrently(_Session(), [first, second], 2)
    assert seen == [True]
    assert [lg.disabled for lg in loggers] == before


@pytest.mark.spark
def test_passes_together_give_what_one_after_the_other_gives(spark: Any):

    from airflow_dq_contracts.contract import load_contract
    from airflow_dq_contracts.engine import Evaluator

    contract = load_contract(
        {
            "name": "together",
            "checks": [{"name": "rows", "type": "num_rows", "min": 1}],
            "columns": [
                {"name": "id", "checks": [{"name": "unique", "type": "duplicates", "max": 0}]},
                {"name": "k", "checks": [{"name": "few", "type": "cardinality", "max": 3}]},
                {"name": "v", "checks": [{"name": "nulls", "type": "missing", "max": 0}]},
            ],
        }
    )
    rows = [(i % 97, f"k{i % 5}", None if i % 7 == 0 else i) for i in range(1, 500)]
    df = spark.createDataFrame(rows, "id long, k string, v long")

    def evaluate(parallelism: str) -> tuple[dict[str, tuple[str, Any]], list[str]]:
        spark.conf.set(PASS_PARALLELISM_CONF_KEY, parallelism)
        try:
            evaluator = Evaluator(contract, df)
            result = evaluator.run()
        finally:
            spark.conf.unset(PASS_PARALLELISM_CONF_KEY)
        return {c.check_id: (c.status, c.metric_value) for c in result.checks}, [s.name for s in evaluator.stats]

    together, together_phases = evaluate("4")
    alone, alone_phases = evaluate("1")
    assert together == alone
    # Independent expectations: 499 rows, ids 1..96 and 0 repeat, 5 distinct keys, every 7th v NULL.
    assert together["_table_/rows"][1] == 499
    assert together["id/unique"][0] == "failed"
    assert together["k/few"] == ("failed", 5)
    assert together["v/nulls"] == ("failed", len([i for i in range(1, 500) if i % 7 == 0]))
    assert together_phases == alone_phases
    assert together_phases.index("scan") < together_phases.index("group0") < together_phases.index("group1")
