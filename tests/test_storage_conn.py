"""``storage_conn_id``: connections → credentials (mapping, masking, errors), and where the credentials go.

Real ``airflow.sdk.Connection`` objects (built here, or read by Airflow from ``AIRFLOW_CONN_*``), the
real ``ContractSubmitHook`` building its real spark-submit command, and one real spark-submit run whose
application looks at its own environment and at every process's command line. Expected values are
written out by hand from the providers' documented fields. The S3 side (sensors, triggers, a wrong
secret) is in ``test_storage_conn_s3.py``.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  — must come before anything that imports airflow
from airflow_fixtures import airflow_db, install_dag, run_dag  # noqa: F401

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from airflow.sdk import Connection

from airflow_dq_contracts.hooks.contract_submit import ContractSubmitHook
from airflow_dq_contracts.hooks.storage import (
    StorageConnectionError,
    StorageConnectionHook,
    get_storage_credentials,
    resolve_storage_options,
)
from airflow_dq_contracts.storage import connections
from airflow_dq_contracts.storage.connections import credentials_from_connection
from airflow_dq_contracts.storage.s3 import cli_storage_options, parse_storage_options, storage_environment
from airflow_dq_contracts.triggers.delta_metadata import DeltaFreshnessTrigger, aget_storage_credentials

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
TOKEN = "FwoGZXIvYXdzEXAMPLE-session-token-0123456789"
# Each masking test registers its own secrets (the masker is one per process: no test may pass on another's).
LOOKUP_SECRET, LOOKUP_TOKEN = "lookup-secret-0a1b2c3d4e5f", "lookup-token-6a7b8c9d0e1f"
TRIGGER_SECRET = "trigger-secret-f9e8d7c6b5a4"


def aws(conn_id: str = "lake", *, login: str | None = "AKIAIOSFODNN7EXAMPLE", password: str | None = SECRET, **extra):
    return Connection(conn_id=conn_id, conn_type="aws", login=login, password=password, extra=json.dumps(extra))


def redact(text: str) -> str:
    """What Airflow's secrets masker makes of ``text`` (the function moved between Airflow 3.0 and 3.1)."""
    try:
        from airflow.sdk._shared.secrets_masker import redact as airflow_redact
    except ImportError:  # Airflow 3.0
        from airflow.sdk.execution_time.secrets_masker import redact as airflow_redact
    return str(airflow_redact(text))


# ------------------------------------------------------------------------------------------ aws


def test_aws_keys_and_a_custom_endpoint_mean_path_style_with_the_secret_only_in_the_environment():
    creds = credentials_from_connection(aws(endpoint_url="http://127.0.0.1:9000", region_name="eu-west-1"))
    assert (creds.kind, creds.conn_id, creds.has_secrets) == ("s3", "lake", True)
    assert dict(creds.env) == {
        "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",  # a custom endpoint: path-style
        "AWS_ALLOW_HTTP": "true",
    }
    assert creds.delta_options == creds.env  # delta-rs reads the same names
    assert creds.spark_conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert creds.spark_conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert creds.spark_conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert creds.spark_conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(
        "EnvironmentVariableCredentialsProvider"
    )
    assert creds.secrets == (SECRET,)
    assert SECRET not in json.dumps(dict(creds.spark_conf)) and SECRET not in repr(creds)


def test_aws_without_keys_leaves_each_side_to_its_default_chain():
    creds = credentials_from_connection(aws(login=None, password=None, region_name="us-west-2"))
    assert dict(creds.env) == {"AWS_REGION": "us-west-2"}
    assert not creds.has_secrets and creds.secrets == ()
    # no credentials provider named: s3a's own chain (instance profile, web identity…)
    assert "spark.hadoop.fs.s3a.aws.credentials.provider" not in creds.spark_conf
    assert creds.spark_conf["spark.hadoop.fs.s3a.path.style.access"] == "false"  # AWS itself: virtual-hosted


def test_aws_explicit_addressing_style_and_the_s3_service_endpoint_win():
    virtual = credentials_from_connection(
        aws(endpoint_url="https://s3.example.net", config_kwargs={"s3": {"addressing_style": "virtual"}})
    )
    assert virtual.env["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "true"
    assert virtual.spark_conf["spark.hadoop.fs.s3a.path.style.access"] == "false"
    assert "AWS_ALLOW_HTTP" not in virtual.env  # https
    forced_path = credentials_from_connection(aws(config_kwargs={"s3": {"addressing_style": "path"}}))
    assert forced_path.env["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "false"
    per_service = credentials_from_connection(
        aws(endpoint_url="http://global:1", service_config={"s3": {"endpoint_url": "http://only-s3:2"}})
    )
    assert per_service.env["AWS_ENDPOINT_URL"] == "http://only-s3:2"


def test_aws_session_token_and_keys_in_the_extra():
    creds = credentials_from_connection(
        aws(login=None, password=None, aws_access_key_id="ASIAEXAMPLE", aws_secret_access_key=SECRET,
            aws_session_token=TOKEN)
    )  # fmt: skip
    assert creds.env["AWS_ACCESS_KEY_ID"] == "ASIAEXAMPLE"
    assert creds.env["AWS_SESSION_TOKEN"] == TOKEN
    assert set(creds.secrets) == {SECRET, TOKEN}


@pytest.mark.parametrize(
    ("connection", "fragment"),
    [
        (aws(password=None), "has an access key id but no secret access key"),
        (aws(role_arn="arn:aws:iam::1:role/x"), "'role_arn' is not supported"),
        (aws(config_kwargs={"s3": {"addressing_style": "sideways"}}), "addressing_style='sideways'"),
        (Connection(conn_id="lake", conn_type="postgres", host="db"), "has type 'postgres'"),
        (Connection(conn_id="lake", conn_type="adls", password="k" * 20), "names no storage account"),
        (Connection(conn_id="lake", conn_type="google_cloud_platform", extra='{"keyfile_dict": "{not json"}'),
         "keyfile_dict is not JSON"),
    ],
)  # fmt: skip
def test_unusable_connections_are_refused_naming_them(connection, fragment):
    with pytest.raises(connections.StorageConnectionError, match="storage connection 'lake'") as info:
        credentials_from_connection(connection)
    assert fragment in str(info.value)
    assert SECRET not in str(info.value)


# ------------------------------------------------------------------------------------------ gcs, azure


def test_google_cloud_platform_key_file_inline_key_and_old_extra_names():
    key = {"type": "service_account", "client_email": "dq@p.iam.gserviceaccount.com", "private_key": SECRET}
    inline = credentials_from_connection(
        Connection(conn_id="gcs", conn_type="google_cloud_platform", extra=json.dumps({"keyfile_dict": key,
                                                                                      "project": "p1"}))
    )  # fmt: skip
    assert inline.kind == "gcs"
    assert json.loads(inline.delta_options["google_service_account_key"]) == key
    assert json.loads(inline.env["GOOGLE_SERVICE_ACCOUNT_KEY"]) == key
    assert inline.env["GOOGLE_CLOUD_PROJECT"] == "p1"
    assert SECRET in inline.secrets  # the private key itself is masked, not only the whole JSON
    assert inline.spark_conf["spark.hadoop.fs.gs.auth.type"] == "APPLICATION_DEFAULT"
    assert inline.spark_conf["spark.hadoop.fs.gs.project.id"] == "p1"
    assert SECRET not in json.dumps(dict(inline.spark_conf))
    old_names = credentials_from_connection(
        Connection(conn_id="gcs", conn_type="google_cloud_platform",
                   extra=json.dumps({"extra__google_cloud_platform__key_path": "/keys/dq.json"}))
    )  # fmt: skip
    assert dict(old_names.delta_options) == {"google_service_account_path": "/keys/dq.json"}
    assert dict(old_names.env) == {"GOOGLE_APPLICATION_CREDENTIALS": "/keys/dq.json"}
    assert not old_names.has_secrets  # a path is not a secret


def test_azure_account_key_service_principal_sas_and_connection_string():
    adls_key = credentials_from_connection(Connection(conn_id="az", conn_type="adls", host="lakeacct", password=SECRET))
    assert dict(adls_key.delta_options) == {
        "azure_storage_account_name": "lakeacct",
        "azure_storage_account_key": SECRET,
    }
    assert dict(adls_key.env) == {"AZURE_STORAGE_ACCOUNT_NAME": "lakeacct", "AZURE_STORAGE_ACCOUNT_KEY": SECRET}
    assert adls_key.spark_conf == {"spark.hadoop.fs.azure.account.auth.type.lakeacct.dfs.core.windows.net": "SharedKey"}

    principal = credentials_from_connection(
        Connection(conn_id="az", conn_type="adls", host="lakeacct", login="app-id", password=SECRET,
                   extra=json.dumps({"tenant_id": "tenant-1"}))
    )  # fmt: skip
    assert principal.delta_options["azure_client_id"] == "app-id"
    assert principal.delta_options["azure_client_secret"] == SECRET
    assert principal.delta_options["azure_tenant_id"] == "tenant-1"
    suffix = "lakeacct.dfs.core.windows.net"
    assert principal.spark_conf[f"spark.hadoop.fs.azure.account.auth.type.{suffix}"] == "OAuth"
    assert principal.spark_conf[f"spark.hadoop.fs.azure.account.oauth2.client.endpoint.{suffix}"] == (
        "https://login.microsoftonline.com/tenant-1/oauth2/token"
    )
    assert SECRET not in json.dumps(dict(principal.spark_conf))

    wasb_sas = credentials_from_connection(
        Connection(conn_id="az", conn_type="wasb", login="blobacct", extra=json.dumps({"sas_token": "?sv=2024&sig=" + SECRET}))
    )  # fmt: skip
    assert wasb_sas.delta_options == {
        "azure_storage_account_name": "blobacct",
        "azure_storage_sas_token": "sv=2024&sig=" + SECRET,
    }
    from_string = credentials_from_connection(
        Connection(conn_id="az", conn_type="wasb",
                   extra=json.dumps({"connection_string": f"DefaultEndpointsProtocol=https;AccountName=csacct;"
                                                          f"AccountKey={SECRET};EndpointSuffix=core.windows.net"}))
    )  # fmt: skip
    assert dict(from_string.delta_options) == {
        "azure_storage_account_name": "csacct",
        "azure_storage_account_key": SECRET,
    }


def test_a_location_on_another_store_is_refused():
    creds = credentials_from_connection(aws())
    creds.check_location("s3a://bucket/t")
    creds.check_location("/local/path")
    with pytest.raises(connections.StorageConnectionError, match="reaches s3, not abfss://c@a.dfs.core.windows.net/t"):
        creds.check_location("abfss://c@a.dfs.core.windows.net/t")


# ------------------------------------------------------------------------------------------ lookup, masking


def test_lookup_from_airflow_masks_the_secrets_and_names_missing_or_wrong_connections(monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKE_LOOKUP",
        json.dumps({"conn_type": "aws", "login": "AKIALOOKUP", "password": LOOKUP_SECRET,
                    "extra": {"aws_session_token": LOOKUP_TOKEN, "endpoint_url": "http://127.0.0.1:9"}}),
    )  # fmt: skip
    monkeypatch.setenv("AIRFLOW_CONN_NOT_STORAGE", json.dumps({"conn_type": "http", "host": "example.com"}))
    creds = StorageConnectionHook("lake_lookup").get_credentials()
    assert creds.env["AWS_SECRET_ACCESS_KEY"] == LOOKUP_SECRET
    line = f"env={dict(creds.env)}"
    assert LOOKUP_SECRET not in redact(line) and LOOKUP_TOKEN not in redact(line)
    assert "AKIALOOKUP" in redact(line)  # the key id is an identifier, not a secret
    # an explicit storage_options dict wins over the connection's, key by key
    options = resolve_storage_options("lake_lookup", {"AWS_REGION": "eu-central-1"}, location="s3://b/t")
    assert (
        options is not None
        and options["AWS_REGION"] == "eu-central-1"
        and options["AWS_SECRET_ACCESS_KEY"] == LOOKUP_SECRET
    )
    assert resolve_storage_options(None, None) is None
    for conn_id, fragment in (("no_such_conn", "cannot be read"), ("not_storage", "has type 'http'")):
        with pytest.raises(StorageConnectionError, match=f"storage connection '{conn_id}'") as info:
            get_storage_credentials(conn_id)
        assert fragment in str(info.value)


def test_the_triggerer_resolves_the_connection_itself_and_stores_only_its_name(monkeypatch, tmp_path):
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKE_TRIGGER",
        json.dumps({"conn_type": "aws", "login": "AKIATRIGGER", "password": TRIGGER_SECRET}),
    )
    trigger = DeltaFreshnessTrigger(
        path="s3://lake/orders", timestamp_column="created_at", max_age_hours=1, storage_conn_id="lake_trigger"
    )
    classpath, kwargs = trigger.serialize()
    assert kwargs["storage_conn_id"] == "lake_trigger" and kwargs["storage_options"] is None
    assert TRIGGER_SECRET not in json.dumps(kwargs)
    creds = asyncio.run(aget_storage_credentials("lake_trigger"))
    assert creds.env["AWS_SECRET_ACCESS_KEY"] == TRIGGER_SECRET and TRIGGER_SECRET not in redact(
        f"x {TRIGGER_SECRET} y"
    )
    with pytest.raises(connections.StorageConnectionError, match="storage connection 'absent_conn'"):
        asyncio.run(aget_storage_credentials("absent_conn"))


def _supervised_task_log(dag, dag_run, task_id: str, log_path: Path) -> int:
    """Run ``task_id`` of ``dag_run`` again the way a worker does: Airflow's own ``supervise()`` forks the task
    process and writes its log file through the task log's processors (the secrets masker among them).

    The Execution API is Airflow's in-process one (what ``dag.test()`` talks to), so no API server is started.
    """
    from airflow.executors import workloads
    from airflow.models.taskinstance import TaskInstance
    from airflow.sdk.execution_time.supervisor import InProcessTestSupervisor, supervise
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState
    from sqlalchemy import select

    with create_session() as session:
        ti = session.scalars(
            select(TaskInstance).where(
                TaskInstance.dag_id == dag.dag_id,
                TaskInstance.run_id == dag_run.run_id,
                TaskInstance.task_id == task_id,
            )
        ).one()
        ti.state = TaskInstanceState.QUEUED
        ti.try_number += 1
        session.flush()
        workload = workloads.ExecuteTask.make(
            ti, dag_rel_path=Path(Path(dag.fileloc).name), bundle_info=workloads.BundleInfo(name="dags-folder")
        )
        session.commit()
    return supervise(
        ti=workload.ti,
        bundle_info=workload.bundle_info,
        dag_rel_path=workload.dag_rel_path,
        token="",
        client=InProcessTestSupervisor._api_client(dag),
        log_path=str(log_path),
    )


@pytest.mark.airflow
def test_secrets_are_masked_in_a_real_task_log(airflow_db, monkeypatch, tmp_path):  # noqa: F811
    """A careless task logs everything the connection gave it: the task log (written by Airflow's supervisor)
    shows ``***``. The GCS key's JSON is re-serialised by the mapping, so Airflow's own masking of the
    connection's extra does not cover it: only this package's masking of every secret does."""
    private_key = (
        "-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7-----END PRIVATE KEY-----"
    )
    compact_key = json.dumps({"type": "service_account", "private_key": private_key}, separators=(",", ":"))
    aws_secret, aws_token = "masked-aws-secret-5e1f0c2d9b", "masked-aws-token-8c7d6e5f4a"
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_MASKED", json.dumps({"conn_type": "aws", "login": "AKIAMASKED",
        "password": aws_secret, "extra": {"aws_session_token": aws_token}}))  # fmt: skip
    monkeypatch.setenv(
        "AIRFLOW_CONN_GCS_MASKED",
        json.dumps({"conn_type": "google_cloud_platform", "extra": {"keyfile_dict": compact_key}}),
    )
    dag = install_dag("""
        import datetime as dt
        import logging
        from airflow.sdk import DAG, task
        from airflow_dq_contracts.hooks.storage import get_storage_credentials

        with DAG("dq_storage_conn_masked", schedule=None, start_date=dt.datetime(2024, 1, 1)) as dag:
            @task
            def careless():
                for conn_id in ("lake_masked", "gcs_masked"):
                    creds = get_storage_credentials(conn_id)
                    logging.getLogger("airflow.task").info("CARELESS %s %s", conn_id, dict(creds.env))
                    print("CARELESS", conn_id, dict(creds.delta_options))

            careless()
    """)
    _, dag_run = run_dag(dag, mark_success_pattern="careless")  # creates the run; the task runs below
    log_path = tmp_path / "careless.log"
    assert _supervised_task_log(dag, dag_run, "careless", log_path) == 0
    log = log_path.read_text()
    careless = [line for line in log.splitlines() if "CARELESS" in line]
    assert len(careless) == 4, log[-3000:]  # two logged, two printed lines
    assert "AKIAMASKED" in log and "***" in log  # the lines are there, their secrets are not
    for secret in (aws_secret, aws_token, private_key, json.dumps(json.loads(compact_key))):
        assert secret not in log


# ------------------------------------------------------------------------------------------ the job's side
# (s3=False: where the credentials go does not depend on the s3a jars, which these tests need not resolve.)


def test_the_credentials_reach_spark_submit_through_its_environment_never_its_command_line(monkeypatch):
    creds = credentials_from_connection(aws(endpoint_url="http://127.0.0.1:9000", aws_session_token=TOKEN))
    hook = ContractSubmitHook(application_args=["--spec", "x"], storage=creds, include_delta=False, s3=False,
                              conf={"spark.hadoop.fs.s3a.endpoint.region": "user-wins"})  # fmt: skip
    command = hook.adapter.build_command("/tmp/app.py")
    assert not any(SECRET in part or TOKEN in part for part in command)
    assert "spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:9000" in command
    assert "spark.hadoop.fs.s3a.endpoint.region=user-wins" in command  # the user's conf wins
    env = hook.adapter.env  # what submit() adds to os.environ for spark-submit's Popen
    assert env["AWS_SECRET_ACCESS_KEY"] == SECRET and env["AWS_SESSION_TOKEN"] == TOKEN

    # YARN: the parent would put env_vars on the command line (spark.yarn.appMasterEnv.*); ours never are.
    monkeypatch.setenv("AIRFLOW_CONN_YARN_CLIENT", json.dumps({"conn_type": "spark", "host": "yarn"}))
    yarn = ContractSubmitHook(conn_id="yarn_client", application_args=["x"], storage=creds, include_delta=False, s3=False,
                              env_vars={"HADOOP_USER_NAME": "dq"})  # fmt: skip
    yarn_command = yarn.adapter.build_command("/tmp/app.py")
    assert "spark.yarn.appMasterEnv.HADOOP_USER_NAME=dq" in yarn_command  # the parent's own behaviour
    assert not any(SECRET in part for part in yarn_command)
    assert yarn.adapter.env["AWS_SECRET_ACCESS_KEY"] == SECRET and yarn.adapter.env["HADOOP_USER_NAME"] == "dq"


def test_cluster_deploy_mode_refuses_keys_but_takes_a_keyless_connection(monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_YARN_CLUSTER",
        json.dumps({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}),
    )
    with pytest.raises(StorageConnectionError, match="storage connection 'lake' carries keys, but in cluster deploy"):
        ContractSubmitHook(conn_id="yarn_cluster", application_args=["x"], storage=credentials_from_connection(aws()),
                           include_delta=False, s3=False)  # fmt: skip
    keyless = credentials_from_connection(aws(login=None, password=None, region_name="eu-west-1"))
    hook = ContractSubmitHook(
        conn_id="yarn_cluster", application_args=["x"], storage=keyless, include_delta=False, s3=False
    )
    assert "spark.hadoop.fs.s3a.endpoint.region=eu-west-1" in hook.adapter.build_command("/tmp/app.py")


@pytest.mark.spark
def test_a_real_spark_submit_has_the_secret_in_its_environment_and_in_no_process_command_line(tmp_path, monkeypatch):
    """The application runs while spark-submit's JVM and the Python driver are alive: it reads its own
    environment and every process's /proc/<pid>/cmdline (ps's view) for the secret. The worker process
    had opened a Spark Connect session before (PySpark's marker in its environment): spark-submit's
    driver must not inherit it, and the worker keeps it."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    app = tmp_path / "look.py"
    app.write_text(
        textwrap.dedent(f"""
            import json, os
            secret = {SECRET!r}
            seen = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{{pid}}/cmdline", "rb") as handle:
                        if secret.encode() in handle.read():
                            seen.append(pid)
                except OSError:
                    pass
            print("LOOK " + json.dumps({{"env": os.environ.get("AWS_SECRET_ACCESS_KEY") == secret,
                                         "connect_mode": "SPARK_CONNECT_MODE_ENABLED" in os.environ,
                                         "argv_pids": seen, "processes_seen": len(os.listdir("/proc"))}}))
        """)
    )
    creds = credentials_from_connection(aws(endpoint_url="http://127.0.0.1:9"))
    hook = ContractSubmitHook(application_args=[], storage=creds, include_delta=False, s3=False,
                              conf={"spark.ui.enabled": "false"})  # fmt: skip
    lines: list[str] = []
    original = hook._process_spark_submit_log

    def keep(itr):
        def tee():
            for line in itr:
                lines.append(line)
                yield line

        original(tee())

    hook._process_spark_submit_log = keep  # type: ignore[method-assign]
    hook.submit_application(str(app))
    found = [json.loads(line.split("LOOK ", 1)[1]) for line in lines if "LOOK " in line]
    assert found, "".join(lines[-20:])
    assert found[0]["env"] is True
    assert found[0]["argv_pids"] == []
    assert found[0]["connect_mode"] is False
    assert os.environ.get("SPARK_CONNECT_MODE_ENABLED") == "1"
    assert not any(SECRET in line for line in lines)


# ------------------------------------------------------------------------------------------ the CLI


def test_cli_storage_options_merge_over_the_standard_environment_and_never_echo_values(monkeypatch):
    env = {"AWS_ACCESS_KEY_ID": "AKIACLI", "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}
    options = cli_storage_options(["AWS_REGION=eu-north-1", "AWS_ALLOW_HTTP=false"], env=env)
    assert options == {
        "AWS_ACCESS_KEY_ID": "AKIACLI",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        "AWS_ALLOW_HTTP": "false",  # the option wins over what the environment implies
        "AWS_REGION": "eu-north-1",
    }
    assert cli_storage_options([], env={}) is None
    with pytest.raises(ValueError, match="#2 is not KEY=VALUE") as info:
        parse_storage_options(["AWS_REGION=x", SECRET])
    assert SECRET not in str(info.value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    with storage_environment({"aws_session_token": TOKEN}):
        import os

        assert os.environ["AWS_SESSION_TOKEN"] == TOKEN
    assert "AWS_SESSION_TOKEN" not in os.environ  # restored


def test_cli_rejects_a_malformed_storage_option_without_printing_it():
    done = subprocess.run(
        [sys.executable, "-m", "airflow_dq_contracts.cli.main", "history", "orders", "--results-table", "/nowhere",
         "--storage-option", f"AWS_SECRET_ACCESS_KEY{SECRET}"],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "--storage-option #1 is not KEY=VALUE" in done.stderr
    assert SECRET not in done.stdout + done.stderr
