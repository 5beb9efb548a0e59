"""Real Airflow for tests: a throw-away ``AIRFLOW_HOME`` on SQLite, DAG files in its dags folder.

Import this module BEFORE anything imports ``airflow`` (Airflow reads ``AIRFLOW_HOME`` and the
database URL once, when it is first imported)::

    import airflow_fixtures  # noqa: F401  (first line of the test module's imports)
    from airflow_fixtures import airflow_db, install_dag, run_dag, xcom_value

Importing sets, for this process and its children: ``AIRFLOW_HOME`` (a temp folder, removed at
exit), ``AIRFLOW__DATABASE__SQL_ALCHEMY_CONN`` (SQLite in it), ``AIRFLOW__CORE__DAGS_FOLDER``
(``<home>/dags``), ``AIRFLOW__CORE__LOAD_EXAMPLES=False``, and a ``spark_default`` connection
for ``local[2]`` (JSON form: ``local[*]`` cannot be written as a URI) unless one is set. If
``airflow`` was already imported with other settings, importing this module raises, naming the fix:
load it first, e.g. ``pytest_plugins = ["airflow_fixtures"]`` in ``conftest.py``.

Then:

* ``airflow_db`` (session fixture): the metadata database, migrated once per test session.
* :func:`install_dag` writes DAG source into the dags folder and imports it from there, so the
  DAG's ``fileloc`` is inside the configured folder and ``dag.test()`` can serialise it.
* :func:`run_dag` runs ``dag.test()`` and returns ``{task_id: state}`` plus the DagRun;
  :func:`xcom_value` reads a task's return value back from the database.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

_HOME_ENV = "DQ_TESTS_AIRFLOW_HOME"


def _prepare_environment() -> Path:
    existing = os.environ.get(_HOME_ENV)
    if existing and os.environ.get("AIRFLOW_HOME") == existing:
        return Path(existing)  # already prepared (re-import, or a child process)
    if "airflow" in sys.modules:
        raise RuntimeError(
            "airflow_fixtures must be imported before anything imports airflow (Airflow reads "
            "AIRFLOW_HOME and the database URL at import). Import it first in the test module, "
            "or add `pytest_plugins = ['airflow_fixtures']` to tests/conftest.py."
        )
    home = Path(tempfile.mkdtemp(prefix="dq-airflow-home-"))
    atexit.register(shutil.rmtree, home, True)
    (home / "dags").mkdir()
    os.environ[_HOME_ENV] = str(home)
    os.environ["AIRFLOW_HOME"] = str(home)
    os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{home / 'airflow.db'}"
    os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(home / "dags")
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] = "False"
    os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "INFO")
    os.environ.setdefault("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    return home


AIRFLOW_HOME = _prepare_environment()
DAGS_FOLDER = AIRFLOW_HOME / "dags"


def _quiet_py4j_at_exit() -> None:
    # Airflow's logging setup leaves handlers on pytest's captured (by then closed) streams; py4j
    # logs "Closing down clientserver connection" while the interpreter shuts down, which would
    # print a "--- Logging error ---" block after the test summary when Spark ran in the session.
    import logging

    for name in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(name).disabled = True  # `disabled` is per logger, not inherited


atexit.register(_quiet_py4j_at_exit)


_DB_READY = False


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """The SQLite metadata database of this test session, created and migrated once.

    Test modules import this fixture by name, which registers one copy per module; the flag keeps
    a second module from wiping the database the first one filled.
    """
    global _DB_READY
    if not _DB_READY:
        from airflow.utils import db

        db.resetdb(skip_init=False)
        _DB_READY = True
    return AIRFLOW_HOME


def use_cached_delta_jars(patch: Any, root: Path) -> None:
    """Point ``DQ_CONTRACTS_DELTA_JARS`` at Delta's jars as this machine resolved them once (``jars.py``).

    ``patch`` is a ``pytest.MonkeyPatch``; ``root`` is kept for callers (nothing is written there).
    ``./dev setup`` prefetched the folder; otherwise the first caller resolves it under the lock.
    """
    from airflow_dq_contracts.runtime import jars

    patch.setenv("DQ_CONTRACTS_DELTA_JARS", str(Path(jars.delta_jars()[0]).parent))


def install_example_dags(patch: Any) -> None:
    """Copy ``dags_examples/`` (DAG files, ``orders_data.py``, contracts) into the dags folder and put it on
    ``sys.path`` as the dag processor does (the DAG files import ``orders_data``); ``patch`` undoes the path."""
    examples = Path(__file__).resolve().parent.parent / "dags_examples"
    for source in examples.glob("*.py"):
        shutil.copy(source, DAGS_FOLDER / source.name)
    shutil.copytree(examples / "contracts", DAGS_FOLDER / "contracts", dirs_exist_ok=True)
    patch.syspath_prepend(str(DAGS_FOLDER))


def install_dag(source: str, name: str | None = None) -> Any:
    """Write ``source`` (a DAG module) into the dags folder, import it, return its only DAG.

    The module gets a unique name, so a test can install variants of the same file.
    """
    from airflow.sdk import DAG

    module_name = name or f"dq_test_dag_{uuid.uuid4().hex[:10]}"
    path = DAGS_FOLDER / f"{module_name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    dags = [value for value in vars(module).values() if isinstance(value, DAG)]
    if len(dags) != 1:
        raise AssertionError(f"{path} defines {len(dags)} DAGs, expected 1")
    return dags[0]


def run_dag(dag: Any, **kwargs: Any) -> tuple[dict[str, str], Any]:
    """``dag.test(**kwargs)``; returns ({task_id: final state}, the DagRun)."""
    from airflow.utils.session import create_session

    dag_run = dag.test(**kwargs)
    with create_session() as session:
        from airflow.models.dagrun import DagRun

        fresh = session.get(DagRun, dag_run.id)
        states = {ti.task_id: str(ti.state) for ti in fresh.get_task_instances(session=session)}
    return states, dag_run


def xcom_value(dag_run: Any, task_id: str, key: str = "return_value") -> Any:
    """The XCom ``key`` pushed by ``task_id`` in ``dag_run`` (deserialised), or None."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        row = session.scalars(
            select(XComModel).where(
                XComModel.dag_id == dag_run.dag_id,
                XComModel.run_id == dag_run.run_id,
                XComModel.task_id == task_id,
                XComModel.key == key,
            )
        ).first()
        if row is None:
            return None
        return XComModel.deserialize_value(row)
