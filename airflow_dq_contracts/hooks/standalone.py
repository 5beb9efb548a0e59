"""Spark standalone cluster deploy mode for the contract job: the PythonRunner route (no pyspark import).

spark-submit refuses ``.py`` applications in cluster deploy mode on a standalone master ("Cluster
deploy mode is currently not supported for python applications on standalone clusters"). With
``deploy-mode: cluster`` on a ``spark://`` connection, :class:`ContractSubmitHook` hands the run to
:class:`StandaloneDriverRoute`, which takes the route Spark's own classes support:

* a code-free *carrier jar* whose main class is ``org.apache.spark.deploy.PythonRunner``, given the
  launcher and the bundle as its first two arguments;
* Delta (and any ``packages``) resolved once into a local jar folder and passed as ``spark.jars`` —
  ``--packages`` would reach the driver only, and the executors then fail with a
  ``ClassCastException`` on ``SerializedLambda``;
* the job's marker lines written to a file (``--markers-out``), since the driver's stdout stays on
  the worker;
* the driver followed through the master's REST server (status, kill), tolerating a master that is
  away for ``master_unreachable_timeout`` seconds;
* the driver of a failed attempt that still runs stopped before a retry submits the same run again
  (a record per run key under the job folder's ``drivers/``).

Everything the driver reads — bundle, launcher, carrier jar, resolved jars, the marker file — lives
in the job folder (``$DQ_CONTRACTS_JOB_CACHE``), which must be a folder the Spark workers see at
the same path.

Example::

    route = StandaloneDriverRoute(hook, adapter, bundle=bundle, job_args=[...], run_key="dq-1", ...)
    outcome = route.run()      # the job's completion payload; raises ContractJobError otherwise
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from airflow_dq_contracts.hooks.errors import ContractJobError
from airflow_dq_contracts.hooks.spark_submit_adapter import KILL_GRACE_SECONDS, SparkSubmitAdapter
from airflow_dq_contracts.jobs.bundle import JobBundle, build_carrier_jar
from airflow_dq_contracts.version_compat import AirflowException

PYTHON_RUNNER_CLASS = "org.apache.spark.deploy.PythonRunner"
# org.apache.spark.deploy.master.DriverState: still holding (or about to hold) worker resources.
ACTIVE_DRIVER_STATES = frozenset({"SUBMITTED", "RUNNING", "RELAUNCHING"})
TERMINAL_DRIVER_STATES = frozenset({"FINISHED", "KILLED", "FAILED", "ERROR"})
# How long a master may be away (crash + restart with its recovery state takes ~10-30 s) before a
# cluster-mode task gives up on its driver. SparkSubmitHook itself gives up after 10 failed polls.
MASTER_UNREACHABLE_TIMEOUT = 60.0
# One REST request; a dead master refuses at once, a partitioned one would hang without this.
REST_TIMEOUT_SECONDS = 10.0
# How long on_kill (and a retry reclaiming an earlier attempt's driver) waits for the driver to end.
DRIVER_STOP_TIMEOUT = 60.0
# The job argument naming the file the driver appends its marker lines to.
MARKERS_OUT_FLAG = "--markers-out"


class MasterUnreachable(Exception):
    """The master's REST server did not answer (or only said UNKNOWN) for too long."""


class RestError(Exception):
    """One REST request to the master failed (refused, timed out, not JSON)."""


def rest_request(endpoint: str, path: str, method: str = "GET") -> dict[str, Any]:
    """One call to a standalone master's REST submission server; its JSON answer.

    :raises RestError: refused, timed out, or not a JSON object.
    """
    request = urllib.request.Request(f"{endpoint.rstrip('/')}/v1/submissions/{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=REST_TIMEOUT_SECONDS) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:  # the server answered, with an error document
        body = exc.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RestError(f"{type(reason).__name__}: {reason}") from None
    try:
        answer = json.loads(body)
    except ValueError:
        raise RestError(f"not a JSON answer: {body[:200]!r}") from None
    if not isinstance(answer, dict):
        raise RestError(f"unexpected answer: {answer!r}")
    return answer


def rest_driver_state(endpoint: str, driver_id: str) -> tuple[str, str]:
    """(``driverState``, message) of a driver; ``UNKNOWN`` when the master has no state for it."""
    answer = rest_request(endpoint, f"status/{driver_id}")
    state = answer.get("driverState")
    return (str(state) if state else "UNKNOWN"), str(answer.get("message") or "")


class TaskLog(Protocol):
    """The logging calls the route makes (a ``logging.Logger`` or Airflow's structured task logger)."""

    def info(self, msg: str, /, *args: Any) -> Any:
        """Log at INFO."""
        ...

    def warning(self, msg: str, /, *args: Any) -> Any:
        """Log at WARNING."""
        ...

    def error(self, msg: str, /, *args: Any) -> Any:
        """Log at ERROR."""
        ...


class RouteOwner(Protocol):
    """What the route needs from the hook that owns it (:class:`ContractSubmitHook`)."""

    done: dict[str, Any] | None
    job_error: dict[str, Any] | None

    @property
    def log(self) -> TaskLog:
        """The hook's task logger."""
        ...

    def take_marker(self, line: str) -> bool:
        """Record a marker line of the job; True when it was one."""
        ...

    def resolve_packages(self, coordinates: Sequence[str], jars_dir: Path | None = None) -> list[str]:
        """Local jars for Maven coordinates."""
        ...

    def submit_application(self, application: str) -> None:
        """Run spark-submit for ``application``.

        Raises ``ContractJobError`` when the task was killed before it started, ``AirflowException``
        when spark-submit fails.
        """
        ...


class StandaloneDriverRoute:
    """One contract job as a PythonRunner driver on a standalone master (see the module docstring).

    :param owner: the hook (marker lines, package resolution, spark-submit itself).
    :param adapter: the hook's :class:`SparkSubmitAdapter` (command, driver id and state).
    :param bundle: the job bundle; its folder is the job folder the workers must see.
    :param job_args: the job's own arguments, passed through untouched.
    :param packages: Maven coordinates resolved into ``spark.jars`` at submit time.
    :param jars: jars (paths the workers read) for ``spark.jars``.
    :param py_files: the bundle and any extra Python files (``spark.submit.pyFiles``).
    :param run_key: what identifies one run across retries (None: no reclaiming).
    :param rest_endpoint: the master's REST server (None: HA masters, followed with spark-submit).
    :param master_unreachable_timeout: seconds the master may be away before the task fails.
    :param status_poll_interval: seconds between driver status polls.
    """

    def __init__(
        self,
        owner: RouteOwner,
        adapter: SparkSubmitAdapter,
        *,
        bundle: JobBundle,
        job_args: Sequence[str],
        packages: Sequence[str],
        jars: Sequence[str],
        py_files: Sequence[str],
        run_key: str | None,
        rest_endpoint: str | None,
        master_unreachable_timeout: float = MASTER_UNREACHABLE_TIMEOUT,
        status_poll_interval: float = 1,
    ) -> None:
        self.owner, self.adapter, self.bundle = owner, adapter, bundle
        self.job_args = list(job_args)
        self.packages, self.jars, self.py_files = list(packages), list(jars), list(py_files)
        self.run_key, self.rest_endpoint = run_key, rest_endpoint
        self.master_unreachable_timeout = float(master_unreachable_timeout)
        self.status_poll_interval = status_poll_interval
        self.markers_path: Path | None = None
        self._followed = False
        self._remembered = False

    @property
    def job_folder(self) -> Path:
        """The folder of the bundle, the carrier jar, resolved jars, marker files and driver records."""
        return self.bundle.zip_path.parent

    @property
    def log(self) -> TaskLog:
        """The owning hook's logger."""
        return self.owner.log

    # ------------------------------------------------------------------ submitting

    def prepare(self) -> Path:
        """Jars and Python files as conf, the carrier jar written; returns the carrier jar."""
        jars = list(self.jars)
        if self.packages:
            # Into the job folder, which the workers see at the same path.
            resolved = self.owner.resolve_packages(self.packages, self.job_folder / "jars")
            jars += [jar for jar in resolved if jar not in jars]
        conf = self.adapter.conf
        if jars:
            # spark.jars reach the driver's and the executors' class loaders alike.
            conf["spark.jars"] = ",".join(jars)
        # PythonRunner puts them on the driver's PYTHONPATH; this conf ships them to executors.
        conf["spark.submit.pyFiles"] = ",".join(self.py_files)
        self.adapter.set(conf=conf)
        return build_carrier_jar(self.job_folder)

    def application_args(self) -> list[str]:
        """PythonRunner's arguments: launcher, Python files, then the job's own and the marker file."""
        return [
            str(self.bundle.launcher_path),
            ",".join(self.py_files),
            *self.job_args,
            f"{MARKERS_OUT_FLAG}={self.markers_path}",
        ]

    def run(self) -> dict[str, Any] | None:
        """Submit the driver, follow it to its end, return the job's completion payload.

        :raises ContractJobError: the job's own error, a failed hand-over, a lost master, a kill
            before spark-submit started.
        """
        carrier = self.prepare()
        self.reclaim_previous_driver()
        runs = self.job_folder / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        self.markers_path = runs / f"{uuid.uuid4().hex}.markers"
        self._followed = self._remembered = False
        self.adapter.set(application_args=self.application_args(), driver_id=None, driver_status=None)
        try:
            try:
                self._submit(carrier)
                if not self._followed:  # providers before 6 follow the driver inside submit()
                    self.follow_driver()
            except MasterUnreachable as exc:
                raise ContractJobError(str(exc), kind="master_lost") from None
            finally:
                self.adapter.run_post_submit_commands()
            return self.outcome()
        finally:
            self.markers_path.unlink(missing_ok=True)

    def _submit(self, carrier: Path) -> None:
        try:
            self.owner.submit_application(str(carrier))
        except ContractJobError:  # the owner's own refusal (killed before spark-submit started)
            raise
        except AirflowException as exc:
            if not self.adapter.driver_id:
                raise ContractJobError(
                    f"spark-submit could not hand the driver to {self.adapter.master}: {exc}", kind="submit_failed"
                ) from None
            # The master accepted the driver, then spark-submit failed (its one status poll lost the
            # master): the driver runs regardless, so it is followed, not abandoned.
            self.log.warning(
                "spark-submit failed after the master accepted driver %s; following the driver", self.adapter.driver_id
            )

    def follow_driver(self) -> None:
        """Poll the driver through the master's REST server until it ends.

        Unlike ``SparkSubmitHook`` (10 failed polls, then give up; UNKNOWN counts as an end), a master
        that is away or recovering is waited for up to ``master_unreachable_timeout`` seconds, and the
        job's own marker file settles the outcome when it arrives in the meantime.

        :raises MasterUnreachable: no state for the driver for ``master_unreachable_timeout`` seconds.
        """
        self._followed = True
        driver_id = self.adapter.driver_id
        self.remember_driver()
        self.log.info(
            "Driver %s submitted to %s; following it through %s",
            driver_id,
            self.adapter.master,
            self.rest_endpoint or "spark-submit --status",
        )
        if not self.rest_endpoint:
            self.adapter.track_driver_with_spark_submit()
            return
        away_since: float | None = None
        last_problem = ""
        while True:
            time.sleep(self.status_poll_interval)
            state: str | None
            try:
                state, message = rest_driver_state(self.rest_endpoint, str(driver_id))
            except RestError as exc:
                state, message = None, str(exc)
            if state in TERMINAL_DRIVER_STATES or state in ACTIVE_DRIVER_STATES:
                if away_since is not None:
                    self.log.info("The master answers again: driver %s is %s", driver_id, state)
                self.adapter.set(driver_status=state)
                away_since = None
                if state in TERMINAL_DRIVER_STATES:
                    return
                continue
            # Unreachable, or UNKNOWN: a recovering master, or one that lost the driver.
            last_problem = f"driver state {state}" + (f" ({message})" if message else "") if state else message
            now = time.monotonic()
            if away_since is None:
                away_since = now
                self.log.warning(
                    "Spark master at %s: %s; waiting up to %.0f s",
                    self.rest_endpoint,
                    last_problem,
                    self.master_unreachable_timeout,
                )
            if self.read_markers():
                self.log.warning("The contract job reported its end while the master was away")
                return
            if now - away_since >= self.master_unreachable_timeout:
                raise MasterUnreachable(
                    f"lost the Spark master: its REST server at {self.rest_endpoint} gave no state for driver "
                    f"{driver_id} for {now - away_since:.0f} s (last: {last_problem}); its last known state: "
                    f"{self.adapter.driver_status or 'SUBMITTED'}. It may still be running on the cluster: the "
                    f"next attempt stops it before submitting again (same run id: its results are replaced, "
                    f"never doubled)."
                )

    def read_markers(self) -> bool:
        """Take the job's marker lines from the marker file; True when a final one is there."""
        path = self.markers_path
        if path is None:
            return False
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return False
        found = False
        for line in lines:
            found = self.owner.take_marker(line) or found
        return found

    def outcome(self) -> dict[str, Any] | None:
        """The job's completion payload once the driver ended (None: FINISHED without a marker file)."""
        driver_id = self.adapter.driver_id
        state = self.adapter.driver_status or "SUBMITTED"
        self.read_markers()
        owner = self.owner
        if state not in TERMINAL_DRIVER_STATES and owner.done is None and owner.job_error is None:
            raise ContractJobError(f"Spark driver {driver_id} is {state} and reported nothing", kind="run_failed")
        # The job said how it ended: its driver exits by itself, nothing is left to reclaim.
        self.forget_driver()
        if owner.job_error is not None:
            raise ContractJobError(
                str(owner.job_error.get("message")), kind=str(owner.job_error.get("kind") or "run_failed")
            )
        if owner.done is not None:
            if state in TERMINAL_DRIVER_STATES and state != "FINISHED":
                self.log.warning(
                    "The contract job reported completion; the master reports driver %s as %s "
                    "(it lost track of the driver while it was away)",
                    driver_id,
                    state,
                )
            elif state != "FINISHED":
                self.log.warning(
                    "The contract job reported completion; the master could not confirm the end of "
                    "driver %s (last known state: %s)",
                    driver_id,
                    state,
                )
            return owner.done
        if state == "FINISHED":
            self.log.warning(
                "Driver %s FINISHED without a marker file (%s not writable from the worker?); "
                "the results table decides",
                driver_id,
                self.markers_path,
            )
            return None
        raise ContractJobError(
            f"Spark driver {driver_id} ended {state} on {self.adapter.master} before the contract job reported a "
            f"result (the driver's log is in the worker's work folder: {driver_id}/stderr)",
            kind="run_failed",
        )

    # ------------------------------------------------------------------ the driver of a run, across attempts

    def driver_record_path(self) -> Path | None:
        """Where the driver of this run key is recorded (None without a run key)."""
        if not self.run_key:
            return None
        digest = hashlib.sha256(self.run_key.encode()).hexdigest()[:24]
        return self.job_folder / "drivers" / f"{digest}.json"

    def remember_driver(self) -> None:
        """Record this attempt's driver, so a retry can stop it if it outlives the attempt."""
        path, driver_id = self.driver_record_path(), self.adapter.driver_id
        if path is None or not driver_id or self._remembered:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "run_key": self.run_key,
            "driver_id": driver_id,
            "master": self.adapter.master,
            "rest_endpoint": self.rest_endpoint,
            "submitted_at": time.time(),
        }
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
        os.replace(tmp, path)
        self._remembered = True

    def forget_driver(self) -> None:
        """Drop the record of this attempt's driver (it ended)."""
        path = self.driver_record_path()
        if path is None:
            return
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("driver_id") == self.adapter.driver_id:
                path.unlink(missing_ok=True)
        except (OSError, ValueError):
            pass

    def reclaim_previous_driver(self) -> None:
        """Stop the driver an earlier attempt of this run left running, before submitting another.

        Two drivers of one run would write the same run id twice over (replaced, never doubled, but
        which copy wins would be a race) and, on a small cluster, hold each other's cores.
        """
        path = self.driver_record_path()
        if path is None or not path.exists():
            return
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            driver_id, endpoint = str(record["driver_id"]), record.get("rest_endpoint") or self.rest_endpoint
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            return
        if not endpoint:
            return
        try:
            state, _ = rest_driver_state(endpoint, driver_id)
        except RestError as exc:
            raise ContractJobError(
                f"driver {driver_id} of an earlier attempt of run {self.run_key} may still be running and the "
                f"master's REST server at {endpoint} does not answer ({exc}): not submitting a second driver "
                f"for the same run",
                kind="submit_failed",
            ) from None
        if state in ACTIVE_DRIVER_STATES:
            self.log.warning(
                "Driver %s of an earlier attempt of run %s is still %s: stopping it first",
                driver_id,
                self.run_key,
                state,
            )
            try:
                final = self.kill_and_wait(endpoint, driver_id)
            except RestError as exc:
                raise ContractJobError(
                    f"cannot stop driver {driver_id} of an earlier attempt of run {self.run_key} ({exc}): not "
                    f"submitting a second driver for the same run",
                    kind="submit_failed",
                ) from None
            if final not in TERMINAL_DRIVER_STATES:
                raise ContractJobError(
                    f"driver {driver_id} of an earlier attempt of run {self.run_key} is still {final} after a kill "
                    f"request; not submitting a second driver for the same run",
                    kind="submit_failed",
                )
        else:
            self.log.info("Driver %s of an earlier attempt of run %s is %s", driver_id, self.run_key, state)
        path.unlink(missing_ok=True)

    def kill_and_wait(self, endpoint: str, driver_id: str, timeout: float = DRIVER_STOP_TIMEOUT) -> str | None:
        """Ask the master to kill ``driver_id``; wait until it reports an end; return the last state."""
        answer = rest_request(endpoint, f"kill/{driver_id}", method="POST")
        self.log.info("Kill request for driver %s: %s", driver_id, answer.get("message") or answer)
        deadline = time.monotonic() + timeout
        state: str | None = None
        while time.monotonic() < deadline:
            try:
                state, _ = rest_driver_state(endpoint, driver_id)
            except RestError:
                state = None
            if state in TERMINAL_DRIVER_STATES:
                return state
            time.sleep(0.5)
        return state

    def kill(self) -> None:
        """Stop the run: spark-submit if it is still handing the driver over, then the driver itself.

        The master's REST kill, then a wait until the driver has ended (the worker stops its
        executors with it), so no driver outlives the task. Needs the REST endpoint.
        """
        self.adapter.stop_submit_process(KILL_GRACE_SECONDS)  # still handing the driver over
        driver_id, endpoint = self.adapter.driver_id, self.rest_endpoint
        if not driver_id or not endpoint:
            self.log.warning("on_kill: no driver id known yet; spark-submit was stopped before the master named one")
            return
        self.log.info("Killing driver %s on %s", driver_id, self.adapter.master)
        try:
            final = self.kill_and_wait(endpoint, driver_id)
        except RestError as exc:
            self.log.error(
                "Cannot reach the master to kill driver %s (%s): it may still be running; the "
                "next attempt of this run stops it",
                driver_id,
                exc,
            )
        else:
            self.log.info("Driver %s is %s", driver_id, final)
            if final in TERMINAL_DRIVER_STATES:
                self.forget_driver()


__all__ = [
    "ACTIVE_DRIVER_STATES",
    "MASTER_UNREACHABLE_TIMEOUT",
    "PYTHON_RUNNER_CLASS",
    "TERMINAL_DRIVER_STATES",
    "MasterUnreachable",
    "RestError",
    "RouteOwner",
    "StandaloneDriverRoute",
    "rest_driver_state",
    "rest_request",
]
