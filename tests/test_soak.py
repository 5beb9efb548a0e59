"""The soak's 20-task version (``benchmarks/soak.py``): under a real scheduler, with kill -9s, nothing lost or twice.

Twenty ``ContractCheckOperator`` tasks (pass, quarantine, gate in turn), four at a time, on one results
table and one quarantine table; after every eight finished tasks the task process of a running task is
SIGKILLed while its spark-submit runs (the Spark driver orphaned, ``on_kill`` never called), and Airflow's
retry runs the same contract run again. Read back with delta-rs and compared with the rows computed by the
soak from its generated input: every (run, check) row exactly once, every quarantining run's rows exactly
once, every task ``success``, and the kills really happened (killed tasks ran more than once).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import soak  # noqa: E402

sys.path.pop(0)

pytestmark = [pytest.mark.slow, pytest.mark.airflow, pytest.mark.spark]

TASKS, PARALLEL, KILL_EVERY = 20, 4, 8


@pytest.mark.timeout(3600)
def test_twenty_tasks_with_kill_minus_nine_lose_nothing_and_write_nothing_twice(tmp_path):
    result = soak.run_soak(tmp_path, tasks=TASKS, parallel=PARALLEL, kill_every=KILL_EVERY, log=print)
    summary = soak.report(result)
    try:
        assert len(result.kills) == TASKS // KILL_EVERY, summary
        killed = [task for task, (_, tries) in result.states.items() if tries > 1]
        assert len(killed) >= len(result.kills), summary  # each killed task ran again
        assert sorted(result.states) == sorted(f"check_{n:03d}_{soak.OUTCOMES[n % 3]}" for n in range(TASKS))
        assert {state for state, _ in result.states.values()} == {"success"}, result.states
        assert result.lost == [], result.lost
        assert result.duplicated == [], result.duplicated
        assert result.quarantine_wrong == {}, result.quarantine_wrong
        assert set(result.memory) == {"scheduler", "triggerer"} and all(m[0] > 0 for m in result.memory.values())
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{summary}\n\n---- logs ----\n{result.evidence()}") from exc
