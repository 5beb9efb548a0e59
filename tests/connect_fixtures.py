"""A real Spark Connect server with a real Hive metastore, for tests (and the benchmark), from the pip wheel.

The PySpark wheel carries the server (``jars/spark-connect_2.13-<version>.jar``) and the Hive classes
with the embedded Derby database, so one ``spark-submit --class SparkConnectServer spark-internal``
starts both: the server binds gRPC on 127.0.0.1 and a free port, with Delta's jars (resolved once
per machine by :mod:`airflow_dq_contracts.runtime.jars`) and its SQL extensions, and Spark's Hive
catalog over a Derby metastore and a warehouse in a temp folder. The catalog persists across the
server's sessions (that is what makes a catalog name first-class): tables created by one client are
found by name by the next.

Every process carries ``DQ_TEST_SPARK_CONNECT=<pytest pid>:<uuid>`` in its environment, so teardown
proves that nothing outlived the fixture, as the cluster fixture does.

Use it by importing the fixture into a test module (``from connect_fixtures import connect_server``)::

    def test_remote(connect_server):
        spark = SparkSession.builder.remote(connect_server.url).getOrCreate()
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import FAST_JVM_OPTS, find_marked_processes, free_port, spark_home

MARKER_ENV = "DQ_TEST_SPARK_CONNECT"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 180.0


@dataclasses.dataclass
class ConnectServer:
    """Handle on a running Spark Connect server: its ``sc://`` URL, warehouse and log."""

    root: Path
    port: int
    ui_port: int
    process: subprocess.Popen[bytes]
    marker: str

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:<port>`` — what ``SparkSession.builder.remote`` and ``--remote`` take."""
        return f"sc://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        """The catalog's ``spark.sql.warehouse.dir`` (managed tables land in ``<db>.db/<table>``)."""
        return self.root / "warehouse"

    @property
    def log_path(self) -> Path:
        """The server's stdout + stderr."""
        return self.root / "server.log"

    def running_jobs(self) -> list[dict[str, object]]:
        """The server's Spark jobs in status RUNNING, from its UI's REST API (what a kill must end)."""
        import json
        import urllib.request

        base = f"http://127.0.0.1:{self.ui_port}/api/v1/applications"
        with urllib.request.urlopen(base, timeout=10) as response:
            app_id = json.load(response)[0]["id"]
        with urllib.request.urlopen(f"{base}/{app_id}/jobs?status=running", timeout=10) as response:
            return list(json.load(response))

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server's log (for failure messages)."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def processes(self) -> list[int]:
        """Pids of live processes this server launched (the JVM and its Python workers)."""
        return [p.pid for p in find_marked_processes(self.marker)]

    def airflow_connection(self, **extra: object) -> dict[str, object]:
        """The ``spark_connect`` connection (Apache Spark provider's fields) that reaches this server."""
        return {"conn_type": "spark_connect", "host": "127.0.0.1", "port": self.port, "extra": dict(extra)}

    def stop(self) -> None:
        """Stop the JVM (SIGTERM, then SIGKILL) and anything it left behind."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def server_command(root: Path, port: int, ui_port: int) -> list[str]:
    """The ``spark-submit`` command line of the server (Delta jars and extensions, Hive over Derby)."""
    from airflow_dq_contracts.runtime import jars, spark_config

    delta_jars = ",".join(str(jar) for jar in jars.delta_jars())
    conf = {
        **spark_config.default_spark_conf(local=True),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true",
        "spark.sql.warehouse.dir": str(root / "warehouse"),
        "spark.driver.extraJavaOptions": f"{FAST_JVM_OPTS} -Dderby.system.home={root}",
        "spark.pyspark.python": sys.executable,
        "spark.log.level": "WARN",
        # The UI's REST API shows the server's running jobs (the kill test asks it); 127.0.0.1 only.
        "spark.ui.enabled": "true",
        "spark.ui.port": str(ui_port),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", "local[2]", "--class", SERVER_CLASS]
    command += ["--name", "dq-contracts-test-connect", "--jars", delta_jars]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, "spark-internal"]


def start_connect_server(root: Path | None = None) -> ConnectServer:
    """Start a server in ``root`` (a new temp folder by default); returns once its port accepts connections."""
    root = Path(root or tempfile.mkdtemp(prefix="dq-connect-"))
    (root / "warehouse").mkdir(parents=True, exist_ok=True)
    port, ui_port = free_port(), free_port()
    marker = f"{os.getpid()}:{uuid.uuid4().hex}"
    env = {**os.environ, MARKER_ENV: marker, "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    env.pop("SPARK_REMOTE", None)
    with open(root / "server.log", "wb") as log:
        process = subprocess.Popen(
            server_command(root, port, ui_port),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=root,
            env=env,
            start_new_session=True,
        )
    server = ConnectServer(root=root, port=port, ui_port=ui_port, process=process, marker=marker)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"the Spark Connect server did not start on port {port}:\n{server.log_tail()}")
        time.sleep(0.5)
    return server


def connect_sql(url: str, *statements: str) -> None:
    """Run SQL statements on the server from a client process of its own (this process opens no Connect session)."""
    script = (
        "import sys\nfrom pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()\n"
        "for statement in sys.argv[2:]:\n    spark.sql(statement).collect()\nspark.stop()\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    subprocess.run([sys.executable, "-c", script, url, *statements], check=True, env=env, timeout=300)


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """One Spark Connect server (Delta, Hive catalog on Derby) for the whole test session, always stopped; its
    folder (warehouse, metastore, log) is under the session's base temp, removed with a green session."""
    server = start_connect_server(tmp_path_factory.mktemp("connect"))
    try:
        yield server
    finally:
        server.stop()
        left = server.processes()
        assert not left, f"processes of the Spark Connect server outlived it: {left}"
