"""FreshnessSensor / CompletenessSensor and their triggers, on real Delta tables and real Airflow.

Pokes are called directly, triggers run in an asyncio event loop, and both sensors run inside a
real ``dag.test()`` (SQLite metadata database, DAG file in the configured dags folder) in poke,
reschedule and deferrable modes.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  — must come before anything that imports airflow
from airflow_fixtures import airflow_db, install_dag, run_dag, xcom_value  # noqa: F401

import asyncio
import datetime as dt
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sensor_fixtures import now_utc, utc, write_daily_partitions, write_events

from airflow_dq_contracts.sensors import CompletenessSensor, FreshnessSensor
from airflow_dq_contracts.sensors._common import SensorConfigError
from airflow_dq_contracts.triggers import DeltaCompletenessTrigger, DeltaFreshnessTrigger
from airflow_dq_contracts.version_compat import AirflowFailException

ROOT = Path(__file__).resolve().parent.parent


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def run_async(coroutine, timeout: float = 60):
    return asyncio.run(asyncio.wait_for(coroutine, timeout))


async def first_event(trigger):
    async for event in trigger.run():
        return event
    return None


# ----------------------------------------------------------------------------------- worlds apart


def test_sensors_and_triggers_import_no_pyspark():
    code = (
        "import sys\n"
        "import airflow_dq_contracts.sensors, airflow_dq_contracts.triggers\n"
        "from airflow_dq_contracts.sensors import FreshnessSensor, CompletenessSensor\n"
        "bad = [m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.')]\n"
        "print(bad[:5]); sys.exit(1 if bad else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


# ----------------------------------------------------------------------------------- construction


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"timestamp_column": "c", "max_age_hours": 1}, "pass path=, table= or contract="),
        ({"path": "/t", "table": "a.b", "timestamp_column": "c", "max_age_hours": 1}, "not both"),
        ({"path": "/t", "max_age_hours": 1}, "missing timestamp_column"),
        ({"path": "/t", "timestamp_column": "c"}, "missing max_age_hours"),
        ({"path": "/t", "timestamp_column": "c", "max_age_hours": -1}, "max_age_hours must be a number ≥ 0"),
        ({"path": "/t", "timestamp_column": "c", "max_age_hours": "6"}, "max_age_hours must be a number"),
        ({"path": "/t", "timestamp_column": "c", "max_age_hours": 1, "aggregation": "avg"}, "aggregation='avg'"),
        ({"path": "/t", "timestamp_column": "c", "max_age_hours": 1, "measure": "mtime"}, "measure='mtime'"),
        ({"path": "/t", "timestamp_column": "c", "max_age_hours": 1, "check": "x"}, "needs contract="),
    ],
)
def test_freshness_sensor_rejects_bad_arguments_when_the_dag_is_parsed(kwargs, message):
    with pytest.raises(SensorConfigError, match=message) as info:
        FreshnessSensor(task_id="fresh", **kwargs)
    assert "fresh" in str(info.value)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"path": "/t"}, "missing partition_column"),
        ({"path": "/t", "partition_column": "d", "granularity": "yearly"}, "granularity='yearly'"),
        ({"path": "/t", "partition_column": "d", "max_gap_count": 1.5}, "max_gap_count must be an integer"),
        ({"path": "/t", "partition_column": "d", "lookback_days": -7}, "lookback_days must be a number ≥ 0"),
        (
            {"path": "/t", "partition_column": "d", "allow_future_gaps": "yes"},
            "allow_future_gaps must be True or False",
        ),
    ],
)
def test_completeness_sensor_rejects_bad_arguments(kwargs, message):
    with pytest.raises(SensorConfigError, match=message):
        CompletenessSensor(task_id="complete", **kwargs)


def test_deferrable_defaults_to_the_operators_config(monkeypatch):
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "True")
    assert FreshnessSensor(task_id="a", path="/t", timestamp_column="c", max_age_hours=1).deferrable
    assert not FreshnessSensor(
        task_id="b", path="/t", timestamp_column="c", max_age_hours=1, deferrable=False
    ).deferrable
    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", "False")
    assert not CompletenessSensor(task_id="c", path="/t", partition_column="d").deferrable


# ----------------------------------------------------------------------------------- poke


def test_freshness_poke_fresh_and_stale(tmp_path, capsys):
    path = tmp_path / "events"
    newest = now_utc() - dt.timedelta(hours=2)
    write_events(path, [newest - dt.timedelta(days=3), newest])
    fresh = FreshnessSensor(task_id="fresh", path=str(path), timestamp_column="created_at", max_age_hours=3)
    result = fresh.poke({})
    logged = capsys.readouterr().out  # Airflow's task logger writes through structlog
    assert result.is_done
    assert result.xcom_value["measurement"]["value"] == iso(newest)
    assert 2.0 <= result.xcom_value["age_hours"] < 2.1
    assert "age 2.0" in logged and "≤ max 3 h → fresh" in logged, logged
    stale = FreshnessSensor(task_id="stale", path=str(path), timestamp_column="created_at", max_age_hours=1.5)
    assert not stale.poke({}).is_done
    oldest = FreshnessSensor(
        task_id="oldest", path=str(path), timestamp_column="created_at", max_age_hours=3 * 24 + 3, aggregation="min"
    )
    assert oldest.poke({}).is_done


def test_freshness_poke_with_explicit_reference_and_commit_mode(tmp_path):
    path = tmp_path / "events"
    write_events(path, [utc(2024, 1, 10, 6)])
    pinned = FreshnessSensor(
        task_id="pinned",
        path=str(path),
        timestamp_column="created_at",
        max_age_hours=6,
        reference_time="2024-01-10T14:00:00+02:00",
    )  # 12:00Z: exactly 6 h
    value = pinned.poke({}).xcom_value
    assert value["age_hours"] == 6.0 and value["passed"]
    assert value["reference_time"] == "2024-01-10T12:00:00Z"
    # A template that rendered to "None" (no data interval) means "now": 2024 data is stale now
    unset = FreshnessSensor(
        task_id="unset", path=str(path), timestamp_column="created_at", max_age_hours=6, reference_time="None"
    )
    assert not unset.poke({}).is_done
    # commit mode: the table was written seconds ago, whatever its rows say
    commit = FreshnessSensor(task_id="commit", path=str(path), measure="commit", max_age_hours=0.1)
    assert commit.poke({}).is_done


def test_freshness_poke_warns_when_the_data_is_newer_than_the_reference_time(tmp_path, capsys):
    """``airflow dags test`` with ``{{ data_interval_end }}``: a reference before the data is said, never silent."""
    path = tmp_path / "events"
    newest = utc(2024, 1, 10, 23, 20)
    write_events(path, [utc(2024, 1, 10, 8), newest])
    sensor = FreshnessSensor(task_id="ahead", path=str(path), timestamp_column="created_at", max_age_hours=6,
                             reference_time="2024-01-10T00:00:00Z")  # fmt: skip
    result = sensor.poke({})
    logged = capsys.readouterr().out
    # Documented: the data is newer than asked, so the sensor proceeds — with a warning naming both times.
    assert result.is_done
    value = result.xcom_value
    assert value["age_hours"] == pytest.approx(-(23 + 20 / 60))
    assert "2024-01-10T23:20:00Z" in value["warning"] and "2024-01-10T00:00:00Z" in value["warning"]
    assert "airflow dags test" in value["warning"] and "reference_time" in value["warning"]
    warning_lines = [line for line in logged.splitlines() if "warn" in line.lower() and "23.333 h after" in line]
    assert warning_lines, logged

    # Within the 5-minute clock skew: age 0, no warning.
    near = tmp_path / "near"
    write_events(near, [utc(2024, 1, 10, 0, 3)])
    close = FreshnessSensor(task_id="near", path=str(near), timestamp_column="created_at", max_age_hours=6,
                            reference_time="2024-01-10T00:00:00Z").poke({})  # fmt: skip
    assert close.is_done and close.xcom_value["age_hours"] == 0.0 and "warning" not in close.xcom_value
    assert "after the reference time" not in capsys.readouterr().out

    # The trigger (deferred sensor) says the same, and its event carries the warning back to the task.
    trigger = roundtrip(DeltaFreshnessTrigger(path=str(path), timestamp_column="created_at", max_age_hours=6,
                                              reference_time="2024-01-10T00:00:00Z", poke_interval=0.2))  # fmt: skip
    event = run_async(first_event(trigger))
    assert event.payload["status"] == "success"
    assert event.payload["result"]["warning"] == value["warning"]
    assert sensor.execute_complete({}, event.payload)["warning"] == value["warning"]
    assert "23.333 h after the reference time" in capsys.readouterr().out


def test_completeness_poke_gapped_then_complete(tmp_path, capsys):
    path = tmp_path / "orders"
    write_daily_partitions(path, [dt.date(2024, 1, d) for d in (1, 2, 4, 5)])
    sensor = CompletenessSensor(
        task_id="complete",
        path=str(path),
        partition_column="order_date",
        granularity="daily",
        lookback_days=4,
        reference_time="2024-01-05T12:00:00Z",
    )
    first = sensor.poke({})
    logged = capsys.readouterr().out
    assert not first.is_done
    assert first.xcom_value["missing_labels"] == ["2024-01-03"]
    assert "missing: 2024-01-03" in logged and "gap_count=1" in logged, logged
    write_daily_partitions(path, [dt.date(2024, 1, 3)])
    second = sensor.poke({})
    assert second.is_done and second.xcom_value["gap_count"] == 0
    tolerant = CompletenessSensor(
        task_id="tolerant",
        path=str(path),
        partition_column="order_date",
        lookback_days=9,
        max_gap_count=1,
        reference_time="2024-01-05T12:00:00Z",
        allow_future_gaps=False,
    )
    # [12-27 12:00, 01-05 12:00]: 12-27 … 12-31 missing → 5 gaps > 1
    assert tolerant.poke({}).xcom_value["gap_count"] == 5


def test_poke_failures_are_readable_and_final(tmp_path):
    events = tmp_path / "events"
    write_events(events, [utc(2024, 1, 1)])
    cases = [
        (
            FreshnessSensor(task_id="t1", path=str(tmp_path / "nope"), timestamp_column="c", max_age_hours=1),
            "no table at .*nope: the path does not exist",
        ),
        (
            FreshnessSensor(task_id="t2", path=str(events), timestamp_column="updated_at", max_age_hours=1),
            "'updated_at' is not in the table",
        ),
        (
            FreshnessSensor(task_id="t3", path=str(events), timestamp_column="id", max_age_hours=1),
            "of type long, not a timestamp",
        ),
        (CompletenessSensor(task_id="t4", path=str(events), partition_column="created_at"), "is not partitioned"),
    ]
    for sensor, message in cases:
        with pytest.raises(AirflowFailException, match=message) as info:
            sensor.poke({})
        assert str(info.value).startswith(sensor.task_id + ":")
        assert info.value.__cause__ is None  # no delta-rs traceback chained under it


def test_missing_table_can_be_waited_for(tmp_path):
    path = tmp_path / "later"
    sensor = FreshnessSensor(
        task_id="wait", path=str(path), timestamp_column="created_at", max_age_hours=1, fail_on_missing_table=False
    )
    assert not sensor.poke({}).is_done
    write_events(path, [now_utc()])
    assert sensor.poke({}).is_done


def test_table_name_maps_to_the_warehouse_layout(tmp_path, monkeypatch):
    write_events(tmp_path / "silver.db" / "orders", [now_utc()])
    sensor = FreshnessSensor(
        task_id="t", table="silver.orders", warehouse=str(tmp_path), timestamp_column="created_at", max_age_hours=1
    )
    assert sensor.poke({}).xcom_value["measurement"]["path"] == str(tmp_path / "silver.db" / "orders")
    monkeypatch.setenv("DQ_CONTRACTS_WAREHOUSE", str(tmp_path))
    assert (
        FreshnessSensor(task_id="u", table="silver.orders", timestamp_column="created_at", max_age_hours=1)
        .poke({})
        .is_done
    )
    monkeypatch.delenv("DQ_CONTRACTS_WAREHOUSE")
    with pytest.raises(AirflowFailException, match="DQ_CONTRACTS_WAREHOUSE"):
        FreshnessSensor(task_id="v", table="silver.orders", timestamp_column="c", max_age_hours=1).poke({})


# ----------------------------------------------------------------------------------- contracts


def orders_contract(path: Path, *, fmt: str = "delta", extra_checks: list | None = None) -> dict:
    return {
        "name": "orders",
        "version": "1.0.0",
        "dataset": {"path": str(path), "format": fmt},
        "checks": [
            {
                "name": "Data is fresh",
                "type": "freshness",
                "max_age_hours": 3,
                "timestamp_column": "created_at",
                "severity": "P0",
            },
            {
                "name": "No missing days",
                "type": "completeness",
                "partition_column": "order_date",
                "granularity": "daily",
                "lookback_days": 3,
            },
            *(extra_checks or []),
        ],
    }


def test_parameters_from_a_contract_check(tmp_path):
    path = tmp_path / "orders"
    newest = now_utc() - dt.timedelta(hours=2)
    write_events(path, [newest], extra={"order_date": [dt.date(2024, 1, 1)]})
    contract = orders_contract(path)
    by_name = FreshnessSensor(task_id="f", contract=contract, check="Data is fresh")
    assert by_name.poke({}).xcom_value["max_age_hours"] == 3.0
    only_one = FreshnessSensor(task_id="g", contract=contract)  # the contract's only freshness check
    assert only_one.poke({}).is_done
    # explicit arguments override the check's
    stricter = FreshnessSensor(task_id="h", contract=contract, check="Data is fresh", max_age_hours=1)
    assert not stricter.poke({}).is_done
    # the contract as a YAML file
    import yaml

    contract_file = tmp_path / "orders.yaml"
    contract_file.write_text(yaml.safe_dump(contract))
    assert FreshnessSensor(task_id="i", contract=str(contract_file), check="Data is fresh").poke({}).is_done


def test_contract_completeness_check(tmp_path):
    path = tmp_path / "orders"
    today = now_utc().date()
    write_daily_partitions(path, [today - dt.timedelta(days=n) for n in (0, 1, 3)])
    sensor = CompletenessSensor(task_id="c", contract=orders_contract(path), check="No missing days")
    value = sensor.poke({}).xcom_value
    assert value["gap_count"] == 1
    assert value["missing_labels"] == [(today - dt.timedelta(days=2)).isoformat()]


def test_contract_problems_are_readable(tmp_path):
    path = tmp_path / "orders"
    cases = [
        (FreshnessSensor(task_id="a", contract=orders_contract(path), check="Nope"), "no check named 'Nope'"),
        (
            FreshnessSensor(task_id="b", contract=orders_contract(path), check="No missing days"),
            "is a 'completeness' check, not 'freshness'",
        ),
        (
            FreshnessSensor(
                task_id="c",
                contract=orders_contract(
                    path,
                    extra_checks=[
                        {"name": "Also fresh", "type": "freshness", "max_age_hours": 5, "timestamp_column": "x"}
                    ],
                ),
            ),
            "has 2 freshness checks .*pass check=",
        ),
        (FreshnessSensor(task_id="d", contract=orders_contract(path, fmt="csv")), "dataset is csv"),
        (
            FreshnessSensor(task_id="e", contract={"name": "x", "checks": [{"name": "f", "type": "freshness"}]}),
            "invalid contract",
        ),
    ]
    for sensor, message in cases:
        with pytest.raises(AirflowFailException, match=message):
            sensor.poke({})


# ----------------------------------------------------------------------------------- triggers


def roundtrip(trigger):
    """What the triggerer does: serialise to JSON, rebuild from the class path."""
    from importlib import import_module

    classpath, kwargs = trigger.serialize()
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(import_module(module), name)(**json.loads(json.dumps(kwargs)))
    assert rebuilt.serialize() == (classpath, kwargs)
    return rebuilt


def test_trigger_fires_at_once_when_fresh(tmp_path):
    path = tmp_path / "events"
    write_events(path, [now_utc()])
    trigger = roundtrip(
        DeltaFreshnessTrigger(path=str(path), timestamp_column="created_at", max_age_hours=1, poke_interval=0.2)
    )
    event = run_async(first_event(trigger))
    assert event.payload["status"] == "success"
    assert event.payload["result"]["passed"] is True


def test_trigger_keeps_polling_until_the_table_turns_fresh(tmp_path):
    path = tmp_path / "events"
    write_events(path, [now_utc() - dt.timedelta(days=2)])
    trigger = roundtrip(
        DeltaFreshnessTrigger(path=str(path), timestamp_column="created_at", max_age_hours=1, poke_interval=0.3)
    )

    async def scenario():
        task = asyncio.create_task(first_event(trigger))
        await asyncio.sleep(1.0)
        assert not task.done()  # stale: still polling
        fresh_value = now_utc()
        await asyncio.to_thread(write_events, path, [fresh_value])
        return fresh_value, await task

    fresh_value, event = run_async(scenario())
    assert event.payload["status"] == "success"
    assert event.payload["result"]["measurement"]["value"] == iso(fresh_value)


def test_trigger_times_out_at_its_absolute_deadline(tmp_path):
    path = tmp_path / "events"
    write_events(path, [utc(2024, 1, 1)])
    deadline = now_utc() + dt.timedelta(seconds=1.0)
    # An hour between pokes: only waking for the deadline itself ends this within run_async's limit.
    trigger = roundtrip(
        DeltaFreshnessTrigger(
            path=str(path), timestamp_column="created_at", max_age_hours=1, poke_interval=3600, end_time=iso(deadline)
        )
    )
    event = run_async(first_event(trigger), timeout=600)
    assert event.payload["status"] == "timeout"
    assert "stale" in event.payload["message"]


def test_trigger_reports_permanent_errors_and_waits_for_a_missing_table(tmp_path):
    events = tmp_path / "events"
    write_events(events, [now_utc()])
    wrong = DeltaFreshnessTrigger(path=str(events), timestamp_column="nope", max_age_hours=1, poke_interval=0.1)
    payload = run_async(first_event(wrong)).payload
    assert payload["status"] == "error" and payload["error"] == "ColumnNotFoundError"
    assert "'nope' is not in the table" in payload["message"]

    later = tmp_path / "later"
    missing = DeltaCompletenessTrigger(
        path=str(tmp_path / "missing"), partition_column="d", granularity="daily", poke_interval=0.1
    )
    assert run_async(first_event(missing)).payload["error"] == "TableNotFoundError"
    patient = DeltaFreshnessTrigger(
        path=str(later), timestamp_column="created_at", max_age_hours=1, poke_interval=0.2, fail_on_missing_table=False
    )

    async def scenario():
        task = asyncio.create_task(first_event(patient))
        await asyncio.sleep(0.8)
        assert not task.done()
        await asyncio.to_thread(write_events, later, [now_utc()])
        return await task

    assert run_async(scenario()).payload["status"] == "success"


def test_completeness_trigger_fires_when_the_gap_is_filled(tmp_path):
    path = tmp_path / "orders"
    write_daily_partitions(path, [dt.date(2024, 1, d) for d in (1, 2, 4)])
    trigger = roundtrip(
        DeltaCompletenessTrigger(
            path=str(path),
            partition_column="order_date",
            granularity="daily",
            lookback_days=3,
            reference_time="2024-01-04T06:00:00Z",
            poke_interval=0.3,
        )
    )

    async def scenario():
        task = asyncio.create_task(first_event(trigger))
        await asyncio.sleep(1.0)
        assert not task.done()
        await asyncio.to_thread(write_daily_partitions, path, [dt.date(2024, 1, 3)])
        return await task

    event = run_async(scenario())
    assert event.payload["status"] == "success"
    assert event.payload["result"]["gap_count"] == 0 and event.payload["result"]["present_count"] == 4


def test_trigger_survives_a_restart_with_the_same_deadline(tmp_path):
    path = tmp_path / "events"
    write_events(path, [utc(2024, 1, 1)])
    deadline = now_utc() + dt.timedelta(seconds=60)
    original = DeltaFreshnessTrigger(
        path=str(path), timestamp_column="created_at", max_age_hours=1, poke_interval=0.2, end_time=iso(deadline)
    )

    async def until_cancelled():
        task = asyncio.create_task(first_event(original))
        await asyncio.sleep(0.7)
        task.cancel()  # the triggerer shuts down
        with pytest.raises(asyncio.CancelledError):
            await task

    run_async(until_cancelled())
    restarted = roundtrip(original)  # another triggerer rebuilds it from the database row
    assert restarted.end_time == iso(deadline)
    write_events(path, [now_utc()])
    assert run_async(first_event(restarted)).payload["status"] == "success"


_READ_STARTED = threading.Event()
_LOOP_RAN_DURING_READ = threading.Event()


class _SlowStoreTrigger(DeltaFreshnessTrigger):
    """The same trigger on a store whose metadata read lasts until the event loop has run other work.

    If the read ran on the event loop's thread, the loop could not run the ticker, the read would wait
    out its generous limit and fail: what is asserted is what happened, not how fast.
    """

    def _evaluate(self):
        _READ_STARTED.set()
        if not _LOOP_RAN_DURING_READ.wait(timeout=300):
            raise RuntimeError("the event loop ran nothing while the metadata read was in progress")
        return super()._evaluate()


def test_trigger_does_not_block_the_event_loop(tmp_path):
    path = tmp_path / "events"
    write_events(path, [now_utc()])
    trigger = _SlowStoreTrigger(path=str(path), timestamp_column="created_at", max_age_hours=1)
    _READ_STARTED.clear()
    _LOOP_RAN_DURING_READ.clear()

    async def scenario():
        async def ticker():
            ticks_during_read = 0
            while True:
                await asyncio.sleep(0.01)
                if _READ_STARTED.is_set():
                    ticks_during_read += 1
                    if ticks_during_read >= 3:
                        _LOOP_RAN_DURING_READ.set()

        ticking = asyncio.create_task(ticker())
        event = await first_event(trigger)
        ticking.cancel()
        return event

    event = run_async(scenario(), timeout=600)
    assert event.payload["status"] == "success", event.payload
    assert _LOOP_RAN_DURING_READ.is_set()  # the loop kept running other work during the read


# ----------------------------------------------------------------------------------- dag.test


def _when(condition, action, *args) -> dict:
    """Run ``action(*args)`` in a thread as soon as ``condition()`` holds; report whether it did.

    The thread watches until the caller sets ``seen["stop"]`` (when the DAG run is over), not for a
    fixed time: tasks ahead of the watched one may take minutes on a slow or busy machine (they did
    on Python 3.13), and a watcher that gave up earlier would starve the sensor into a false failure.
    The sensors' own timeouts bound the DAG run, so the watch ends too.
    """
    seen: dict = {"fired": False, "stop": threading.Event()}

    def run():
        while not seen["stop"].is_set():
            try:
                if condition():
                    action(*args)
                    seen["fired"] = True
                    return
            except Exception as exc:  # SQLite busy while dag.test writes: try again
                seen["last_error"] = repr(exc)
            seen["stop"].wait(0.1)

    seen["thread"] = threading.Thread(target=run, daemon=True)
    seen["thread"].start()
    return seen


def _trigger_row_exists(table_path: Path) -> bool:
    """A deferred task's trigger watching ``table_path`` is in the database (dag.test runs it in line)."""
    from airflow.models.trigger import Trigger
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        triggers = session.scalars(select(Trigger)).all()
        return any(
            t.classpath.endswith("DeltaFreshnessTrigger") and t.kwargs.get("path") == str(table_path) for t in triggers
        )


def _rescheduled(task_id: str) -> bool:
    """The task has been rescheduled at least once (reschedule mode gave its slot back)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.taskreschedule import TaskReschedule
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.scalars(
            select(TaskReschedule.id)
            .join(TaskInstance, TaskInstance.id == TaskReschedule.ti_id)
            .where(TaskInstance.task_id == task_id)
        ).all()
    return bool(rows)


@pytest.mark.airflow
def test_sensors_inside_dag_test(airflow_db, tmp_path):  # noqa: F811 - airflow_db is the imported fixture
    fresh = tmp_path / "fresh"
    write_events(fresh, [now_utc() - dt.timedelta(minutes=30)])
    late = tmp_path / "late"  # stale until a writer appends, while the DAG runs
    write_events(late, [now_utc() - dt.timedelta(days=1)])
    complete = tmp_path / "complete"
    write_daily_partitions(complete, [dt.date(2024, 1, d) for d in range(1, 8)])
    gapped = tmp_path / "gapped"  # 2024-01-04 arrives while the DAG runs
    write_daily_partitions(gapped, [dt.date(2024, 1, d) for d in (1, 2, 3, 5, 6, 7)])
    stale = tmp_path / "stale"
    write_events(stale, [utc(2024, 1, 1)])

    dag = install_dag(f"""
        import datetime as dt
        from airflow.sdk import DAG
        from airflow_dq_contracts.sensors import CompletenessSensor, FreshnessSensor

        with DAG("dq_sensors_test", schedule=None, start_date=dt.datetime(2024, 1, 1), catchup=False) as dag:
            FreshnessSensor(task_id="fresh_poke", path={str(fresh)!r}, timestamp_column="created_at",
                            max_age_hours=1, reference_time="{{{{ data_interval_end }}}}",
                            poke_interval=1, timeout=30)
            FreshnessSensor(task_id="late_deferred", path={str(late)!r}, timestamp_column="created_at",
                            max_age_hours=1, deferrable=True, poke_interval=0.5, timeout=60)
            CompletenessSensor(task_id="complete_poke", path={str(complete)!r}, partition_column="order_date",
                               granularity="daily", lookback_days=6, reference_time="2024-01-07T12:00:00Z",
                               poke_interval=1, timeout=30)
            CompletenessSensor(task_id="gapped_reschedule", path={str(gapped)!r}, partition_column="order_date",
                               granularity="daily", lookback_days=6, reference_time="2024-01-07T12:00:00Z",
                               mode="reschedule", poke_interval=1, timeout=60)
            FreshnessSensor(task_id="stale_soft_fail", path={str(stale)!r}, timestamp_column="created_at",
                            max_age_hours=1, deferrable=True, poke_interval=0.5, timeout=1.5, soft_fail=True)
            FreshnessSensor(task_id="broken_column", path={str(stale)!r}, timestamp_column="updated_at",
                            max_age_hours=1)
    """)
    # The missing data arrives only once the sensor is really waiting: deferred to a trigger,
    # or rescheduled (its worker slot given back).
    late_writer = _when(lambda: _trigger_row_exists(late), write_events, late, [now_utc()])
    gap_writer = _when(lambda: _rescheduled("gapped_reschedule"), write_daily_partitions, gapped, [dt.date(2024, 1, 4)])
    # A logical date, as every scheduled run has: then the run has a data interval (the template
    # below needs one). Without it Airflow 3.0's dag.test() makes a run with neither, 3.1's uses now.
    start = now_utc()
    try:
        states, dag_run = run_dag(dag, logical_date=start, run_after=start)
    finally:
        for writer in (late_writer, gap_writer):
            writer["stop"].set()
            writer["thread"].join()
    assert late_writer["fired"] and gap_writer["fired"], (late_writer, gap_writer)

    assert states == {
        "fresh_poke": "success",
        "late_deferred": "success",
        "complete_poke": "success",
        "gapped_reschedule": "success",
        "stale_soft_fail": "skipped",
        "broken_column": "failed",
    }
    fresh_xcom = xcom_value(dag_run, "fresh_poke")
    assert fresh_xcom["passed"] is True
    # the templated reference is the run's data_interval_end
    assert fresh_xcom["reference_time"] == iso(dag_run.data_interval_end)
    late_xcom = xcom_value(dag_run, "late_deferred")
    assert late_xcom["passed"] is True and late_xcom["age_hours"] < 0.1
    assert xcom_value(dag_run, "complete_poke")["gap_count"] == 0
    gapped_xcom = xcom_value(dag_run, "gapped_reschedule")
    assert gapped_xcom["gap_count"] == 0 and gapped_xcom["present_count"] == 7
