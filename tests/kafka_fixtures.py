"""A real single-node Kafka broker (KRaft, no ZooKeeper) on 127.0.0.1 for the tests, one per session.

The broker is Apache Kafka itself, from Maven Central (``org.apache.kafka:kafka_2.13`` and
``kafka-tools``, :data:`KAFKA_VERSION`, with their runtime dependencies), resolved once per machine
into the project's jars cache by :func:`airflow_dq_contracts.runtime.jars.resolve` — under its lock,
offline once fetched, the same way as Delta's jars (``./dev test`` prefetches them:
``python tests/kafka_fixtures.py fetch``). Scala's library comes from the pyspark wheel (the resolution
leaves it out, as Spark's does). The machine's Java 17 runs it:

1. ``kafka.tools.StorageTool format`` formats a fresh log folder (a new cluster id),
2. ``kafka.Kafka server.properties`` starts one process that is broker and controller, its listeners
   on two free ports of 127.0.0.1,
3. the fixture waits until the broker answers a topic listing (``TopicCommand --list``), yields the
   :class:`KafkaBroker` and always stops it: SIGTERM, then SIGKILL after 20 s.

Every JVM it starts carries the environment variable :data:`MARKER_ENV` (``<pytest pid>:<uuid>``):
a broker left by a crashed session (its pytest process gone) is SIGKILLed when the next one starts.

Registered in ``tests/conftest.py`` (``pytest_plugins``). Example::

    def test_topic(kafka_broker):
        kafka_broker.create_topic("orders", partitions=2)
        kafka_broker.produce("orders", ['{"id": 1}', '{"id": 2}'], keys=["a", "b"])
        spark.read.format("kafka").option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers) …

Missing Java: the tests that ask for the broker fail in CI with the hint, and skip elsewhere
(``ci_guard.require``).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from airflow_dq_contracts.runtime import jars

#: The Kafka release the test broker runs (a 4.x release: KRaft only, Java 17).
KAFKA_VERSION = "4.1.1"
#: The broker (``kafka.Kafka``, ``kafka.tools.StorageTool``) and its command-line tools (console
#: producer, topic command).
BROKER_PACKAGES = (f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}", f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}")
MARKER_ENV = "DQ_TEST_KAFKA_BROKER"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
# Short-lived test JVMs on 2 shared cores (as tests/cluster_fixtures.py): C1 only, serial GC.
JVM_OPTS = ["-Xms128m", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]
JAVA_HINT = "install a Java 17 runtime (apt-get install openjdk-17-jre-headless) and put `java` on PATH"


class KafkaStartError(RuntimeError):
    """The broker did not come up; the message carries the tail of its log."""


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").is_file():
        return str(Path(home, "bin", "java"))
    return shutil.which("java")


def _scala_library() -> list[Path]:
    """The pyspark wheel's Scala library (``jars.resolve`` leaves ``scala-library`` out)."""
    spec = importlib.util.find_spec("pyspark")
    folders = [Path(p) / "jars" for p in (spec.submodule_search_locations or [])] if spec else []
    for folder in folders:
        found = sorted(folder.glob("scala-library-2.13.*.jar"))
        if found:
            return found[-1:]
    raise KafkaStartError("no scala-library-2.13.*.jar in the pyspark wheel: the broker needs Scala 2.13")


def broker_classpath(jars_dir: Path | str | None = None) -> str:
    """The broker's class path: :data:`BROKER_PACKAGES` resolved once (under the jars lock, cached,
    offline once fetched) plus Scala's library. Raises :class:`~airflow_dq_contracts.runtime.jars.JarResolutionError`."""
    resolved = jars.resolve(list(BROKER_PACKAGES), jars_dir)
    return os.pathsep.join(str(jar) for jar in [*resolved, *_scala_library()])


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cluster_id() -> str:
    """A new Kafka cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's ``Uuid``).

    >>> len(cluster_id())
    22
    """
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def server_properties(data_dir: Path, port: int, controller_port: int) -> str:
    """``server.properties`` of a one-node KRaft cluster (broker and controller in one process).

    >>> "process.roles=broker,controller" in server_properties(Path("/d"), 9092, 9093)
    True
    """
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            f"log.dirs={data_dir}",
            "num.partitions=1",
            "auto.create.topics.enable=false",
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            "",
        ]
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def marked_processes(marker: str | None = None) -> list[int]:
    """Live processes whose environment carries :data:`MARKER_ENV` (any value, or exactly ``marker``)."""
    prefix = f"{MARKER_ENV}=".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        for item in environ.split(b"\0"):
            if item.startswith(prefix) and (marker is None or item[len(prefix) :] == marker.encode()):
                found.append(int(entry))
                break
    return found


def reap_stale_brokers() -> list[int]:
    """SIGKILL test brokers whose pytest process is dead (a crashed session); a live session's are kept."""
    killed = []
    for pid in marked_processes():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        owner = next(
            (i.split(b"=", 1)[1].split(b":", 1)[0] for i in environ.split(b"\0") if i.startswith(MARKER_ENV.encode())),
            b"",
        )
        if owner.isdigit() and not _pid_alive(int(owner)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    return killed


@dataclasses.dataclass
class KafkaBroker:
    """A running test broker: ``bootstrap_servers`` for clients, helpers to make topics and produce."""

    root: Path
    port: int
    controller_port: int
    marker: str
    classpath: str
    java: str
    process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>`` (what ``kafka.bootstrap.servers`` takes)."""
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root / "broker.log"

    def env(self) -> dict[str, str]:
        """The environment of every JVM of this broker (carries the marker)."""
        return {**os.environ, MARKER_ENV: self.marker}

    def tool(
        self, main_class: str, *args: str, stdin: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's command-line classes (``org.apache.kafka.tools.TopicCommand``…) on the class path."""
        return subprocess.run(
            [self.java, *JVM_OPTS, "-cp", self.classpath, main_class, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(),
            check=False,
        )

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic (replication factor 1); raises with Kafka's own words when it cannot."""
        done = self.tool(
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            self.bootstrap_servers,
            "--create",
            "--topic",
            name,
            "--partitions",
            str(partitions),
            "--replication-factor",
            "1",
        )
        if done.returncode != 0:
            raise RuntimeError(f"cannot create topic {name!r}: {(done.stdout + done.stderr).strip()[-2000:]}")

    def produce(self, topic: str, values: Sequence[str], keys: Sequence[str] | None = None) -> None:
        """Send ``values`` (one message each, in order; no newline or tab inside) with Kafka's console
        producer (``acks=all``); with ``keys``, message *i* has key ``keys[i]`` (same partition per key)."""
        if keys is not None and len(keys) != len(values):
            raise ValueError("give one key per value")
        if any("\n" in v or "\t" in v for v in values) or any("\t" in k or "\n" in k for k in keys or ()):
            raise ValueError("values and keys are sent one per line: no newline or tab inside")
        lines = [f"{k}\t{v}" for k, v in zip(keys, values)] if keys is not None else list(values)
        args = ["--bootstrap-server", self.bootstrap_servers, "--topic", topic, "--producer-property", "acks=all"]
        if keys is not None:
            args += ["--property", "parse.key=true", "--property", "key.separator=\t"]
        done = self.tool("org.apache.kafka.tools.ConsoleProducer", *args, stdin="\n".join(lines) + "\n")
        if done.returncode != 0:
            raise RuntimeError(f"console producer failed on {topic!r}: {(done.stdout + done.stderr).strip()[-2000:]}")

    def start(self) -> None:
        """Format the storage, start the broker, wait until it answers (raises :class:`KafkaStartError`)."""
        data = self.root / "data"
        properties = self.root / "server.properties"
        properties.write_text(server_properties(data, self.port, self.controller_port))
        formatted = self.tool(
            "kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(properties), "--ignore-formatted"
        )
        if formatted.returncode != 0:
            raise KafkaStartError(f"kafka-storage format failed:\n{(formatted.stdout + formatted.stderr).strip()}")
        log4j = self.root / "log4j2.properties"
        log4j.write_text(
            "status = error\nappender.out.type = Console\nappender.out.name = OUT\n"
            "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.out.ref = OUT\n"
        )
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [
                    self.java,
                    *JVM_OPTS,
                    f"-Dlog4j2.configurationFile={log4j}",
                    "-cp",
                    self.classpath,
                    "kafka.Kafka",
                    str(properties),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env(),
                cwd=self.root,
                start_new_session=True,  # a Ctrl-C of pytest is not the broker's: teardown stops it
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise KafkaStartError(f"the broker exited with {self.process.returncode}{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
            except OSError as exc:
                last = str(exc)
                time.sleep(0.5)
                continue
            listed = self.tool(
                "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", self.bootstrap_servers, "--list"
            )
            if listed.returncode == 0:
                return
            last = (listed.stdout + listed.stderr).strip()[-500:]
            time.sleep(1)
        raise KafkaStartError(f"the broker did not answer in {START_TIMEOUT_S:.0f} s ({last}){self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            text = "(no log)"
        return f"\n--- broker log (tail) ---\n{text}"

    def stop(self) -> list[int]:
        """SIGTERM the broker (a clean shutdown), SIGKILL it and any marked straggler after
        :data:`STOP_TIMEOUT_S`; returns the pids that had to be killed."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT_S)
        killed = []
        for pid in marked_processes(self.marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        return killed


def start_broker(root: Path | None = None, jars_dir: Path | str | None = None) -> KafkaBroker:
    """Start a one-node KRaft broker under ``root`` (a new temp folder by default); stops what it
    started if the start fails."""
    java = _java()
    if java is None:
        raise KafkaStartError(f"java is not on PATH: {JAVA_HINT}")
    reap_stale_brokers()
    classpath = broker_classpath(jars_dir)
    root = Path(root or tempfile.mkdtemp(prefix="dq-kafka-")).resolve()
    ports: set[int] = set()
    while len(ports) < 2:
        ports.add(free_port())
    port, controller_port = sorted(ports)
    broker = KafkaBroker(root, port, controller_port, f"{os.getpid()}:{uuid.uuid4().hex}", classpath, java)
    try:
        broker.start()
    except BaseException:
        broker.stop()
        raise
    return broker


# One broker per pytest session even when several modules import the fixture: reference-counted.
_LOCK = threading.Lock()
_SHARED: dict[str, KafkaBroker | int | None] = {"broker": None, "users": 0}


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A running single-node KRaft Kafka broker on 127.0.0.1 (free ports), always stopped at the end.

    Use ``kafka_broker.bootstrap_servers``, ``create_topic(name, partitions)`` and
    ``produce(topic, values, keys=None)``; topic names are the test's own (one broker per session).
    """
    from ci_guard import require

    require(_java() is not None, "Java (for the Kafka test broker)", JAVA_HINT)
    with _LOCK:
        if _SHARED["broker"] is None:
            _SHARED["broker"] = start_broker()
        _SHARED["users"] = int(_SHARED["users"] or 0) + 1
        broker = _SHARED["broker"]
    assert isinstance(broker, KafkaBroker)
    try:
        yield broker
    finally:
        with _LOCK:
            _SHARED["users"] = int(_SHARED["users"] or 0) - 1
            last = _SHARED["users"] == 0
            if last:
                _SHARED["broker"] = None
        if last:
            broker.stop()
            if not os.environ.get("DQ_KEEP_TEST_KAFKA"):  # set it to keep the broker's log and data
                shutil.rmtree(broker.root, ignore_errors=True)


def main(argv: Sequence[str]) -> int:
    """``python tests/kafka_fixtures.py fetch``: resolve the broker's jars and Spark's Kafka source now
    (``./dev test`` does, so that the suite runs offline); prints the class path's folders."""
    if list(argv) != ["fetch"]:
        print("usage: python tests/kafka_fixtures.py fetch", file=sys.stderr)
        return 2
    try:
        print(Path(broker_classpath().split(os.pathsep)[0]).parent)
        print(Path(jars.kafka_jars()[0]).parent)
    except (jars.JarResolutionError, KafkaStartError) as exc:
        print(f"kafka jars: {exc}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
