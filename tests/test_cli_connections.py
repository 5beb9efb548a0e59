"""The CLI reads Airflow connections: ``--storage-conn-id`` (history, report, run, suggest) and ``--conn-id`` (Spark Connect).

The S3 tests use the session's real SeaweedFS (tests/s3_fixtures.py): the credentials exist only in an ``aws``
connection given as ``AIRFLOW_CONN_<ID>`` (JSON) in the command's environment — none in ``AWS_*``. The
failures (no connection, no credentials, no Airflow) need no server: each must be one line on stderr, a
non-zero exit, no traceback, no AWS SDK warning dump, no secret.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  — AIRFLOW_HOME in a temp folder for this process and its children

import datetime as dt
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_dq_contracts.cli.main import build_parser

UTC = dt.timezone.utc
ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-c", "import sys; from airflow_dq_contracts.cli.main import main; sys.exit(main())"]


def bare_env(**extra: str) -> dict[str, str]:
    """This environment without any AWS_* variable or Airflow connection, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AIRFLOW_CONN_"))}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300)


def one_line_failure(done: subprocess.CompletedProcess) -> str:
    """The single stderr line of a failed command (asserting there is exactly one and no traceback)."""
    assert done.returncode not in (0, None), done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and "imds" not in done.stderr.lower()
    return lines[0]


def aws_connection(settings, secret: str | None = None) -> str:
    """An ``aws`` connection to the test server, as ``AIRFLOW_CONN_<ID>`` JSON (the Amazon provider's fields)."""
    return json.dumps(
        {
            "conn_type": "aws",
            "login": settings.access_key_id,
            "password": secret or settings.secret_access_key,
            "extra": {"endpoint_url": settings.endpoint_url, "region_name": "us-east-1"},
        }
    )


def write_results(location: str, options: dict[str, str]) -> None:
    """Two runs of contract ``orders`` in a results table: run-a all passed, run-b with one failure."""
    from deltalake import write_deltalake

    from airflow_dq_contracts.results import RESULT_COLUMNS, CheckResult
    from airflow_dq_contracts.store.results.driver_commits import arrow_schema, result_row

    reference = dt.datetime(2024, 3, 1, tzinfo=UTC)
    records = []
    for offset, (run_id, outcomes) in enumerate({"run-a": (True, True), "run-b": (True, False)}.items()):
        for check_id, passed in zip(("_table_/volume", "id/ids_present"), outcomes, strict=True):
            moment = reference + dt.timedelta(days=offset)
            records.append(
                CheckResult(run_id=run_id, contract_name="orders", contract_version="1.0.0", dataset="orders",
                            check_id=check_id, check_name=check_id, check_type="row_count", column=None,
                            severity="P1", action="gate", validator="noop", metric_value=1.0,
                            status="passed" if passed else "failed", passed=passed, failed_rows=None, message="",
                            row_count=10, evaluated_at=moment, reference_time=moment)
            )  # fmt: skip
    rows = pa.Table.from_pylist(
        [dict(zip([name for name, _ in RESULT_COLUMNS], result_row(r), strict=True)) for r in records],
        schema=arrow_schema(RESULT_COLUMNS),
    )
    write_deltalake(location, rows, partition_by=["contract_name"], storage_options=options)


def test_every_table_command_takes_the_connection_options():
    parser = build_parser()
    for argv in (
        ["run", "c.yaml", "--storage-conn-id", "lake", "--conn-id", "sc"],
        ["history", "orders", "--results-table", "s3://b/r", "--storage-conn-id", "lake"],
        ["report", "--results-table", "s3://b/r", "--contract", "orders", "-o", "r.html", "--storage-conn-id", "lake"],
        ["suggest", "--input", "s3://b/t", "--storage-conn-id", "lake", "--conn-id", "sc"],
    ):
        args = parser.parse_args(argv)
        assert args.storage_conn_id == "lake"
        assert getattr(args, "conn_id", "sc") == "sc"
    with pytest.raises(SystemExit):  # one server: a URL or a connection
        parser.parse_args(["run", "c.yaml", "--remote", "sc://h:1", "--conn-id", "sc"])


def test_history_and_report_on_s3_through_an_airflow_connection_only(s3, tmp_path):
    results = s3.url("cli-conn/dq_results")
    write_results(results, s3.settings.delta_options())
    env = bare_env(AIRFLOW_CONN_LAKE_CLI=aws_connection(s3.settings))

    history = cli(env, "history", "orders", "--results-table", results, "--json", "--storage-conn-id", "lake_cli")
    assert history.returncode == 0, history.stderr
    checks = {c["check_id"]: (c["runs"], c["failures"]) for c in json.loads(history.stdout)["checks"]}
    assert checks == {"_table_/volume": (2, 0), "id/ids_present": (2, 1)}

    report_url = s3.url("cli-conn/reports/orders.html")
    report = cli(env, "report", "--results-table", results, "--contract", "orders", "--run-id", "run-b",
                 "-o", report_url, "--storage-conn-id", "lake_cli")  # fmt: skip
    assert report.returncode == 0, report.stderr
    status, page = s3.server.get_object(report_url.split(f"s3://{s3.server.bucket}/", 1)[1])
    assert status == 200 and b"run-b" in page and b"id/ids_present" in page

    # A refused secret: one line naming the connection and the table, the secret nowhere.
    wrong = "wrong-" + uuid.uuid4().hex
    env_wrong = bare_env(AIRFLOW_CONN_LAKE_CLI=aws_connection(s3.settings, secret=wrong))
    refused = cli(env_wrong, "history", "orders", "--results-table", results, "--storage-conn-id", "lake_cli")
    line = one_line_failure(refused)
    assert results in line and "storage connection 'lake_cli' (type aws)" in line
    for done in (history, report, refused):
        for secret in (s3.settings.secret_access_key, wrong):
            assert secret not in done.stdout + done.stderr


def test_a_missing_connection_and_missing_credentials_are_one_line_each():
    env = bare_env()
    missing = cli(env, "history", "orders", "--results-table", "s3://lake/dq_results", "--storage-conn-id", "nope")
    line = one_line_failure(missing)
    assert missing.returncode == 1
    assert line.startswith("dq-contracts history: --storage-conn-id nope: storage connection 'nope' cannot be read")
    assert "AIRFLOW_CONN_NOPE" in line

    for argv in (
        ["history", "orders", "--results-table", "s3://lake/dq_results"],
        ["report", "--results-table", "s3://lake/dq_results", "--contract", "orders", "-o", "r.html"],
    ):
        bare = cli(env, *argv)
        line = one_line_failure(bare)
        assert bare.returncode == 4
        assert "cannot read s3://lake/dq_results: the credentials are missing or refused" in line
        assert "tried: the environment (no AWS_ACCESS_KEY_ID)" in line and "no --storage-conn-id" in line


@pytest.mark.spark  # the Spark Connect client (its pandas) is the Spark side: not in the plain-Python matrix step
def test_a_spark_connect_connection_is_read_and_a_wrong_type_is_refused(tmp_path):
    contract = tmp_path / "c.yaml"
    contract.write_text("name: c\nchecks:\n  - {name: rows, type: num_rows, min: 1}\n", encoding="utf-8")
    token = "tok-" + uuid.uuid4().hex
    closed = json.dumps({"conn_type": "spark_connect", "host": "127.0.0.1", "port": 1, "password": token})
    env = bare_env(AIRFLOW_CONN_SC_CLI=closed, AIRFLOW_CONN_LAKE_CLI=json.dumps({"conn_type": "aws"}))
    # The connection names a server nobody listens on: the run goes there (not to a local Spark) and says so.
    done = cli(env, "run", str(contract), "--input", str(tmp_path), "--conn-id", "sc_cli", "--connect-timeout", "2")
    assert done.returncode == 4, done.stderr
    assert "sc://127.0.0.1:1/" in done.stderr and token not in done.stdout + done.stderr
    wrong = cli(env, "run", str(contract), "--input", str(tmp_path), "--conn-id", "lake_cli")
    line = one_line_failure(wrong)
    assert (
        "--conn-id lake_cli: connection 'lake_cli' has type 'aws'; --conn-id takes a spark_connect connection" in line
    )


def test_without_airflow_the_options_say_they_need_it(tmp_path):
    code = (
        "import sys; sys.modules['airflow'] = None\n"  # Airflow not installed: `import airflow` fails
        "from airflow_dq_contracts.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    for argv in (
        ["history", "orders", "--results-table", str(tmp_path / "r"), "--storage-conn-id", "lake"],
        ["run", str(tmp_path / "c.yaml"), "--conn-id", "sc"],
    ):
        done = subprocess.run(
            [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=bare_env(), timeout=120
        )
        line = one_line_failure(done)
        assert done.returncode == 1
        assert "reads an Airflow connection and needs Apache Airflow installed" in line, line
