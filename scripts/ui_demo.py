"""Tables and an Airflow API server for the UI plugin: used by ``tests/test_ui.py`` and ``benchmarks/ui_pages.py``.

* :func:`write_ui_tables` — the report demo's ``orders`` contract (``report_demo.write_demo_tables``) plus
  contracts written through the results port (``ResultsStore.write_run`` / ``upsert_registry``): a second
  version of ``orders`` (the example contracts' texts, so the version diff has real changes), ``payments``
  from a DAG a test user is denied, ``customers`` run by both DAGs, and a contract whose name, owner and
  check names are hostile HTML.
* :func:`write_bench_tables` — ``contracts`` × ``runs`` runs in one write (the benchmark's 1,000 × 100).
* :func:`install_provider` — the provider installed from this checkout into a folder (a real install: its
  ``airflow.plugins`` entry point is what the API server loads).
* :func:`api_server` — ``airflow api-server`` on 127.0.0.1 and a free port, with a fresh SQLite metadata
  database, SimpleAuthManager users (or the given auth manager), stopped on exit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import report_demo  # noqa: E402

sys.path.remove(str(ROOT / "scripts"))

UTC = dt.timezone.utc
ALLOWED_DAG = "dq_orders_pipeline"
DENIED_DAG = "payments_restricted"
HOSTILE_NAME = "<script>window.__pwned=1</script>"
HOSTILE_OWNER = '"\'><img src=x onerror="window.__pwned=2">'
PASSWORDS = {"admin": "admin-pw", "restricted": "restricted-pw", "nologs": "nologs-pw"}
USERS = "admin:admin,restricted:viewer,nologs:viewer"


@dataclasses.dataclass
class UITables:
    """Where the tables are, and the run ids a test opens."""

    results: str
    registry: str
    orders_last_run: str
    payments_runs: list[str]
    hostile_runs: list[str]


def records(
    contract: str,
    version: str,
    run_id: str,
    at: dt.datetime,
    dag_id: str,
    checks: list[tuple[str, str, str, str, int | None]],
    row_count: int,
) -> list[Any]:
    from airflow_dq_contracts.results import CheckResult

    return [
        CheckResult(
            run_id=run_id,
            contract_name=contract,
            contract_version=version,
            dataset=f"silver.{contract[:40]}",
            check_id=check_id,
            check_name=f"{check_id} check",
            check_type="not_null" if failed is not None else "row_count",
            column=None,
            severity=severity,
            action=action,
            validator="max 0",
            metric_value=float(failed or 0),
            status=status,
            passed=status == "passed",
            failed_rows=failed,
            message="" if status == "passed" else f"{check_id} failed",
            row_count=row_count,
            evaluated_at=at,
            dag_id=dag_id,
            task_id=f"check_{contract[:20]}",
            airflow_run_id=f"scheduled__{at.isoformat()}",
            reference_time=at,
        )
        for check_id, severity, action, status, failed in checks
    ]


def _registry(
    contract: str, version: str, text: str, at: dt.datetime, run_id: str, decision: str, **extra: Any
) -> dict:
    from airflow_dq_contracts.store.results import contract_text_hash

    row = {
        "contract_name": contract,
        "contract_version": version,
        "owner": extra.pop("owner", f"{contract[:20]}-team@example.com"),
        "domain": "commerce",
        "description": extra.pop("description", f"The {contract} dataset"),
        "consumers": ["analytics"],
        "tags": ["demo"],
        "dataset": f"silver.{contract[:40]}",
        "sla_freshness_hours": 24.0,
        "sla_max_latency_minutes": None,
        "sla_availability_target": None,
        "sla_delivery_deadline_utc": None,
        "sla_support_contact": None,
        "sla_escalation_policy": None,
        "contract_hash": contract_text_hash(text),
        "contract_text": text,
        "first_run_at": at,
        "last_run_at": at,
        "last_run_id": run_id,
        "last_decision": decision,
        "results_table": None,
        "quarantine_table": extra.pop("quarantine_table", None),
        "valid_table": None,
    }
    row.update(extra)
    return row


#: A value in the quarantined rows of ``payments`` under a column Airflow's masker hides (``password``).
SECRET_VALUE = "hunter2-not-for-pages"


def _payments_quarantine(path: Path, run_id: str, at: dt.datetime) -> str:
    """The last payments run's quarantined rows (7), with a ``password`` column the pages must mask."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from airflow_dq_contracts.results import VIOLATION_FIELDS

    violation = pa.struct([(field, pa.string()) for field in VIOLATION_FIELDS])
    broken = [
        {
            "check_id": "amount/positive",
            "check_name": "amount/positive check",
            "check_type": "not_null",
            "severity": "P0",
            "action": "quarantine",
        }
    ]
    rows = [
        {
            "payment_id": n,
            "amount": -float(n),
            "password": SECRET_VALUE,
            "_dq_run_id": run_id,
            "_dq_violations": broken,
            "_dq_quarantined_at": at,
        }
        for n in range(7)
    ]
    schema = pa.schema(
        [
            ("payment_id", pa.int64()),
            ("amount", pa.float64()),
            ("password", pa.string()),
            ("_dq_run_id", pa.string()),
            ("_dq_violations", pa.list_(violation)),
            ("_dq_quarantined_at", pa.timestamp("us", tz="UTC")),
        ]
    )
    write_deltalake(str(path), pa.Table.from_pylist(rows, schema=schema), mode="overwrite")
    return str(path)


def write_ui_tables(folder: str | os.PathLike[str]) -> UITables:
    """The UI test's tables under ``folder`` (see the module docstring)."""
    from airflow_dq_contracts.results import make_run_id
    from airflow_dq_contracts.store.results import open_results_store

    demo = report_demo.write_demo_tables(folder, runs=20)
    store = open_results_store(demo.results)
    examples = ROOT / "dags_examples" / "contracts"
    start = dt.datetime(2024, 6, 2, tzinfo=UTC)

    # orders: the demo's 20 runs of 2.1.0, then 3 runs of 2.2.0; the registry holds both texts.
    v1, v2 = (examples / "orders.yaml").read_text(), (examples / "orders_v2.yaml").read_text()
    store.upsert_registry(
        _registry(
            "orders",
            "2.1.0",
            v1,
            start - dt.timedelta(days=19),
            demo.last_run_id,
            "gate",
            owner="checkout-team@example.com",
            quarantine_table=demo.quarantine,
            last_run_at=start - dt.timedelta(days=1),  # the demo's last run: this row replaces the demo's text
        )
    )
    last = ""
    for day in range(3):
        at = start + dt.timedelta(days=day)
        last = make_run_id("orders", "2.2.0", at.isoformat())
        failing = day == 1
        checks = [
            ("_table_/row_count", "P1", "gate", "passed", None),
            ("order_id/unique", "P0", "gate", "passed", 0),
            ("amount/in_range", "P1", "quarantine", "failed" if failing else "passed", 4 if failing else 0),
            ("email/format", "P2", "flag", "failed", 3),
        ]
        store.write_run(records("orders", "2.2.0", last, at, ALLOWED_DAG, checks, 1000 + day), last)
    store.upsert_registry(
        _registry(
            "orders",
            "2.2.0",
            v2,
            start,
            last,
            "pass",
            owner="checkout-team@example.com",
            first_run_at=start,
            last_run_at=start + dt.timedelta(days=2),
        )
    )

    # payments: only a DAG the "restricted" user may not read.
    payments = []
    for day in range(4):
        at = start + dt.timedelta(days=day, hours=1)
        run_id = make_run_id("payments", at.isoformat())
        status = "failed" if day == 3 else "passed"
        checks = [
            ("amount/positive", "P0", "quarantine", status, 7 if day == 3 else 0),
            ("_table_/rows", "P2", "gate", "passed", None),
        ]
        store.write_run(records("payments", "1.0.0", run_id, at, DENIED_DAG, checks, 500), run_id)
        payments.append(run_id)
    quarantine = _payments_quarantine(Path(folder) / "dq_quarantine" / "payments", payments[-1], at)
    text = "name: payments\nversion: 1.0.0\n"
    store.upsert_registry(
        _registry("payments", "1.0.0", text, at, payments[-1], "quarantine", quarantine_table=quarantine)
    )

    # customers: run by both DAGs; the denied DAG's run is the newest and gates.
    for day, dag in enumerate([ALLOWED_DAG, DENIED_DAG, ALLOWED_DAG, DENIED_DAG]):
        at = start + dt.timedelta(days=day, hours=2)
        run_id = make_run_id("customers", dag, at.isoformat())
        status = "failed" if dag == DENIED_DAG else "passed"
        checks = [
            ("customer_id/unique", "P0", "gate", status, 2 if status == "failed" else 0),
            ("segment/valid", "P3", "flag", "passed", 0),
        ]
        store.write_run(records("customers", "1.4.0", run_id, at, dag, checks, 300 + day), run_id)
    store.upsert_registry(
        _registry("customers", "1.4.0", (examples / "customers.yaml").read_text(), at, run_id, "gate")
    )

    # A hostile contract: name, owner, description and check ids are HTML meant to run.
    hostile = []
    for day in range(2):
        at = start + dt.timedelta(days=day, hours=3)
        run_id = make_run_id(HOSTILE_NAME, at.isoformat())
        checks = [
            (f"{HOSTILE_NAME}/x", "P1", "gate", "failed" if day else "passed", 1 if day else 0),
            (f"{HOSTILE_OWNER}/y", "P2", "flag", "passed", 0),
        ]
        store.write_run(records(HOSTILE_NAME, "0.1.0", run_id, at, ALLOWED_DAG, checks, 10), run_id)
        hostile.append(run_id)
    store.upsert_registry(
        _registry(
            HOSTILE_NAME,
            "0.1.0",
            f"name: '{HOSTILE_NAME}'\n",
            at,
            hostile[-1],
            "gate",
            owner=HOSTILE_OWNER,
            description=HOSTILE_NAME,
        )
    )
    return UITables(demo.results, demo.registry, last, payments, hostile)


def write_bench_tables(
    folder: str | os.PathLike[str], *, contracts: int = 1000, runs: int = 100, checks: int = 5
) -> str:
    """``contracts`` × ``runs`` runs of ``checks`` checks in one Delta write (partitioned by contract); the results path."""
    import random

    import pyarrow as pa
    from deltalake import write_deltalake

    from airflow_dq_contracts.results import RESULT_COLUMNS
    from airflow_dq_contracts.store.results.registry import REGISTRY_COLUMNS

    rng = random.Random(3)
    end = dt.datetime(2024, 6, 1, tzinfo=UTC)
    columns: dict[str, list[Any]] = {name: [] for name, _ in RESULT_COLUMNS}
    severities, actions = ["P0", "P1", "P2", "P3", "P1"], ["gate", "quarantine", "flag", "flag", "gate"]
    for number in range(contracts):
        name = f"contract_{number:04d}"
        for run in range(runs):
            at = end - dt.timedelta(hours=runs - run)
            run_id = f"dq-{number:04d}-{run:04d}"
            for check in range(checks):
                failed = rng.random() < 0.05
                values = {
                    "run_id": run_id,
                    "contract_name": name,
                    "contract_version": "1.0.0",
                    "dataset": f"silver.t{number}",
                    "check_id": f"c{check}/check",
                    "check_name": f"Check {check}",
                    "check_type": "not_null",
                    "column": f"c{check}",
                    "severity": severities[check % 5],
                    "action": actions[check % 5],
                    "validator": "max 0",
                    "metric_value": float(failed),
                    "status": "failed" if failed else "passed",
                    "passed": not failed,
                    "failed_rows": 3 if failed else 0,
                    "message": "",
                    "row_count": 1000,
                    "filter": None,
                    "evaluated_at": at,
                    "dag_id": f"dag_{number % 20}",
                    "task_id": "check",
                    "airflow_run_id": f"scheduled__{at.isoformat()}",
                    "tags": None,
                    "reference_time": at,
                    "expected_min": None,
                    "expected_max": None,
                    "evaluated_from": "scan",
                }
                for key in columns:  # a column not set here (e.g. source_range) is NULL
                    columns[key].append(values.get(key))
    results = Path(folder) / "dq_results"
    table = pa.table(columns, schema=report_demo.arrow_schema(RESULT_COLUMNS))
    write_deltalake(str(results), table, partition_by=["contract_name"], mode="overwrite")
    registry = [
        {name: None for name, _ in REGISTRY_COLUMNS}
        | {
            "contract_name": f"contract_{n:04d}",
            "contract_version": "1.0.0",
            "owner": f"team{n % 7}@example.com",
            "dataset": f"silver.t{n}",
            "contract_text": "name: x\n",
            "consumers": [],
            "tags": [],
        }
        for n in range(contracts)
    ]
    write_deltalake(
        str(Path(folder) / "dq_contracts"),
        pa.Table.from_pylist(registry, schema=report_demo.arrow_schema(REGISTRY_COLUMNS)),
    )
    return str(results)


def install_provider(target: str | os.PathLike[str], *, without_plugin: bool = False) -> Path:
    """Install this checkout (no dependencies) into ``target``; ``without_plugin``: its ``airflow.plugins`` entry
    point removed (the benchmark's baseline). Returns ``target``."""
    target = Path(target)
    source = ROOT
    if without_plugin:
        source = target.parent / f"{target.name}-source"
        shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".work", ".venv", "tests", "__pycache__"))
        text = (source / "pyproject.toml").read_text()
        start = text.index('[project.entry-points."airflow.plugins"]')
        end = text.index("\n\n", start)
        (source / "pyproject.toml").write_text(text[:start] + text[end + 2 :])
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    commands = [
        [
            uv,
            "pip",
            "install",
            "--offline",
            "--no-deps",
            "--reinstall",
            "--no-cache",
            "--python",
            sys.executable,
            "--target",
            str(target),
            str(source),
        ],
        [
            uv,
            "pip",
            "install",
            "--offline",
            "--no-deps",
            "--reinstall",
            "--python",
            sys.executable,
            "--target",
            str(target),
            str(source),
        ],
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
    ]
    errors = []
    for command in commands:
        if not Path(command[0]).exists():
            continue
        done = subprocess.run(command, capture_output=True, text=True, cwd=str(target.parent))
        if done.returncode == 0:
            return target
        errors.append(f"{' '.join(command)}:\n{done.stderr[-2000:]}")
    raise RuntimeError("the provider could not be installed:\n" + "\n".join(errors))


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclasses.dataclass
class Server:
    """A running API server: its URL, process, log file and environment."""

    url: str
    process: subprocess.Popen
    log: Path
    env: dict[str, str]

    def token(self, user: str) -> str:
        """A JWT for ``user`` from SimpleAuthManager's login endpoint (``POST /auth/token``)."""
        body = json.dumps({"username": user, "password": PASSWORDS[user]}).encode()
        request = urllib.request.Request(
            f"{self.url}/auth/token", data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return str(json.loads(response.read())["access_token"])

    def rss_kib(self) -> int:
        """Resident memory of the server's process tree (the API server and its worker), in KiB."""
        total = 0
        pids = [self.process.pid]
        with contextlib.suppress(OSError, ValueError):
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
            pids += [int(p) for p in children]
        for pid in pids:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        return total


def _airflow(env: Mapping[str, str], *args: str, cwd: Path) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), *args],
        env=dict(env),
        cwd=str(cwd),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"airflow {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


@contextlib.contextmanager
def api_server(
    home: str | os.PathLike[str],
    *,
    pythonpath: list[str],
    settings: Mapping[str, str],
    auth_manager: str | None = None,
    timeout: float = 240.0,
) -> Iterator[Server]:
    """``airflow api-server`` on 127.0.0.1 (a fresh ``home``: SQLite database migrated, SimpleAuthManager users
    :data:`USERS` with :data:`PASSWORDS`); ``settings`` are extra environment (``AIRFLOW__DQ_CONTRACTS__…``).
    The process group is stopped on exit, whatever happened."""
    home = Path(home)
    (home / "dags").mkdir(parents=True, exist_ok=True)
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps(PASSWORDS))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "DQ_TESTS_"))}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(pythonpath),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": USERS,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{port}",
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(24),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
            "AIRFLOW__OPENLINEAGE__DISABLED": "True",
            **dict(settings),
        }
    )
    if auth_manager:
        env["AIRFLOW__CORE__AUTH_MANAGER"] = auth_manager
    _airflow(env, "db", "migrate", cwd=home)
    log = home / "api-server.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "airflow"), "api-server", "--port", str(port), "--host", "127.0.0.1"],
            env=env,
            cwd=str(home),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the API server exited ({process.returncode}):\n{log.read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the API server did not answer in {timeout:.0f} s:\n{log.read_text()[-4000:]}")
            time.sleep(1)
        yield Server(url, process, log, env)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
