"""docker/: the compose file is valid for Docker Compose and wires Airflow to the Spark cluster.

No Docker engine runs here, so nothing is built or started: ``docker compose config`` validates and
normalises the file (interpolation, anchors, merge keys, relative paths), and the tests assert on
its parsed output — the services, the shared Delta warehouse volume, the ``spark_default``
connection (resolved by Airflow's own ``SparkSubmitHook``, as a task would) and that the image
pins match the Python 3.11 constraints set (``constraints/constraints-3.11.txt``).

Compose comes as the ``docker compose`` plugin (v2) or a ``docker-compose`` executable (v2, or the
v1 that Debian bookworm packages); the file is kept valid for both. Skipped only when the
``docker`` client is absent, or when no Compose implementation is installed beside it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ci_guard import require

ROOT = Path(__file__).resolve().parent.parent
# `docker compose config` (v2 plugin) or docker-compose (v1) validates the file; no engine is needed.
DOCKER_HINT = "./dev setup installs Debian's docker-compose (as root) when no Compose is found"
COMPOSE_FILE = ROOT / "docker" / "docker-compose.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
AIRFLOW_SERVICES = (
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
)
SPARK_SERVICES = ("spark-master", "spark-worker")
# Where Delta tables are written or read: tasks (scheduler, LocalExecutor), deferrable sensors
# (triggerer), the driver in cluster mode and the executors (spark-worker).
WAREHOUSE_USERS = (
    "airflow-scheduler",
    "airflow-triggerer",
    "airflow-dag-processor",
    "airflow-apiserver",
    "spark-master",
    "spark-worker",
)


def _compose_cli() -> tuple[list[str], int] | None:
    """The Compose command and its major version, or None when none is installed."""
    if (
        shutil.which("docker")
        and subprocess.run(["docker", "compose", "version"], capture_output=True, check=False).returncode == 0
    ):
        return ["docker", "compose"], 2
    exe = shutil.which("docker-compose")
    if exe:
        done = subprocess.run([exe, "version", "--short"], capture_output=True, text=True, check=False)
        match = re.match(r"v?(\d+)\.", done.stdout.strip())
        if done.returncode == 0 and match:
            return [exe], int(match.group(1))
    return None


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    """``docker compose config`` of docker/docker-compose.yaml, parsed (JSON from v2, YAML from v1)."""
    cli = _compose_cli()
    require(cli is not None, "Docker Compose (the `docker compose` plugin or docker-compose)", DOCKER_HINT)
    assert cli is not None
    command, major = cli
    args = command + ["-f", str(COMPOSE_FILE), "config"] + (["--format", "json"] if major >= 2 else [])
    # Unset knobs the file interpolates, so the defaults written in it are what is checked.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DQ_CONTRACTS_IMAGE", "AIRFLOW_JWT_SECRET", "AIRFLOW_API_SECRET_KEY", "COMPOSE_PROJECT_NAME")
    }
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, check=False)
    assert done.returncode == 0, f"{' '.join(args)} rejected the file:\n{done.stderr}"
    return json.loads(done.stdout) if major >= 2 else yaml.safe_load(done.stdout)


def _argv(value: Any) -> list[str]:
    if value is None:
        return []
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """target → source of a service's volumes, whichever Compose version normalised them."""
    mounts: dict[str, str] = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, str):  # v1: "source:target[:mode]"
            source, target = volume.split(":")[:2]
        else:  # v2: {"type", "source", "target", …}
            source, target = volume["source"], volume["target"]
        mounts[target] = source
    return mounts


def _constraints_pin(name: str) -> str:
    """The version of ``name`` in the tested set the image's Python (3.11) installs with."""
    lines = (ROOT / "constraints" / "constraints-3.11.txt").read_text().splitlines()
    [pin] = [line.split("==", 1)[1] for line in lines if line.startswith(f"{name}==")]
    return pin


def test_stack_has_airflow_components_spark_and_postgres(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"postgres", *AIRFLOW_SERVICES, *SPARK_SERVICES}
    commands = {name: _argv(services[name].get("command")) for name in AIRFLOW_SERVICES}
    assert commands == {
        "airflow-init": ["db", "migrate"],
        "airflow-apiserver": ["api-server"],
        "airflow-scheduler": ["scheduler"],
        "airflow-dag-processor": ["dag-processor"],
        "airflow-triggerer": ["triggerer"],
    }
    for name in AIRFLOW_SERVICES[1:]:  # every long-running component waits for a migrated database
        conditions = {dep: spec["condition"] for dep, spec in services[name]["depends_on"].items()}
        assert conditions["airflow-init"] == "service_completed_successfully", name
        assert conditions["postgres"] == "service_healthy", name
    env = services["airflow-scheduler"]["environment"]
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith("http://airflow-apiserver:8080/")
    # One JWT secret for all components, or task processes cannot talk to the API server.
    secrets = {services[name]["environment"]["AIRFLOW__API_AUTH__JWT_SECRET"] for name in AIRFLOW_SERVICES}
    assert len(secrets) == 1 and "" not in secrets


def test_warehouse_volume_is_shared_at_one_path_by_airflow_and_spark(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert "warehouse" in compose["volumes"]
    targets = {name: [t for t, s in _mounts(services[name]).items() if s == "warehouse"] for name in WAREHOUSE_USERS}
    assert all(len(t) == 1 for t in targets.values()), targets
    [path] = {t[0] for t in targets.values()}  # the same path in every container
    for name in AIRFLOW_SERVICES:
        env = services[name]["environment"]
        assert env["DQ_CONTRACTS_WAREHOUSE"] == path, name
        # The job bundle must be readable by a driver on the worker too: it lives on the volume.
        assert Path(env["DQ_CONTRACTS_JOB_CACHE"]).is_relative_to(path), name


def test_example_dags_are_mounted_in_every_airflow_component(compose: dict[str, Any]) -> None:
    for name in AIRFLOW_SERVICES:
        mounts = _mounts(compose["services"][name])
        assert Path(mounts["/opt/airflow/dags"]).resolve() == ROOT / "dags_examples", name


def test_spark_default_connection_resolves_to_the_compose_master(compose: dict[str, Any], tmp_path: Path) -> None:
    services = compose["services"]
    conns = {services[name]["environment"]["AIRFLOW_CONN_SPARK_DEFAULT"] for name in AIRFLOW_SERVICES}
    assert len(conns) == 1
    [conn] = conns
    # Resolve it the way a task does: the operator's hook (SparkSubmitHook underneath, which derives the
    # REST endpoint itself from provider 6.3.4 on; the hook does before) reading AIRFLOW_CONN_SPARK_DEFAULT.
    probe = (
        "import json, sys\n"
        "from airflow_dq_contracts.hooks import ContractSubmitHook\n"
        "from airflow_dq_contracts.jobs.bundle import build_job_bundle\n"
        "h = ContractSubmitHook(conn_id='spark_default', deploy_mode='cluster', application_args=[],\n"
        "                       bundle=build_job_bundle(sys.argv[1]))\n"
        "print(json.dumps({'master': h.master, 'spark_binary': h.adapter.spark_binary,\n"
        "                  'rest_endpoint': h.rest_endpoint}))\n"
    )
    env = dict(os.environ, AIRFLOW_HOME=str(tmp_path), AIRFLOW_CONN_SPARK_DEFAULT=conn)
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "job")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    resolved = json.loads(done.stdout.strip().splitlines()[-1])
    assert json.loads(conn)["extra"]["deploy-mode"] == "client"

    master_cmd = _argv(services["spark-master"].get("command"))
    host = master_cmd[master_cmd.index("--host") + 1]
    port = master_cmd[master_cmd.index("--port") + 1]
    assert resolved["master"] == f"spark://{host}:{port}" == "spark://spark-master:7077"
    assert services["spark-master"].get("hostname") == host
    # The worker registers with that very master.
    assert _argv(services["spark-worker"].get("command"))[-1] == resolved["master"]
    # The hook follows / kills cluster-mode drivers through the master's REST server: it must be on,
    # on the port the connection names.
    opts = services["spark-master"]["environment"]["SPARK_MASTER_OPTS"]
    assert "-Dspark.master.rest.enabled=true" in opts
    # A restarted master must take running applications back (see tests/test_cluster.py).
    recovery = re.search(r"-Dspark\.deploy\.recoveryDirectory=(\S+)", opts)
    assert "-Dspark.deploy.recoveryMode=FILESYSTEM" in opts and recovery
    assert recovery.group(1) in _mounts(services["spark-master"])
    rest_port = re.search(r"-Dspark\.master\.rest\.port=(\d+)", opts)
    assert rest_port and resolved["rest_endpoint"] == f"http://{host}:{rest_port.group(1)}"
    assert resolved["spark_binary"] == "spark-submit"
    for name in SPARK_SERVICES:
        assert _argv(services[name].get("entrypoint"))[-1] == "spark-class", name
    worker_cmd = _argv(services["spark-worker"].get("command"))
    assert worker_cmd[0] == "org.apache.spark.deploy.worker.Worker"
    assert master_cmd[0] == "org.apache.spark.deploy.master.Master"


def test_one_image_built_from_the_repository_for_airflow_and_spark(compose: dict[str, Any]) -> None:
    services = compose["services"]
    images = {services[name]["image"] for name in (*AIRFLOW_SERVICES, *SPARK_SERVICES)}
    assert len(images) == 1
    for name in (*AIRFLOW_SERVICES, *SPARK_SERVICES):
        build = services[name]["build"]
        assert Path(build["context"]).resolve() == ROOT, name
        assert (Path(build["context"]) / build["dockerfile"]).resolve() == DOCKERFILE, name


def test_dockerfile_pins_match_the_constraints_set() -> None:
    text = DOCKERFILE.read_text()
    airflow = _constraints_pin("apache-airflow")
    [base] = re.findall(r"^FROM\s+(\S+)", text, flags=re.MULTILINE)
    assert base == f"apache/airflow:{airflow}-python3.11"
    # pip must not move Airflow away from the base image's version while installing this package.
    assert f'"apache-airflow=={airflow}"' in text
    assert "openjdk-17-jre-headless" in text
    # The Delta jars are resolved by the installed package, never restated in the Dockerfile.
    assert "dq-contracts jars fetch" in text and "delta-spark_" not in text.replace("io.delta_delta-spark_", "")
    # installed with the tested set, the [spark] extra (PySpark's spark-submit in the image)
    assert "-c /opt/dq-contracts/src/constraints/constraints-3.11.txt" in text
    assert '"/opt/dq-contracts/src[spark]"' in text
    assert re.search(r"^ENV\s+DQ_CONTRACTS_DELTA_JARS=", text, flags=re.MULTILINE)
