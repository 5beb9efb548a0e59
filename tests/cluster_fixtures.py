"""A real Spark standalone cluster (one master, one worker) for tests, started from the pip wheel.

The PySpark wheel ships ``sbin/spark-daemon.sh`` but no ``start-master.sh``, so the daemons are
started the way ``start-master.sh`` would: ``spark-daemon.sh start <class> 1 <args>``. Everything
is bound to 127.0.0.1, on free ports, with its own log / pid / conf / work folders under a temp
folder, so parallel sessions (and other engineers' Spark runs) never collide.

Use it by importing the fixture into a test module (``from cluster_fixtures import spark_cluster``)
and marking the tests ``@pytest.mark.cluster``; ``pytest -m cluster`` then runs them alone. Several
modules may import it: the cluster is reference-counted, so one session starts it once.

Every process the cluster launches — daemons, drivers (cluster mode), executors, Python workers —
inherits the environment variable ``DQ_TEST_SPARK_CLUSTER`` (the marker), and runs inside the work
folder; :meth:`StandaloneCluster.processes` finds them through ``/proc``, which is how tests prove
that nothing survives a kill and how teardown proves that no JVM is orphaned.

Example::

    from cluster_fixtures import spark_cluster  # noqa: F401  (a fixture)

    @pytest.mark.cluster
    def test_job(spark_cluster):
        subprocess.run(["spark-submit", "--master", spark_cluster.master_url, "app.py"],
                       env=spark_cluster.submit_env(), check=True)
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
import warnings
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

MARKER_ENV = "DQ_TEST_SPARK_CLUSTER"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# Spark's own launcher of Python drivers (what spark-submit runs for a .py app in client mode).
PYTHON_RUNNER_CLASS = "org.apache.spark.deploy.PythonRunner"
WORKER_CORES = 2
WORKER_MEMORY = "2g"
# Terminal states of a standalone driver (org.apache.spark.deploy.master.DriverState).
DRIVER_TERMINAL_STATES = frozenset({"FINISHED", "KILLED", "FAILED", "ERROR"})
# A busy 2-core machine can take half a minute to start a JVM-heavy worker; fail loudly after this.
START_TIMEOUT_S = 120.0
# Short-lived test JVMs on 2 shared cores: the C2 compiler's threads and a parallel GC compete
# with the work itself. C1 only + serial GC measured 33-58 s instead of 90-102 s for the same
# client-mode Delta round trip under the same load. Test speed only; not a production setting.
FAST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_home() -> Path:
    """The pip wheel's Spark home (the ``pyspark`` package folder), found without importing it."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyspark is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations)))


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_carrier_jar(path: Path) -> Path:
    """Write a manifest-only jar: the ``<application-jar>`` a Python driver needs in cluster mode.

    Spark's standalone ``Client`` insists on a jar URL for the driver, and spark-submit refuses a
    ``.py`` application in standalone cluster mode. The jar holds no class and no code; the driver's
    main class is Spark's own :data:`PYTHON_RUNNER_CLASS`. Written with ``zipfile`` (a jar is a zip
    with a manifest) so that a JRE without the ``jar`` tool suffices.

    >>> import tempfile, zipfile
    >>> jar = make_carrier_jar(Path(tempfile.mkdtemp()) / "carrier.jar")
    >>> zipfile.ZipFile(jar).namelist()
    ['META-INF/MANIFEST.MF']
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: airflow-dq-contracts\r\n\r\n")
    return path


def python_cluster_mode_args(
    carrier_jar: Path | str,
    app: Path | str,
    app_args: Sequence[str] = (),
    py_files: Sequence[str] = (),
    python: str = sys.executable,
) -> list[str]:
    """spark-submit arguments that run a *Python* driver on a standalone cluster (cluster mode).

    Goes after ``spark-submit --master spark://… --deploy-mode cluster [--conf …]``. Spark's
    ``PythonRunner`` becomes the driver's main class, run by the worker's ``DriverWrapper``;
    its first two arguments are the Python file and the comma-separated ``--py-files`` (both
    must be paths the *worker* can read), then the application's own arguments.

    >>> python_cluster_mode_args("/c.jar", "/app.py", ["--x", "1"], python="/py")[:4]
    ['--conf', 'spark.pyspark.python=/py', '--conf', 'spark.pyspark.driver.python=/py']
    >>> python_cluster_mode_args("/c.jar", "/app.py", ["--x", "1"], python="/py")[4:]
    ['--class', 'org.apache.spark.deploy.PythonRunner', '/c.jar', '/app.py', '', '--x', '1']
    """
    args = [
        "--conf",
        f"spark.pyspark.python={python}",
        "--conf",
        f"spark.pyspark.driver.python={python}",
    ]
    if py_files:
        # PythonRunner puts them on the driver's PYTHONPATH; this conf ships them to executors.
        args += ["--conf", f"spark.submit.pyFiles={','.join(py_files)}"]
    args += ["--class", PYTHON_RUNNER_CLASS, str(carrier_jar), str(app), ",".join(py_files)]
    return args + list(app_args)


def ivy_home() -> Path:
    """Spark 4's default Ivy home (``spark.jars.ivy`` unset): ``~/.ivy2.5.2``."""
    return Path.home() / ".ivy2.5.2"


@dataclasses.dataclass(frozen=True)
class ClusterProcess:
    """One live process launched by (or for) the test cluster."""

    pid: int
    ppid: int
    cmdline: str

    @property
    def kind(self) -> str:
        """A readable role: master, worker, driver-wrapper, executor, spark-submit, python."""
        for needle, kind in (
            (MASTER_CLASS, "master"),
            (WORKER_CLASS, "worker"),
            ("org.apache.spark.deploy.worker.DriverWrapper", "driver-wrapper"),
            ("CoarseGrainedExecutorBackend", "executor"),
            ("org.apache.spark.deploy.SparkSubmit", "spark-submit"),
            ("pyspark.daemon", "python-worker"),
        ):
            if needle in self.cmdline:
                return kind
        return "java" if "java" in self.cmdline.split(" ", 1)[0] else "other"

    @property
    def is_jvm(self) -> bool:
        """True for a Java process."""
        return Path(self.cmdline.split(" ", 1)[0]).name == "java"


def _read_proc(pid: int, name: str) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except OSError:  # gone, or not ours to read
        return None


def _ppid(pid: int) -> int:
    stat = _read_proc(pid, "stat")
    if not stat:
        return 0
    # The command name (2nd field) is in parentheses and may contain spaces: split after it.
    return int(stat.rsplit(b")", 1)[1].split()[1])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find_marked_processes(marker_value: str | None = None, cwd_root: Path | None = None) -> list[ClusterProcess]:
    """Live processes whose environment holds the cluster marker (any value, or exactly ``marker_value``),
    or whose working directory lies under ``cwd_root``.

    >>> find_marked_processes("no-such-cluster-" + uuid.uuid4().hex)
    []
    """
    found: list[ClusterProcess] = []
    wanted = f"{MARKER_ENV}={marker_value}".encode() if marker_value else f"{MARKER_ENV}=".encode()
    root_text = str(cwd_root.resolve()) if cwd_root else None
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        environ = _read_proc(pid, "environ")
        if environ is None:
            continue
        hit = any(item == wanted or (not marker_value and item.startswith(wanted)) for item in environ.split(b"\0"))
        if not hit and root_text:
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                cwd = ""
            hit = cwd == root_text or cwd.startswith(root_text + os.sep)
        if not hit:
            continue
        raw = _read_proc(pid, "cmdline") or b""
        if not raw:  # a zombie or a kernel thread: nothing to run, nothing to leak
            continue
        found.append(ClusterProcess(pid, _ppid(pid), raw.replace(b"\0", b" ").decode(errors="replace").strip()))
    return found


def listening_addresses(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket ``pid`` listens on, read from ``/proc`` (IPv4-mapped
    IPv6 addresses are given as IPv4)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return set()
    found: set[tuple[str, int]] = set()
    for table in ("tcp", "tcp6"):
        rows = (_read_proc(pid, f"net/{table}") or b"").decode().splitlines()[1:]
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A = LISTEN
                continue
            hex_addr, hex_port = local.split(":")
            raw = bytes.fromhex(hex_addr)
            # The kernel prints each 32-bit word in host (little-endian) byte order.
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            addr: ipaddress.IPv4Address | ipaddress.IPv6Address = (
                ipaddress.IPv4Address(raw) if len(raw) == 4 else ipaddress.IPv6Address(raw)
            )
            if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
                addr = addr.ipv4_mapped
            found.add((str(addr), int(hex_port, 16)))
    return found


def ps_lines(pids: Sequence[int]) -> str:
    """``ps`` output for ``pids`` (for error messages: what survived, as an operator would see it)."""
    if not pids:
        return ""
    result = subprocess.run(
        ["ps", "-o", "pid,ppid,etime,args", "-p", ",".join(str(p) for p in pids)],
        capture_output=True,
        text=True,
        check=False,
    )
    return "\n".join(line[:240] for line in result.stdout.splitlines())


def reap_stale_clusters() -> list[int]:
    """SIGKILL processes left by a test cluster whose pytest process is dead (a crashed session).

    Only processes carrying the marker are considered, and only when the pytest process id recorded
    in the marker no longer exists, so a concurrent session's live cluster is never touched.
    """
    killed: list[int] = []
    for proc in find_marked_processes():
        environ = _read_proc(proc.pid, "environ") or b""
        for item in environ.split(b"\0"):
            if item.startswith(f"{MARKER_ENV}=".encode()):
                owner = item.split(b"=", 1)[1].split(b":", 1)[0]
                if owner.isdigit() and not _pid_alive(int(owner)):
                    try:
                        os.kill(proc.pid, signal.SIGKILL)
                        killed.append(proc.pid)
                    except ProcessLookupError:
                        pass
    return killed


class ClusterStartError(RuntimeError):
    """The master or the worker did not come up; the message carries the tail of their logs."""


@dataclasses.dataclass
class StandaloneCluster:
    """Handle on a running test cluster: URLs, folders, status and kill helpers.

    ``master_url`` is what ``--master`` (or the ``spark_default`` connection) takes; ``shared_dir``
    is a folder that the submitting side, the driver and the executors all see (Delta tables go
    there); ``rest_url`` is the master's REST submission server (status / kill of drivers).
    """

    root: Path
    marker: str
    master_port: int
    master_ui_port: int
    rest_port: int
    worker_port: int
    worker_ui_port: int
    carrier_jar: Path = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        for sub in ("logs", "pids", "conf", "work", "shared", "recovery"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # Read by every spark-submit run with submit_env() (SPARK_CONF_DIR), so drivers and
        # executors of the tests start with the fast JVM options; --conf still overrides them.
        (self.root / "conf" / "spark-defaults.conf").write_text(
            f"spark.driver.extraJavaOptions {FAST_JVM_OPTS}\nspark.executor.extraJavaOptions {FAST_JVM_OPTS}\n"
        )
        self.carrier_jar = make_carrier_jar(self.root / "shared" / "dq-contracts-pydriver.jar")

    # -- addresses and folders -------------------------------------------------------------------
    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:<port>``."""
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def rest_url(self) -> str:
        """The master's REST submission server, ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def web_ui_url(self) -> str:
        """The master's web UI (its ``/json/`` is the cluster state)."""
        return f"http://127.0.0.1:{self.master_ui_port}"

    @property
    def shared_dir(self) -> Path:
        """A folder visible to the submitter, the driver and the executors alike."""
        return self.root / "shared"

    @property
    def work_dir(self) -> Path:
        """The worker's work folder: one sub-folder per driver and per application."""
        return self.root / "work"

    @property
    def log_dir(self) -> Path:
        """Where the daemons' ``.out`` logs are."""
        return self.root / "logs"

    # -- environments ----------------------------------------------------------------------------
    def _base_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(self.root / "conf"),  # ours: no stray spark-defaults.conf leaks in
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
        )
        env[MARKER_ENV] = self.marker
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        return env

    def daemon_env(self) -> dict[str, str]:
        """Environment of ``spark-daemon.sh``: private log/pid/work folders, REST server on."""
        env = self._base_env()
        env.update(
            SPARK_LOG_DIR=str(self.log_dir),
            SPARK_PID_DIR=str(self.root / "pids"),
            SPARK_IDENT_STRING="dqtest",
            SPARK_WORKER_DIR=str(self.work_dir),
            SPARK_DAEMON_MEMORY="512m",
            SPARK_DAEMON_JAVA_OPTS=FAST_JVM_OPTS,
            SPARK_NICENESS="0",
            # The REST server is what Airflow's SparkSubmitHook polls (and kills through) in
            # standalone cluster mode; spark-submit --status/--kill use it too. Recovery state on
            # disk lets a restarted master take back running applications and drivers: without
            # it, the worker re-registers, the new master orders it to kill the executors it does
            # not know, and a running client-mode job hangs forever with no executor.
            SPARK_MASTER_OPTS=(
                f"-Dspark.master.rest.enabled=true -Dspark.master.rest.port={self.rest_port}"
                f" -Dspark.deploy.recoveryMode=FILESYSTEM -Dspark.deploy.recoveryDirectory={self.root / 'recovery'}"
            ),
        )
        return env

    def submit_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for a ``spark-submit`` against this cluster (carries the marker, and
        ``SPARK_CONF_DIR`` with the test cluster's ``spark-defaults.conf``)."""
        env = self._base_env()
        env["SPARK_SUBMIT_OPTS"] = FAST_JVM_OPTS  # the spark-submit JVM itself (client of cluster mode)
        env.update(extra or {})
        return env

    def airflow_connection(self, deploy_mode: str = "client") -> dict[str, Any]:
        """``AIRFLOW_CONN_SPARK_DEFAULT`` value (JSON-able) pointing at this master.

        >>> c = StandaloneCluster.__new__(StandaloneCluster)
        >>> c.master_port, c.rest_port = 7077, 6066
        >>> c.airflow_connection("cluster")["extra"]
        {'deploy-mode': 'cluster', 'rest-port': '6066'}
        """
        return {
            "conn_type": "spark",
            "host": "spark://127.0.0.1",
            "port": self.master_port,
            "extra": {"deploy-mode": deploy_mode, "rest-port": str(self.rest_port)},
        }

    # -- daemons ---------------------------------------------------------------------------------
    def _daemon(self, action: str, cls: str, *args: str) -> subprocess.Popen[str]:
        script = spark_home() / "sbin" / "spark-daemon.sh"
        return subprocess.Popen(
            ["bash", str(script), action, cls, "1", *args],
            env=self.daemon_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def _pid_file(self, cls: str) -> Path:
        return self.root / "pids" / f"spark-dqtest-{cls}-1.pid"

    def daemon_pid(self, cls: str) -> int | None:
        """Process id of the master or worker JVM (from its pid file), or None if not running."""
        try:
            pid = int(self._pid_file(cls).read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _pid_alive(pid) else None

    def _master_args(self) -> list[str]:
        return ["--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(self.master_ui_port)]

    def _worker_args(self) -> list[str]:
        return [
            "--host",
            "127.0.0.1",
            "--port",
            str(self.worker_port),
            "--webui-port",
            str(self.worker_ui_port),
            "--cores",
            str(WORKER_CORES),
            "--memory",
            WORKER_MEMORY,
            "--work-dir",
            str(self.work_dir),
            self.master_url,
        ]

    def start(self) -> None:
        """Start master and worker and wait until the worker has registered (raises with log tails)."""
        # Both launches at once: spark-daemon.sh sleeps ~2.5 s per daemon, and the worker
        # retries its registration until the master answers.
        launches = [
            self._daemon("start", MASTER_CLASS, *self._master_args()),
            self._daemon("start", WORKER_CLASS, *self._worker_args()),
        ]
        outputs = [proc.communicate(timeout=60)[0] for proc in launches]
        if any("failed to launch" in out for out in outputs):
            raise ClusterStartError("spark-daemon.sh could not launch:\n" + "\n".join(outputs) + self.log_tails())
        self.wait_for_workers(1, timeout=START_TIMEOUT_S)

    def start_master(self) -> None:
        """(Re)start only the master, on the same ports, and wait for the worker to re-register.

        The master recovers running applications and drivers from its recovery folder
        (``spark.deploy.recoveryMode=FILESYSTEM``), as a production master should be set up.
        """
        out = self._daemon("start", MASTER_CLASS, *self._master_args()).communicate(timeout=60)[0]
        if "failed to launch" in out:
            raise ClusterStartError(f"master could not launch:\n{out}{self.log_tails()}")
        self.wait_for_workers(1, timeout=START_TIMEOUT_S)

    def kill_master(self) -> None:
        """SIGKILL the master JVM (a crash, not a shutdown) and wait until it is gone."""
        pid = self.daemon_pid(MASTER_CLASS)
        if pid is None:
            return
        os.kill(pid, signal.SIGKILL)
        _wait_until(lambda: not _pid_alive(pid), 20, f"master {pid} still alive after SIGKILL")
        self._pid_file(MASTER_CLASS).unlink(missing_ok=True)

    def stop(self) -> list[ClusterProcess]:
        """Stop worker and master; SIGKILL whatever of the cluster is still alive after 30 s.

        Returns the processes that had to be force-killed (empty when shutdown was clean); raises
        if any survives even SIGKILL.
        """
        for cls in (WORKER_CLASS, MASTER_CLASS):  # the worker kills its drivers and executors on stop
            if self.daemon_pid(cls) is not None:
                self._daemon("stop", cls).communicate(timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.processes():
            time.sleep(0.5)
        leftovers = self.processes()
        for proc in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        if leftovers:
            _wait_until(lambda: not self.processes(), 15, "")
            survivors = self.processes()
            if survivors:
                raise RuntimeError("test cluster processes survived SIGKILL:\n" + ps_lines([p.pid for p in survivors]))
        return leftovers

    # -- state -----------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The master's ``/json/`` document (workers, active / completed apps and drivers)."""
        with urllib.request.urlopen(f"{self.web_ui_url}/json/", timeout=10) as response:
            return json.load(response)

    def wait_for_workers(self, count: int = 1, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
        """Block until ``count`` workers are ALIVE; return the master state."""
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                state = self.state()
                if state.get("status") == "ALIVE" and int(state.get("aliveworkers", 0)) >= count:
                    return state
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last_error = exc
            time.sleep(0.5)
        raise ClusterStartError(
            f"no {count} alive worker(s) at {self.web_ui_url}/json/ after {timeout:.0f}s"
            f" (last error: {last_error}){self.log_tails()}"
        )

    def processes(self) -> list[ClusterProcess]:
        """Every live process of this cluster: daemons, drivers, executors, Python workers, and
        spark-submit runs started with :meth:`submit_env`."""
        return find_marked_processes(self.marker, cwd_root=self.root)

    def app_processes(self) -> list[ClusterProcess]:
        """:meth:`processes` minus the master and worker daemons (what a finished app must not leave)."""
        daemons = {self.daemon_pid(MASTER_CLASS), self.daemon_pid(WORKER_CLASS)}
        return [p for p in self.processes() if p.pid not in daemons]

    def wait_until_idle(self, timeout: float = 60) -> None:
        """Block until no application or driver is active and no app process is left."""

        def idle() -> bool:
            state = self.state()
            return not state["activeapps"] and not state["activedrivers"] and not self.app_processes()

        _wait_until(idle, timeout, "cluster still busy:\n" + ps_lines([p.pid for p in self.app_processes()]))

    # -- drivers (cluster deploy mode) -----------------------------------------------------------
    def _rest(self, method: str, path: str) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.rest_url}/v1/submissions/{path}", method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)

    def driver_state(self, driver_id: str) -> str:
        """``driverState`` from the REST status endpoint (SUBMITTED, RUNNING, FINISHED, KILLED, …)."""
        return str(self._rest("GET", f"status/{driver_id}").get("driverState", "UNKNOWN"))

    def kill_driver(self, driver_id: str) -> dict[str, Any]:
        """Ask the master to kill a driver (``POST /v1/submissions/kill/<id>``, as the hook's on_kill)."""
        return self._rest("POST", f"kill/{driver_id}")

    def wait_for_driver(self, driver_id: str, timeout: float = 180) -> str:
        """Block until the driver reaches a terminal state; return it."""
        deadline = time.monotonic() + timeout
        state = "UNKNOWN"
        while time.monotonic() < deadline:
            state = self.driver_state(driver_id)
            if state in DRIVER_TERMINAL_STATES:
                return state
            time.sleep(1)
        raise TimeoutError(f"driver {driver_id} still {state} after {timeout:.0f}s{self.driver_logs(driver_id)}")

    def driver_dir(self, driver_id: str) -> Path:
        """The worker's folder of a driver (its ``stdout`` / ``stderr`` are there)."""
        return self.work_dir / driver_id

    def driver_logs(self, driver_id: str, lines: int = 40) -> str:
        """Tail of a driver's stderr and stdout (for failure messages)."""
        return "".join(
            f"\n--- {driver_id}/{name} (tail) ---\n" + _tail(self.driver_dir(driver_id) / name, lines)
            for name in ("stderr", "stdout")
        )

    def log_tails(self, lines: int = 30) -> str:
        """Tail of the master's and worker's logs."""
        return "".join(
            f"\n--- {log.name} (tail) ---\n{_tail(log, lines)}" for log in sorted(self.log_dir.glob("*.out"))
        )


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path})"


def _wait_until(predicate: Callable[[], bool], timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    if message:
        raise TimeoutError(message)


def start_cluster(root: Path | None = None) -> StandaloneCluster:
    """Start a one-worker standalone cluster under ``root`` (a new temp folder by default).

    Always stops what it started if the start fails.
    """
    if shutil.which("java") is None:
        raise ClusterStartError("java is not on PATH: a Spark standalone cluster needs Java 17")
    reap_stale_clusters()
    root = Path(root or tempfile.mkdtemp(prefix="dq-spark-cluster-")).resolve()
    ports: set[int] = set()
    while len(ports) < 5:  # five distinct ports even if the OS hands one out twice
        ports.add(free_port())
    master, master_ui, rest, worker, worker_ui = sorted(ports)
    cluster = StandaloneCluster(
        root=root,
        marker=f"{os.getpid()}:{uuid.uuid4().hex}",
        master_port=master,
        master_ui_port=master_ui,
        rest_port=rest,
        worker_port=worker,
        worker_ui_port=worker_ui,
    )
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster


# One cluster per pytest session even when several modules import the fixture (each import
# creates its own session-scoped fixture definition): reference-counted under a lock.
_LOCK = threading.Lock()
_SHARED: dict[str, Any] = {"cluster": None, "users": 0}


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[StandaloneCluster]:
    """A running standalone master + one worker (2 cores, 2g) on 127.0.0.1, stopped at the end.

    Teardown stops both daemons, then checks through ``/proc`` that no process of the cluster
    (driver, executor, Python worker) is left; stragglers are SIGKILLed and reported as a warning.
    """
    with _LOCK:
        if _SHARED["cluster"] is None:
            _SHARED["cluster"] = start_cluster()
        _SHARED["users"] += 1
        cluster: StandaloneCluster = _SHARED["cluster"]
    try:
        yield cluster
    finally:
        with _LOCK:
            _SHARED["users"] -= 1
            last = _SHARED["users"] == 0
            if last:
                _SHARED["cluster"] = None
        if last:
            leftovers = cluster.stop()
            if leftovers:
                warnings.warn(
                    "test cluster: processes had to be SIGKILLed at teardown: "
                    + ", ".join(f"{p.kind}({p.pid})" for p in leftovers),
                    stacklevel=1,
                )
            if not os.environ.get("DQ_KEEP_TEST_CLUSTER"):  # set it to keep logs and work folders
                shutil.rmtree(cluster.root, ignore_errors=True)
