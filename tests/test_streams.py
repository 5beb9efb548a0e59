"""Contracts on streams (#35): a Delta source appended in commits, checked by ``dq-contracts stream``.

Real Spark, real Delta. Planted bad rows in several micro-batches and windows, late rows, a second
run after more appends, and a kill -9 of the streaming driver in the middle of a batch: quarantine,
valid and results equal a plain-Python oracle, every row exactly once. The same rows as JSON messages
on a real Kafka topic (``kafka_broker``) and as JSON files landing in a folder: the same oracle, and
each window's ``source_range`` (Kafka offsets per partition, files) equal to the batches it holds.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from airflow_dq_contracts.contract import load_contract
from airflow_dq_contracts.contract.streaming import parse_duration
from airflow_dq_contracts.engine.streams import PAUSE_ENV, run_stream, window_run_id

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
WINDOW, WATERMARK = 600, 300  # seconds


def _at(minute: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minute)


def _commits() -> list[list[tuple]]:
    """Rows (id, status, amount, ts) per Delta commit; bad rows: unknown status, negative amount."""
    ids = iter(range(1, 1000))

    def row(minute: float, status: str | None = "new", amount: float = 1.0) -> tuple:
        return (next(ids), status, amount, _at(minute))

    return [
        [row(1), row(2, "bogus"), row(4, amount=-1.0), row(11), row(14, None)],  # windows 0, 1
        [row(12, amount=-3.0), row(15), row(21, "lost"), row(27)],  # 1, 2 → closes 0 and 1
        [row(3), row(5, amount=-2.0), row(22), row(31), row(36, "x")],  # two late rows of window 0
        [row(15, "late"), row(33, amount=-5.0), row(41), row(47)],  # one late row of 1; closes 3
    ]


def _oracle(commits: list[list[tuple]]) -> dict:
    """Plain Python: per batch, the watermark before it, late rows, windows closed after it."""
    seen_max: float | None = None
    windows: dict[int, list[tuple]] = {}
    batches: dict[int, set[int]] = {}  # window → the batches (indexes of ``commits``) of its in-time rows
    late: dict[int, int] = {}
    closed: list[int] = []
    for index, rows in enumerate(commits):
        before = None if seen_max is None else seen_max - WATERMARK
        for r in rows:
            epoch = int(r[3].timestamp())
            start = epoch - epoch % WINDOW
            if before is not None and start + WINDOW <= before:
                late[start] = late.get(start, 0) + 1
            else:
                windows.setdefault(start, []).append(r)
                batches.setdefault(start, set()).add(index)
        seen_max = max([seen_max or 0] + [r[3].timestamp() for r in rows])
        after = seen_max - WATERMARK
        closed += [s for s in sorted(windows) if s + WINDOW <= after and s not in closed]
    bad = {r[0] for rows in commits for r in rows if (r[1] is not None and r[1] not in ("new", "paid")) or _negative(r)}
    bad |= {r[0] for rows in commits for r in rows if isinstance(r[2], str)}  # an amount that does not parse
    every = {r[0] for rows in commits for r in rows}
    return {"windows": windows, "batches": batches, "late": late, "closed": closed, "bad": bad, "good": every - bad}


def _negative(r: tuple) -> bool:
    """Whether the row's amount is a number below 0 (text that does not parse is the schema check's)."""
    return not isinstance(r[2], str) and r[2] < 0


def _contract(tmp_path: Path, source: str, dataset: dict | None = None) -> Path:
    doc = {
        "name": "stream_events",
        "version": "1.0.0",
        "dataset": dataset or {"path": source, "format": "delta", "options": {"maxFilesPerTrigger": "1"}},
        "stream": {"event_time": "ts", "window": "10 minutes", "watermark": "5 minutes"},
        "checks": [{"name": "rows", "type": "num_rows", "min": 1}],
        "columns": [
            {"name": "id", "type": "long"},
            {
                "name": "status",
                "type": "string",
                "checks": [
                    {"name": "known", "type": "whitelist", "values": ["new", "paid"], "severity": "P1"},
                    {"name": "informative", "type": "missing", "max": 0, "severity": "P2"},
                ],
            },
            {
                "name": "amount",
                "type": "double",
                "checks": [{"name": "positive", "type": "min", "min": 0, "severity": "P1"}],
            },
            {"name": "ts", "type": "timestamp"},
        ],
    }
    path = tmp_path / "events.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _append(spark, source: str, rows: list[tuple]) -> None:
    schema = "id long, status string, amount double, ts timestamp"
    spark.createDataFrame(rows, schema).coalesce(1).write.format("delta").mode("append").save(source)


def _ids(spark, path: str) -> list[int]:
    return sorted(r[0] for r in spark.read.format("delta").load(path).select("id").collect())


def _message(r: tuple) -> str:
    """A row as the JSON text of a Kafka message or a line of a JSON file."""
    return json.dumps({"id": r[0], "status": r[1], "amount": r[2], "ts": r[3].strftime("%Y-%m-%dT%H:%M:%SZ")})


def _assert_outputs(
    spark,
    contract,
    source: str,
    out: dict[str, str],
    commits: list[list[tuple]],
    kind: str = "delta",
    ranges: list[dict] | None = None,
) -> None:
    """Quarantine, valid and results against :func:`_oracle`; each closed window's ``source_range`` is of
    ``kind`` and, given each batch's range (``ranges``, per index of ``commits``), merges its batches'."""
    oracle = _oracle(commits)
    expected_bad = sorted(oracle["bad"])
    expected_good = sorted(oracle["good"])
    assert _ids(spark, out["quarantine"]) == expected_bad  # sorted lists: nothing twice, nothing missing
    assert _ids(spark, out["valid"]) == expected_good
    # every quarantined / valid row names its event-time window's run (one run id per contract + window)
    for table in ("quarantine", "valid"):
        frame = spark.read.format("delta").load(out[table])
        for epoch, run_id in frame.selectExpr("unix_seconds(ts)", "_dq_run_id").collect():
            assert run_id == window_run_id(contract, source, epoch - epoch % WINDOW)
    results = spark.read.format("delta").load(out["results"]).collect()
    by_run: dict[str, list] = {}
    for r in results:
        by_run.setdefault(r["run_id"], []).append(r)
    expected_runs = {window_run_id(contract, source, start): start for start in oracle["closed"]}
    late_only = {s for s in oracle["late"] if s not in oracle["closed"]}
    assert set(by_run) == set(expected_runs) | {window_run_id(contract, source, s) for s in late_only}
    for run_id, start in expected_runs.items():
        rows = {(r["check_type"], r["column"]): r for r in by_run[run_id]}
        window_rows = oracle["windows"][start]
        assert len(by_run[run_id]) == len(rows)  # one row per check: written once
        assert rows[("num_rows", None)]["metric_value"] == len(window_rows)
        assert rows[("min", "amount")]["failed_rows"] == sum(1 for r in window_rows if _negative(r))
        unparsed = sum(1 for r in window_rows if isinstance(r[2], str))
        if unparsed:  # counted by the column's schema check, as in a batch run: never a silent NULL
            schema = next(r for r in by_run[run_id] if r["check_id"] == "amount/schema")
            assert (schema["status"], schema["failed_rows"]) == ("failed", unparsed), schema["message"]
        assert rows[("whitelist", "status")]["failed_rows"] == sum(
            1 for r in window_rows if r[1] is not None and r[1] not in ("new", "paid")
        )
        assert rows[("late_rows", "ts")]["metric_value"] == oracle["late"].get(start, 0)
        assert rows[("watermark_lag", "ts")]["metric_value"] > 0
        begin = dt.datetime.fromtimestamp(start, dt.timezone.utc)
        assert begin.strftime("%Y-%m-%dT%H:%M:%S") in rows[("late_rows", "ts")]["message"]
        covered = {r["source_range"] for r in by_run[run_id]}
        assert len(covered) == 1  # every row of the window records the same range
        document = json.loads(covered.pop())
        assert document["kind"] == kind
        if ranges is not None:
            expected = _merged([ranges[i] for i in sorted(oracle["batches"][start])])
            assert document == json.loads(json.dumps(expected))  # tuples as JSON lists


def _merged(ranges: list[dict]) -> dict:
    """Plain Python: Kafka offsets (first, last per partition) or files of several batches, merged."""
    if ranges[0]["kind"] == "files":
        return {"kind": "files", "files": sorted({tuple(f) for r in ranges for f in r["files"]})}
    offsets: dict = {}
    for r in ranges:
        for topic, partitions in r["offsets"].items():
            for partition, (first, last) in partitions.items():
                lo, hi = offsets.setdefault(topic, {}).get(partition, (first, last))
                offsets[topic][partition] = (min(lo, first), max(hi, last))
    return {"kind": "kafka", "offsets": offsets}


def _tables(tmp_path: Path) -> dict[str, str]:
    return {name: str(tmp_path / name) for name in ("source", "results", "quarantine", "valid", "checkpoint")}


def test_stream_available_now_twice_equals_oracle(spark, tmp_path):
    out = _tables(tmp_path)
    commits = _commits()
    for rows in commits[:3]:
        _append(spark, out["source"], rows)
    contract = load_contract(_contract(tmp_path, out["source"]))

    def go() -> None:
        run_stream(
            spark,
            contract,
            checkpoint=out["checkpoint"],
            results_table=out["results"],
            quarantine_table=out["quarantine"],
            valid_table=out["valid"],
        )

    go()
    _assert_outputs(spark, contract, out["source"], out, commits[:3])
    assert _oracle(commits[:3])["closed"] == [int(_at(m).timestamp()) for m in (0, 10, 20)]
    _append(spark, out["source"], commits[3])
    go()  # only the new commit: nothing twice
    _assert_outputs(spark, contract, out["source"], out, commits)
    go()  # caught up: nothing new, nothing changes
    _assert_outputs(spark, contract, out["source"], out, commits)


CLI = [sys.executable, "-c", "import sys; from airflow_dq_contracts.cli.main import main; sys.exit(main())"]


def _stream_cli(contract: Path, out: dict[str, str], env: dict[str, str], log: Path) -> subprocess.Popen:
    args = [
        "stream",
        str(contract),
        "--checkpoint",
        out["checkpoint"],
        "--trigger",
        "available-now",
        "--results-table",
        out["results"],
        "--quarantine-table",
        out["quarantine"],
        "--valid-table",
        out["valid"],
        "--master",
        "local[2]",
    ]
    # the output to a file: a pipe nobody reads while waiting would fill up and block the driver
    with open(log, "w", encoding="utf-8") as sink:
        return subprocess.Popen([*CLI, *args], env=env, start_new_session=True, stdout=sink, stderr=subprocess.STDOUT)


def test_kill_9_mid_batch_then_restart_every_row_once(spark, tmp_path):
    out = _tables(tmp_path)
    commits = _commits()[:3]  # three micro-batches (late rows in the third): the kill lands in the second
    for rows in commits:
        _append(spark, out["source"], rows)
    path = _contract(tmp_path, out["source"])
    contract = load_contract(path)
    env = dict(os.environ, **{PAUSE_ENV: "1"})
    proc = _stream_cli(path, out, env, tmp_path / "first.log")
    marker = Path(out["checkpoint"]) / "_dq_stream" / "paused-1"
    deadline = time.monotonic() + 900  # a JVM start and one batch, on a busy 2-core machine
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    if not marker.exists():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        pytest.fail(f"batch 1 never paused:\n{(tmp_path / 'first.log').read_text(encoding='utf-8')[-5000:]}")
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM, in the middle of batch 1
    proc.wait(timeout=30)
    # batch 1's quarantine rows are committed, its valid rows and its checkpoint entry are not
    first_two = sorted(_oracle(commits[:2])["bad"])
    assert _ids(spark, out["quarantine"]) == first_two
    env.pop(PAUSE_ENV)
    restart = _stream_cli(path, out, env, tmp_path / "restart.log")
    restart.wait(timeout=900)
    assert restart.returncode == 0, (tmp_path / "restart.log").read_text(encoding="utf-8")[-5000:]
    _assert_outputs(spark, contract, out["source"], out, commits)


def _run(spark, contract, out: dict[str, str]) -> None:
    run_stream(
        spark,
        contract,
        checkpoint=out["checkpoint"],
        results_table=out["results"],
        quarantine_table=out["quarantine"],
        valid_table=out["valid"],
    )


def test_kafka_stream_equals_oracle_with_offsets(spark, kafka_broker, tmp_path):
    from airflow_dq_contracts.contract.model import ColumnType
    from airflow_dq_contracts.engine.kafka_source import read_kafka

    out = _tables(tmp_path)
    topic = f"events-{uuid.uuid4().hex[:8]}"
    kafka_broker.create_topic(topic, partitions=2)
    servers = kafka_broker.bootstrap_servers
    # a batch contract's endingOffsets is dropped for the stream; startingOffsets defaults to earliest
    options = {"kafka.bootstrap.servers": servers, "subscribe": topic, "endingOffsets": "latest"}
    contract = load_contract(_contract(tmp_path, "", {"format": "kafka", "options": options}))
    commits = _commits()
    for rows in commits:  # one produce, one available-now run: one micro-batch each
        kafka_broker.produce(topic, [_message(r) for r in rows], keys=[str(r[0]) for r in rows])
        _run(spark, contract, out)
    # where each message landed, read back from the broker (a batch read)
    landed = read_kafka(
        spark, {"kafka.bootstrap.servers": servers, "subscribe": topic}, {"id": ColumnType("long")}, True
    )
    where = {int(r["id"]): (str(r["_kafka_partition"]), int(r["_kafka_offset"])) for r in landed.collect()}
    ranges = []
    for rows in commits:
        offsets: dict = {}
        for r in rows:
            partition, offset = where[r[0]]
            lo, hi = offsets.get(partition, (offset, offset))
            offsets[partition] = (min(lo, offset), max(hi, offset))
        ranges.append({"kind": "kafka", "offsets": {topic: offsets}})
    dataset = f"kafka://{servers}/{topic}"
    _assert_outputs(spark, contract, dataset, out, commits, "kafka", json.loads(json.dumps(ranges)))


def test_file_folder_stream_two_files_two_triggers(spark, tmp_path):
    out = _tables(tmp_path)
    folder = tmp_path / "landing"
    folder.mkdir()
    contract = load_contract(_contract(tmp_path, "", {"path": str(folder), "format": "json"}))
    commits = _commits()
    commits[1].append((900, "new", "12,5", _at(16)))  # text where a double is declared (window 1)
    files = [commits[0] + commits[1], commits[2] + commits[3]]
    ranges = []
    for index, rows in enumerate(files):  # a file lands, the stream runs: two triggers, one batch each
        path = folder / f"part-{index}.json"
        path.write_text("".join(_message(r) + "\n" for r in rows), encoding="utf-8")
        stat = path.stat()
        ranges.append({"kind": "files", "files": [[f"file:{path}", stat.st_size, stat.st_mtime_ns // 1_000_000]]})
        _run(spark, contract, out)
    _assert_outputs(spark, contract, str(folder), out, files, "files", json.loads(json.dumps(ranges)))


def test_stream_key_is_validated_with_locations(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ncolumns:\n  - name: ts\n    type: timestamp\nstream:\n  event_time: ts\n  window: ten minutes\n",
        encoding="utf-8",
    )
    with pytest.raises(Exception) as err:
        load_contract(bad)
    assert "bad.yaml:7: stream.window: 'window' must be a positive duration" in str(err.value)
    assert parse_duration("5 minutes") == 300 and parse_duration("2 hours") == 7200


def test_windows_closed_together_equal_each_window_alone(spark, tmp_path):
    """Several windows closed by one batch are evaluated in one grouped pass: each window's results are
    exactly those of its own run on its rows (grouped passes, a per-check filter, a reference join run
    per window, a check that errors), and the counts are those of plain Python."""
    from airflow_dq_contracts.engine.evaluator import Evaluator
    from airflow_dq_contracts.engine.stream_windows import WindowRun, evaluate_windows

    doc = {
        "name": "grouped_windows",
        "version": "1.0.0",
        "dataset": {"path": str(tmp_path / "source"), "format": "delta"},
        "references": {"known": {"path": str(tmp_path / "known"), "format": "delta"}},
        "checks": [
            {"name": "rows", "type": "num_rows", "min": 3},
            {"name": "known id", "type": "referential", "columns": ["id"], "reference": "known"},
            {"name": "cheap", "type": "table_condition", "condition": "avg(amount) < 10"},
        ],
        "columns": [
            {
                "name": "id",
                "type": "long",
                "checks": [
                    {"name": "unique", "type": "duplicates", "max": 0},
                    {"name": "varied", "type": "cardinality", "min": 3},
                ],
            },
            {
                "name": "status",
                "type": "string",
                "checks": [
                    {"name": "known", "type": "whitelist", "values": ["new", "paid"]},
                    {"name": "paid ones have one", "type": "missing", "max": 0, "filter": "amount > 5"},
                ],
            },
            {
                "name": "amount",
                "type": "double",
                "checks": [
                    {"name": "positive", "type": "min", "min": 0},
                    {"name": "median", "type": "percentile", "percentile": 0.5, "between": [0, 6]},
                    {"name": "spread", "type": "stddev", "max": 3},
                ],
            },
            {"name": "ghost", "type": "double", "checks": [{"name": "not there", "type": "max", "max": 1}]},
            {"name": "ts", "type": "timestamp"},
        ],
    }
    contract = load_contract(doc)
    data = {  # window start (seconds after T0) → rows (id, status, amount, minute)
        0: [(1, "new", 1.0, 1), (2, "paid", 9.0, 3), (3, None, 7.0, 8)],
        600: [(4, "new", 2.0, 11), (4, "bogus", -1.0, 12), (9, "new", 3.0, 15), (10, None, 2.5, 19)],
        1200: [(5, "paid", 40.0, 21)],
    }
    base = int(T0.timestamp())
    rows = spark.createDataFrame(
        [(i, s, a, _at(m), base + start) for start, listed in data.items() for (i, s, a, m) in listed],
        "id long, status string, amount double, ts timestamp, _dq_window long",
    )
    known = spark.createDataFrame([(n,) for n in range(1, 7)], "id long")
    runs = []
    for start in data:
        begin, end = _at(start / 60), _at(start / 60 + WINDOW / 60)
        runs.append(WindowRun(base + start, f"run-{start}", f"ts >= '{begin}' AND ts < '{end}'", end))
    together = evaluate_windows(
        contract, rows, runs, window_column="_dq_window", dataset="events", references={"known": known}
    )
    fields = ("run_id", "check_id", "status", "metric_value", "failed_rows", "message", "row_count", "filter")
    for run, start in zip(runs, data):
        alone = Evaluator(
            contract,
            rows.where(f"_dq_window = {run.start}").drop("_dq_window"),
            run.end,
            run_id=run.run_id,
            dataset="events",
            filter=run.filter,
            apply_filter=False,
            references={"known": known},
        ).run()
        got = {r.check_id: tuple(getattr(r, f) for f in fields) for r in together[run.start].checks}
        want = {r.check_id: tuple(getattr(r, f) for f in fields) for r in alone.checks}
        assert got == want
        assert together[run.start].row_count == len(data[start])
        by_type = {(r.check_type, r.column): r for r in together[run.start].checks}
        ids = [r[0] for r in data[start]]
        assert by_type[("num_rows", None)].metric_value == len(ids)
        assert by_type[("duplicates", "id")].metric_value == len(ids) - len(set(ids))
        assert by_type[("referential", None)].failed_rows == sum(1 for i in ids if i not in range(1, 7))
        assert by_type[("whitelist", "status")].failed_rows == sum(
            1 for r in data[start] if r[1] is not None and r[1] not in ("new", "paid")
        )
        assert by_type[("missing", "status")].row_count == sum(1 for r in data[start] if r[2] > 5)
        assert by_type[("max", "ghost")].status == "error"


def test_a_contract_whose_row_checks_only_flag_appends_no_quarantine(spark, tmp_path):
    """Every row is valid, flagged as the oracle says; the quarantine table is never written (as in a batch run)."""
    out = _tables(tmp_path)
    commits = _commits()[:2]
    for rows in commits:
        _append(spark, out["source"], rows)
    path = _contract(tmp_path, out["source"])
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    for column in doc["columns"]:
        for check in column.get("checks", []):
            check["severity"] = "P3"  # flag
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    run_stream(
        spark,
        load_contract(path),
        checkpoint=out["checkpoint"],
        quarantine_table=out["quarantine"],
        valid_table=out["valid"],
    )
    assert not Path(out["quarantine"]).exists()
    flags = {
        r["id"]: sorted(f["check_name"] for f in r["_dq_flags"])
        for r in spark.read.format("delta").load(out["valid"]).collect()
    }

    def expected(r: tuple) -> list[str]:
        names = ["known"] if r[1] is not None and r[1] not in ("new", "paid") else []
        names += ["informative"] if r[1] is None else []
        names += ["positive"] if _negative(r) else []
        return sorted(names)

    assert flags == {r[0]: expected(r) for rows in commits for r in rows}
    assert any(flags.values())


def test_copies_within_a_micro_batch_are_quarantined_with_or_without_a_shuffle(spark, tmp_path):
    """A row-level ``duplicates`` check sees one micro-batch: the copies of a key within a batch are quarantined,
    whether the batch came as one file or three (a plain-Python count per commit). A batch of one partition is
    counted in place (its plan has no exchange), with the same verdicts as the shuffled window."""
    from airflow_dq_contracts.engine.row_verdicts import QUARANTINED
    from airflow_dq_contracts.engine.streams import _one_partition, _tagging_result, contract_batch_writer

    source, out = str(tmp_path / "source"), _tables(tmp_path)
    serial = iter(range(1, 1000))
    # (n: unique row serial, id: the key, status); ids repeat within a commit and across commits
    commits = [
        [
            (next(serial), key, status)
            for key, status in [(1, "new"), (2, "new"), (1, "paid"), (3, "bogus"), (4, "new")]
        ],
        [(next(serial), key, "new") for key in (4, 5, 5, 6, 7, 7, 7, 8)],
        [(next(serial), key, "new") for key in (9, 9, 10, 1)],
    ]
    doc = {
        "name": "copies",
        "version": "1.0.0",
        "dataset": {"path": source, "format": "delta"},
        "columns": [
            {"name": "n", "type": "long"},
            {"name": "id", "type": "long", "checks": [{"name": "unique", "type": "duplicates", "severity": "P0"}]},
            {
                "name": "status",
                "type": "string",
                "checks": [{"name": "known", "type": "whitelist", "values": ["new", "paid"], "severity": "P1"}],
            },
        ],
    }
    path = tmp_path / "copies.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    contract = load_contract(path)
    for index, rows in enumerate(commits):  # one available-now run per commit: one micro-batch each
        frame = spark.createDataFrame(rows, "n long, id long, status string")
        frame = frame.repartition(3) if index == 1 else frame.coalesce(1)
        frame.write.format("delta").mode("append").save(source)
        run_stream(
            spark, contract, checkpoint=out["checkpoint"], quarantine_table=out["quarantine"], valid_table=out["valid"]
        )

    def bad(rows: list[tuple]) -> set[int]:
        counts: dict[int, int] = {}
        for _, key, _ in rows:
            counts[key] = counts.get(key, 0) + 1
        return {n for n, key, status in rows if counts[key] > 1 or status not in ("new", "paid")}

    expected_bad = sorted(n for rows in commits for n in bad(rows))
    every = sorted(r[0] for rows in commits for r in rows)
    quarantined = sorted(r[0] for r in spark.read.format("delta").load(out["quarantine"]).select("n").collect())
    valid = sorted(r[0] for r in spark.read.format("delta").load(out["valid"]).select("n").collect())
    assert quarantined == expected_bad
    assert valid == sorted(set(every) - set(expected_bad))

    # the one-partition batch's plan counts copies without an exchange; the same rows, the same verdicts
    writer = contract_batch_writer(contract, valid_table=out["valid"], query_id="plan-check")
    batch = spark.read.format("delta").option("versionAsOf", 0).load(source)  # the first commit: one file
    marked = writer.tagger.mark(batch, one_partition=_one_partition)  # what the writer passes
    shuffled = writer.tagger.mark(batch)
    assert "Exchange" not in marked._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" in shuffled._jdf.queryExecution().executedPlan().toString()
    for frame in (marked, shuffled):
        assert sorted(r["n"] for r in frame.where(QUARANTINED).collect()) == sorted(bad(commits[0]))
    assert _tagging_result(contract, "x").checks  # the row checks all tag in a stream
