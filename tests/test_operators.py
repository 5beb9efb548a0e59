"""ContractCheckOperator, ContractBranchOperator and the submit hook — everything short of a DAG run.

Real Airflow objects (operators in a DAG, the real SparkSubmitHook command builder, a real
spark-submit for the kill test); expectations are written by hand or computed here in plain Python.
The full runs through ``dag.test()`` are in ``test_dags_examples.py``.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from airflow_dq_contracts.results import CheckResult, ContractResult

ROOT = Path(__file__).resolve().parent.parent
GOOD = """\
name: orders
version: 1.0.0
columns:
  - name: order_id
    type: long
    checks:
      - {name: Order ID is unique, type: duplicates, max: 0, severity: P0}
  - name: order_date
    type: date
    checks:
      - name: Day is {{ ds }}
        type: whitelist
        values: ["{{ ds }}"]
        severity: P2
"""


# --------------------------------------------------------------------------------------- import graph


def test_operator_and_hook_modules_import_no_pyspark():
    code = (
        "import sys\n"
        "import airflow_dq_contracts.operators.contract_check, airflow_dq_contracts.operators.contract_branch\n"
        "import airflow_dq_contracts.hooks.contract_submit\n"
        "import airflow_dq_contracts.operators.openlineage, airflow_dq_contracts.interop.lineage\n"
        "from airflow_dq_contracts.operators import ContractCheckOperator, ContractBranchOperator\n"
        "bad = sorted(m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


# --------------------------------------------------------------------------------------- helpers


def _record(
    check_id: str, *, severity: str, action: str, status: str, failed_rows: int | None = None, column: str | None = "c"
) -> CheckResult:
    return CheckResult(
        run_id="r1",
        contract_name="orders",
        contract_version="1.0.0",
        dataset="/d",
        check_id=check_id,
        check_name=check_id,
        check_type="missing",
        column=column,
        severity=severity,
        action=action,
        validator="max 0",
        metric_value=float(failed_rows or 0),
        status=status,
        passed=status == "passed",
        failed_rows=failed_rows,
        message="" if status == "passed" else f"{check_id} broke",
        row_count=10,
    )


def _summary(*records: CheckResult) -> dict:
    now = dt.datetime(2024, 5, 2, tzinfo=dt.timezone.utc)
    return ContractResult(
        run_id="r1",
        contract_name="orders",
        contract_version="1.0.0",
        dataset="/d",
        row_count=10,
        checks=list(records),
        started_at=now,
        finished_at=now,
    ).summary()


def _branch(**kwargs):
    from airflow.sdk import DAG

    from airflow_dq_contracts.operators import ContractBranchOperator

    with DAG(dag_id=f"b_{abs(hash(str(kwargs)))}", schedule=None, start_date=dt.datetime(2024, 1, 1)):
        return ContractBranchOperator(
            task_id="route",
            check_task_id="check",
            pass_task_ids=["publish"],
            quarantine_task_ids=["quarantine"],
            gate_task_ids=["alert"],
            **kwargs,
        )


# --------------------------------------------------------------------------------------- branch


PASSING = _record("a/ok", severity="P0", action="gate", status="passed", failed_rows=0)
ROW_P1 = _record("email/format", severity="P1", action="quarantine", status="failed", failed_rows=3)
TABLE_P0 = _record("t/num_rows", severity="P0", action="gate", status="failed", column=None)
FLAG_P2 = _record("amount/mean", severity="P2", action="flag", status="failed")
ERR_Q = _record("email/len", severity="P1", action="quarantine", status="error")


@pytest.mark.parametrize(
    "records,expected",
    [
        ((PASSING,), "pass"),
        ((PASSING, FLAG_P2), "pass"),  # flags never route
        ((PASSING, ROW_P1), "quarantine"),
        ((PASSING, ROW_P1, TABLE_P0), "gate"),  # gate wins over quarantine
        ((PASSING, ERR_Q), "gate"),  # an errored quarantine check fails closed
    ],
)
def test_branch_follows_the_design_decision(records, expected):
    branch = _branch()
    decision, _ = branch.decide(_summary(*records))
    assert decision == expected
    assert (
        branch.branches()[decision] == {"pass": ["publish"], "quarantine": ["quarantine"], "gate": ["alert"]}[expected]
    )


def test_branch_policy_override_remaps_by_severity_and_level():
    strict = _branch(policy={"P1": "gate"})
    assert strict.decide(_summary(PASSING, ROW_P1))[0] == "gate"
    lenient = _branch(policy={"P0": {"table": "flag"}})
    assert lenient.decide(_summary(PASSING, TABLE_P0))[0] == "pass"
    # Only the table level was relaxed: a P0 row-level violation still gates.
    p0_row = _record("id/dup", severity="P0", action="gate", status="failed", failed_rows=2)
    assert lenient.decide(_summary(p0_row))[0] == "gate"
    promoted = _branch(policy={"P2": {"table": "gate", "row": "quarantine"}})
    assert promoted.decide(_summary(FLAG_P2))[0] == "gate"


@pytest.mark.parametrize(
    "policy,fragment",
    [
        ({"P9": "gate"}, "unknown severity 'P9'"),
        ({"P1": "stop"}, "unknown action 'stop'"),
        ({"P1": {"table": "quarantine"}}, "cannot quarantine rows"),
        ({"P1": {"rows": "gate"}}, "unknown level"),
    ],
)
def test_branch_rejects_bad_policies_when_the_dag_is_parsed(policy, fragment):
    with pytest.raises(ValueError, match=fragment):
        _branch(policy=policy)


def test_branch_refuses_a_summary_that_contradicts_its_checks_and_non_summaries():
    from airflow_dq_contracts.version_compat import AirflowException

    branch = _branch()
    tampered = _summary(PASSING, TABLE_P0)
    tampered["decision"] = "pass"
    with pytest.raises(AirflowException, match="summary says 'pass' but its checks decide 'gate'"):
        branch.decide(tampered)
    with pytest.raises(AirflowException, match="not a contract summary"):
        branch.decide(["not", "a", "summary"])


def test_failed_checks_table_lists_only_failures_most_severe_first():
    from airflow_dq_contracts.operators.contract_branch import failed_checks_table

    table = failed_checks_table([PASSING, FLAG_P2, ROW_P1, TABLE_P0]).splitlines()
    assert table[0].split() == [
        "severity",
        "action",
        "status",
        "check",
        "metric",
        "failed_rows",
        "validator",
        "message",
    ]
    assert [line.split()[3] for line in table[1:]] == ["t/num_rows", "email/format", "amount/mean"]
    assert failed_checks_table([PASSING]) == ""


# --------------------------------------------------------------------------------------- check operator


def _check(tmp_path: Path, **kwargs):
    from airflow.sdk import DAG

    from airflow_dq_contracts.operators import ContractCheckOperator

    with DAG(
        dag_id=f"c_{abs(hash(str(kwargs)))}",
        schedule=None,
        start_date=dt.datetime(2024, 1, 1),
        template_searchpath=[str(tmp_path)],
    ):
        return ContractCheckOperator(task_id="check", **{"input_path": "/data/orders", **kwargs})


def _context(**extra):
    import pendulum

    return {
        "ds": "2024-05-01",
        "data_interval_end": pendulum.datetime(2024, 5, 2, tz="UTC"),
        "data_interval_start": pendulum.datetime(2024, 5, 1, tz="UTC"),
        **extra,
    }


def test_contract_file_is_found_read_and_rendered_as_a_template(tmp_path):
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "orders.yaml").write_text(GOOD)
    op = _check(tmp_path, contract="contracts/orders.yaml", filter="order_date = '{{ ds }}'")
    op.render_template_fields(_context())
    assert op.contract == GOOD.replace("{{ ds }}", "2024-05-01")
    assert op.filter == "order_date = '2024-05-01'"
    assert op.reference_time == "2024-05-02 00:00:00+00:00"
    assert op._reference_time() == dt.datetime(2024, 5, 2, tzinfo=dt.timezone.utc)
    contract, text = op.load_contract()
    assert [c.name for c in contract.all_checks()] == ["Order ID is unique", "Day is 2024-05-01"]
    assert text == op.contract


def test_absolute_contract_path_and_dict_contract(tmp_path):
    path = tmp_path / "elsewhere.yml"
    path.write_text(GOOD)
    op = _check(tmp_path, contract=str(path))
    op.render_template_fields(_context())
    assert "Day is 2024-05-01" in op.contract
    as_dict = {
        "name": "orders",
        "columns": [
            {
                "name": "d",
                "type": "string",
                "checks": [{"name": "d is {{ ds }}", "type": "whitelist", "values": ["{{ ds }}"]}],
            }
        ],
    }
    op = _check(tmp_path, contract=as_dict)
    op.render_template_fields(_context())
    contract, text = op.load_contract()
    assert contract.columns[0].checks[0].params["values"] == ["2024-05-01"]
    assert json.loads(text)["columns"][0]["checks"][0]["name"] == "d is 2024-05-01"


def test_inline_yaml_errors_are_located_in_the_task(tmp_path):
    op = _check(tmp_path, contract="name: x\ncolumns:\n  - {name: a, checks: [{name: n, type: nope}]}\n")
    op.render_template_fields(_context())
    message = _fail_message(op.load_contract)
    assert message.splitlines()[1].startswith(
        "<check.contract>:3: columns[0].checks[0].type: unknown column-level check type 'nope'"
    )


def test_render_contract_false_keeps_braces(tmp_path):
    text = GOOD.replace("{{ ds }}", "{{ not_a_template }}")
    (tmp_path / "raw.yaml").write_text(text)
    op = _check(tmp_path, contract="raw.yaml", render_contract=False)
    op.render_template_fields(_context())
    assert op.contract == text


def _fail_message(callable_) -> str:
    from airflow_dq_contracts.version_compat import AirflowFailException

    with pytest.raises(AirflowFailException) as info:
        callable_()
    return str(info.value)


def test_missing_contract_file_is_a_located_failure(tmp_path):
    op = _check(tmp_path, contract="contracts/nope.yaml")
    message = _fail_message(lambda: op.render_template_fields(_context()))
    assert message.startswith("contracts/nope.yaml: contract file not found (looked in: ")
    assert str(tmp_path / "contracts" / "nope.yaml") in message


def test_template_errors_in_the_contract_are_located(tmp_path):
    (tmp_path / "broken.yaml").write_text("name: x\n\ncolumns: {% if %}\n")
    op = _check(tmp_path, contract="broken.yaml")
    assert _fail_message(lambda: op.render_template_fields(_context())).startswith(
        "broken.yaml:3: template error in the contract:"
    )
    (tmp_path / "undefined.yaml").write_text("name: {{ no_such_variable }}\n")
    op = _check(tmp_path, contract="undefined.yaml")
    assert "undefined.yaml: template error in the contract: 'no_such_variable' is undefined" in _fail_message(
        lambda: op.render_template_fields(_context())
    )


def test_invalid_contract_fails_fast_with_every_problem_located(tmp_path):
    bad = GOOD.replace("max: 0", "maxx: 0").replace("severity: P2", "severity: P7")
    (tmp_path / "bad.yaml").write_text(bad)
    op = _check(tmp_path, contract="bad.yaml")
    op.render_template_fields(_context())
    message = _fail_message(op.load_contract)
    lines = message.splitlines()
    assert lines[0] == "invalid contract, nothing submitted:"
    assert lines[1].startswith("bad.yaml:7: columns[0].checks[0].maxx: unknown key 'maxx'")
    assert lines[2].startswith("bad.yaml:14: columns[1].checks[0].severity:")


@pytest.mark.parametrize(
    "value,expected",
    [
        ("2024-05-02T00:00:00+02:00", dt.datetime(2024, 5, 1, 22, tzinfo=dt.timezone.utc)),
        ("2024-05-02 00:00:00", dt.datetime(2024, 5, 2, tzinfo=dt.timezone.utc)),  # naive = UTC
        ("None", None),  # a run without a data interval
        ("", None),
        (None, None),
    ],
)
def test_reference_time_normalisation(tmp_path, value, expected):
    op = _check(tmp_path, contract=str(tmp_path / "x.yaml"), reference_time=value)
    assert op._reference_time() == expected


@pytest.mark.parametrize(
    "interval_end,expected",
    [
        (dt.datetime(2024, 5, 2, tzinfo=dt.timezone.utc), dt.datetime(2024, 5, 2, tzinfo=dt.timezone.utc)),  # scheduled
        (None, None),  # Airflow 3.1 without a logical date: the name is there, the value None
        ("absent", None),  # Airflow 3.0 without a logical date: the name is not in the context at all
    ],
)
def test_default_reference_time_renders_with_or_without_a_data_interval(tmp_path, interval_end, expected):
    op = _check(tmp_path, contract={"name": "c", "columns": [{"name": "id", "type": "long"}]})
    context = {} if interval_end == "absent" else {"data_interval_end": interval_end}
    op.render_template_fields(context, op.dag.get_template_env())  # Airflow's env: StrictUndefined
    assert op._reference_time() == expected


def test_bad_reference_time_fails_clearly(tmp_path):
    op = _check(tmp_path, contract=str(tmp_path / "x.yaml"), reference_time="yesterday-ish")
    assert _fail_message(op._reference_time) == "check: reference_time: not an ISO-8601 time: 'yesterday-ish'"


def test_table_and_input_path_are_exclusive(tmp_path):
    with pytest.raises(ValueError, match="give table= or input_path=, not both"):
        _check(tmp_path, contract="c.yaml", table="silver.orders")


def test_run_id_is_deterministic_from_dag_run_and_task(tmp_path):
    from airflow_dq_contracts.results import make_run_id

    op = _check(tmp_path, contract="c.yaml")

    class TI:
        dag_id, run_id, task_id, map_index = "d", "scheduled__2024-05-01", "check", -1

    first = op._run_id({"ti": TI()})[0]
    assert first == op._run_id({"ti": TI()})[0] == make_run_id("d", "scheduled__2024-05-01", "check")
    TI.map_index = 3  # mapped tasks get one run id per map index
    assert op._run_id({"ti": TI()})[0] == make_run_id("d", "scheduled__2024-05-01", "check", "3") != first


def test_default_outputs_live_in_the_warehouse(monkeypatch, tmp_path):
    from airflow_dq_contracts.operators.contract_check import (
        default_quarantine_table,
        default_results_table,
        default_warehouse,
    )
    from airflow_dq_contracts.storage.locations import resolve_location

    monkeypatch.delenv("DQ_CONTRACTS_WAREHOUSE", raising=False)
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    assert default_warehouse() == str(tmp_path / "dq_warehouse")
    monkeypatch.setenv("DQ_CONTRACTS_WAREHOUSE", "/srv/wh")
    assert default_warehouse() == "/srv/wh"
    assert default_results_table("/srv/wh") == "/srv/wh/dq_results"
    assert default_quarantine_table("s3a://bucket/wh", "Orders (EU)") == "s3a://bucket/wh/dq_quarantine/orders_eu"
    assert resolve_location("dq.results", "/srv/wh") == "/srv/wh/dq.db/results"
    assert resolve_location("~/wh/r", "/srv/wh") == os.path.expanduser("~/wh/r")


# --------------------------------------------------------------------------------------- hook


def _hook(**kwargs):
    from airflow_dq_contracts.hooks import ContractSubmitHook

    kwargs.setdefault("application_args", ["--contract-b64=eA==", "--input=/d"])
    return ContractSubmitHook(**kwargs)


def test_hook_refuses_to_submit_over_a_mismatched_pyspark_client(monkeypatch):
    """pyspark-client of another version overwrote PySpark's Python files: say so, run nothing."""
    from airflow_dq_contracts.hooks import ContractJobError
    from airflow_dq_contracts.runtime import spark_config

    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setattr(spark_config, "_dist_version", {"pyspark": "4.1.1", "pyspark-client": "4.2.0"}.__getitem__)
    hook = _hook()
    submitted = []
    monkeypatch.setattr(hook, "submit", lambda *a, **k: submitted.append(a))
    with pytest.raises(ContractJobError, match="pyspark-client 4.2.0") as caught:
        hook.submit_job()
    assert caught.value.kind == "submit_failed" and submitted == []


def test_hook_command_ships_the_bundle_delta_and_this_python(monkeypatch, tmp_path):
    from airflow_dq_contracts.runtime import jars, spark_config

    monkeypatch.delenv("DQ_CONTRACTS_DELTA_JARS", raising=False)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    # The packages' folder as an earlier task resolved it: used as it is, no Ivy run.
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(tmp_path))
    # Delta's artifact follows the installed Spark (4.0 or 4.1)
    folder = tmp_path / jars.folder_name(["org.example:extra:1.0", spark_config.delta_package()])
    folder.mkdir()
    for name in ("delta-spark.jar", "extra.jar"):
        (folder / name).write_bytes(b"")
    (folder / jars.COMPLETE_MARKER).touch()
    hook = _hook(
        conf={"spark.sql.shuffle.partitions": "3"},
        packages="org.example:extra:1.0",
        warehouse="/wh",
        jars="/opt/mine.jar",
    )
    cmd = hook._build_spark_submit_command(str(hook.bundle.launcher_path))
    joined = " ".join(cmd)
    assert cmd[0] == "spark-submit" and hook.master == "local[2]"  # from AIRFLOW_CONN_SPARK_DEFAULT
    assert f"--py-files {hook.bundle.zip_path}" in joined
    # Never --packages: a concurrent Ivy resolve per task is what fails on a fresh worker.
    assert "--packages" not in joined and "spark.jars.packages" not in joined
    assert f"--jars /opt/mine.jar,{folder / 'delta-spark.jar'},{folder / 'extra.jar'}" in joined
    assert "spark.sql.shuffle.partitions=3" in joined  # the user's value wins
    assert "spark.sql.shuffle.partitions=8" not in joined
    for setting in (
        "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
        f"spark.pyspark.python={sys.executable}",
        f"spark.pyspark.driver.python={sys.executable}",
        "spark.sql.warehouse.dir=/wh",
        "spark.log.level=WARN",
    ):
        assert setting in joined
    assert cmd[-3:] == [str(hook.bundle.launcher_path), "--contract-b64=eA==", "--input=/d"]


def test_hook_offline_jars_replace_packages(monkeypatch, tmp_path):
    for name in ("delta-spark.jar", "delta-storage.jar"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv("DQ_CONTRACTS_DELTA_JARS", str(tmp_path))
    joined = " ".join(_hook()._build_spark_submit_command("app.py"))
    assert f"--jars {tmp_path / 'delta-spark.jar'},{tmp_path / 'delta-storage.jar'}" in joined
    assert "--packages" not in joined


def test_hook_leaves_cluster_python_to_the_cluster(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_YARN",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
    )
    hook = _hook(conn_id="spark_yarn")
    joined = " ".join(hook._build_spark_submit_command("app.py"))
    assert hook.master == "yarn" and hook.deploy_mode == "cluster"
    assert "spark.pyspark" not in joined  # the cluster's interpreter, not this worker's path
    assert "spark.sql.shuffle.partitions" not in joined  # no small-machine tuning on a cluster
    assert "--deploy-mode cluster" in joined


def _group_members(group: int) -> list[tuple[int, str]]:
    """Live processes of a process group, from /proc: (pid, command line)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            state, pgid = fields[0], int(fields[2])
            # A zombie has exited already; it only waits for its parent to read its status.
            if pgid == group and state != "Z":
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                members.append((int(entry.name), cmdline))
        except (OSError, ValueError, IndexError):
            continue
    return members


def _is_python_driver(cmdline: str, launcher: str) -> bool:
    parts = cmdline.split()
    return len(parts) > 1 and "python" in os.path.basename(parts[0]) and parts[1] == launcher


@pytest.mark.spark
def test_on_kill_stops_spark_submit_and_its_python_driver(tmp_path):
    """A real spark-submit, killed once its Python driver runs: nothing of it survives."""
    from airflow_dq_contracts.hooks import ContractJobError
    from airflow_dq_contracts.runspec import RunSpec

    spec = RunSpec(contract_text=GOOD.replace("{{ ds }}", "x"), input_path=str(tmp_path / "never-read"))
    hook = _hook(application_args=spec.job_arguments().arguments)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            hook.submit_job()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    launcher = str(hook.bundle.launcher_path)
    deadline = time.monotonic() + 120
    group = None
    while time.monotonic() < deadline:
        process = hook._submit_sp
        if process is not None:
            group = os.getpgid(process.pid)
            if any(_is_python_driver(cmd, launcher) for _, cmd in _group_members(group)):
                break
        time.sleep(0.2)
    assert group is not None, "spark-submit never started"
    members = _group_members(group)
    assert any(_is_python_driver(cmd, launcher) for _, cmd in members), f"no Python driver in {members}"
    assert any("org.apache.spark.deploy.SparkSubmit" in cmd for _, cmd in members), f"no JVM in {members}"
    assert group != os.getpgid(0), "spark-submit must run in its own process group"
    hook.on_kill()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert errors and isinstance(errors[0], ContractJobError)
    # Gone, however loaded the machine: polled with a generous deadline, never a fixed sleep.
    deadline = time.monotonic() + 120
    while _group_members(group) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _group_members(group) == []


# --------------------------------------------------------------- the hook's seam into SparkSubmitHook
# One test per private attribute the hook sets on the parent: each asserts that the installed
# provider still reads it the way the hook relies on, so a provider upgrade that renames or stops
# reading one fails here, loudly, instead of submitting without Delta or with the wrong main class.

_COMMAND_ATTRIBUTES = {
    "conf": ({"spark.x": "1"}, ["--conf", "spark.x=1"]),
    "packages": ("org.example:a:1", ["--packages", "org.example:a:1"]),
    "jars": ("/j/a.jar,/j/b.jar", ["--jars", "/j/a.jar,/j/b.jar"]),
    "py_files": ("/p/bundle.zip", ["--py-files", "/p/bundle.zip"]),
    "java_class": ("org.example.Main", ["--class", "org.example.Main"]),
}


@pytest.fixture()
def offline_delta(monkeypatch, tmp_path):
    """Pre-resolved (stand-in) Delta jars: these hooks never run Ivy."""
    (tmp_path / "delta-spark.jar").write_bytes(b"")
    monkeypatch.setenv("DQ_CONTRACTS_DELTA_JARS", str(tmp_path))


@pytest.mark.parametrize("name", sorted(_COMMAND_ATTRIBUTES))
def test_hook_seam_attribute_reaches_the_parents_command(name, offline_delta):
    hook = _hook()
    value, expected = _COMMAND_ATTRIBUTES[name]
    hook.adapter.set(**{name: value})
    cmd = hook._build_spark_submit_command("app.py")
    assert tuple(expected) in list(zip(cmd, cmd[1:]))


def test_hook_seam_application_args_follow_the_application(offline_delta):
    hook = _hook()
    hook.adapter.set(application_args=["--a=1", "b"])
    assert hook._build_spark_submit_command("app.py")[-3:] == ["app.py", "--a=1", "b"]


def test_hook_seam_driver_id_and_status_are_the_parents_tracking_state(monkeypatch, offline_delta):
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_SEAM",
        json.dumps(
            {"conn_type": "spark", "host": "spark://127.0.0.1", "port": 7077, "extra": {"deploy-mode": "cluster"}}
        ),
    )
    hook = _hook(conn_id="spark_seam")
    hook.adapter.set(driver_id=None, driver_status=None)
    # The parent reads the driver id out of spark-submit's output into the attribute the hook resets.
    hook._process_spark_submit_log(iter(["INFO Client: Driver successfully submitted as driver-20240101000000-0007"]))
    assert hook._driver_id == "driver-20240101000000-0007"
    # And its status poll writes the attribute the hook's outcome reads.
    hook._process_spark_status_log(iter(['  "driverState" : "FINISHED",']))
    assert hook._driver_status == "FINISHED"


def test_hook_seam_refuses_an_attribute_the_parent_does_not_have(offline_delta):
    from airflow_dq_contracts.version_compat import AirflowException

    with pytest.raises(AirflowException, match="has no attribute _no_such_thing"):
        _hook().adapter.set(no_such_thing=1)
