"""The compatibility matrix: this package, built as a wheel, in fresh environments of other Pythons.

Two subcommands (``./dev test-matrix`` and ``./dev constraints`` call them):

``run [NAME…]``
    Builds the sdist and the wheel once (``python -m build``), checks them with ``twine check``, then
    for every environment of :data:`MATRIX` (or the ones named) steps 1–3, and only then, environment
    by environment, step 4 (installs are network bound, tests CPU bound: they do not share the
    machine). Every step's wall-clock time is printed at the end.

    1. creates a fresh virtual environment with that Python (``uv venv``);
    2. installs the environment's exact tested set, ``constraints/constraints-<python>.txt``,
       *without* this package — an Airflow deployment as a user already has it;
    3. installs the built wheel with the ``[spark,test]`` extras and **no** constraints, and fails
       unless every installed distribution kept its version (the oldest set holds Airflow 3.0.2,
       where a fresh resolution would pick the newest 3.1.x: a provider must not move it);
    4. runs, from outside the checkout (so ``airflow_dq_contracts`` comes from site-packages), the
       plain-Python tests, the sensor and operator ``dag.test()`` tests and one end-to-end DAG that
       runs the contract job with real ``spark-submit``.

``constraints [NAME…]``
    Re-resolves ``constraints/constraints-<python>.txt`` from pyproject's ranges (see
    :data:`ENVIRONMENTS` for how each set is chosen); ``pyspark-client`` is pinned to exactly the
    ``pyspark`` version (DESIGN §8). Run it when a range changes, then ``run`` to test the result.

Example::

    .venv/bin/python scripts/matrix.py run oldest      # one environment
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".matrix"
CONSTRAINTS = ROOT / "constraints"
DIST_NAME = "airflow-dq-contracts"
EXTRAS = ("spark", "test")

# What every environment runs. Plain Python: everything that starts neither Spark nor Airflow's
# dag.test() and is not marked slow (those start several Spark jobs of their own).
PLAIN_PYTHON = ["tests", "-m", "not spark and not airflow and not cluster and not slow"]
# Left to the main suite (which runs them on the development set): they test a neighbour, not how the
# package installs — the Compose stack (test_docker), Chromium rendering the report (test_report_browser),
# and Ivy's locking of concurrent jar resolutions (test_jars, several JVMs); the matrix's spark-submit
# DAG still resolves and loads the Delta jars of each environment's Spark for real. The source's shape
# (test_structure: import graph, file sizes, lint-imports) is a property of the checkout, not of the install.
PLAIN_IGNORED = (
    "tests/test_docker.py",
    "tests/test_report_browser.py",
    "tests/test_jars.py",
    "tests/test_structure.py",
)
# Then the sensors inside dag.test() (poke, reschedule, deferrable, soft fail, a located error), the
# example DAGs' parsing, `airflow providers list`, the operator's bad-contract path inside dag.test()
# (no Spark), and the one real spark-submit end-to-end DAG.
DAG_TESTS = [
    "tests/test_sensors.py::test_sensors_inside_dag_test",
    "tests/test_dags_examples.py::test_example_dags_parse_with_the_documented_shape",
    "tests/test_dags_examples.py::test_the_provider_shows_in_airflow_providers_list",
    "tests/test_dags_examples.py::test_a_bad_contract_fails_before_anything_is_submitted",
    # the one spark-submit end-to-end DAG: the whole example pipeline, one Spark job
    "tests/test_dags_examples.py::test_pass_publishes_everything",
    # the UI plugin in one real API server (on 3.0: no external views, the pages at their URL)
    "tests/test_ui_airflow30.py",
]


@dataclass(frozen=True)
class Environment:
    """One row of the matrix: a Python and how its constraints set is resolved."""

    name: str
    python: str
    resolution: str  # uv's --resolution: lowest-direct tests every lower bound at once
    pins: tuple[str, ...] = ()  # extra requirements fixing a known-good set
    extras: tuple[str, ...] = field(default=EXTRAS)
    ignore: tuple[str, ...] = ()  # test files whose subject cannot be installed on this Python

    @property
    def constraints(self) -> Path:
        return CONSTRAINTS / f"constraints-{self.python}.txt"


ENVIRONMENTS: dict[str, Environment] = {
    env.name: env
    for env in (
        # The oldest of every range at once: Airflow 3.0.2, the oldest Spark provider, PySpark 4.0
        # (so Delta's 4.0 artifact), deltalake, PyYAML, pendulum — on the oldest Python.
        # The OpenLineage provider's tested release needs Python 3.11+: not installable here.
        # Airflow's releases are installed with their own constraints, which pin FastAPI: 3.0.2's Task
        # SDK talks to its in-process execution API in a way FastAPI's later releases refuse (every
        # task start answered 422, so dag.test() and real workers never run a task). A deployment of
        # 3.0.2 has FastAPI 0.115.x, as 3.0.2's constraints pinned it; so does this set.
        Environment(
            "oldest", "3.10", "lowest-direct", pins=("fastapi==0.115.12",), ignore=("tests/test_openlineage.py",)
        ),
        # The development set of `./dev setup` (not run by the matrix: the full suite runs on it).
        Environment(
            "dev",
            "3.11",
            "highest",
            pins=(
                "apache-airflow==3.1.8",
                "apache-airflow-providers-apache-spark==6.3.4",
                "pyspark==4.1.1",
                "delta-spark==4.4.0",
                "deltalake==1.6.6",
            ),
            extras=(*EXTRAS, "release"),
        ),
        # The newest of every range on the newest Python.
        Environment("newest", "3.13", "highest"),
    )
}
MATRIX = ("oldest", "newest")


def log(message: str) -> None:
    print(f"[matrix] {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    log("$ " + " ".join(cmd))
    return subprocess.run(cmd, check=True, **kwargs)


def uv() -> str:
    found = shutil.which("uv", path=os.path.dirname(sys.executable)) or shutil.which("uv")
    if not found:
        raise SystemExit("uv is not installed (./dev setup installs it into .venv)")
    return found


def interpreter(version: str) -> str:
    """A Python ``version`` interpreter: on PATH, else a pyenv install (its shims need a selection)."""
    candidates = [shutil.which(f"python{version}") or ""]
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), reverse=True)
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    raise SystemExit(f"no Python {version} interpreter found (PATH or {pyenv_root}/versions)")


def project_requirements(extras: tuple[str, ...]) -> list[str]:
    """pyproject's dependencies plus the named extras' — the ranges a constraints set resolves."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return requirements


def pinned(text: str) -> dict[str, str]:
    """``{normalised name: version}`` of a ``name==version`` listing (constraints, pip freeze)."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        found = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s;#]+)", line.strip())
        if found:
            pins[re.sub(r"[-_.]+", "-", found.group(1)).lower()] = found.group(2)
    return pins


def compile_constraints(env: Environment) -> None:
    python = interpreter(env.python)
    requirements = project_requirements(env.extras) + list(env.pins)
    # pyspark-client must equal pyspark, and not every pyspark release has a pyspark-client twin
    # (4.1.4 has none): cap the client at pyspark's version, then settle both on the client's.
    for attempt in range(3):
        with tempfile.NamedTemporaryFile("w", suffix=".in", delete=False) as handle:
            handle.write("\n".join(requirements) + "\n")
        out = subprocess.run(
            [
                uv(),
                "pip",
                "compile",
                handle.name,
                "--python",
                python,
                "--resolution",
                env.resolution,
                "--no-header",
                "--no-annotate",
                "--quiet",
            ],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
        ).stdout
        os.unlink(handle.name)
        pins = pinned(out)
        client, spark = pins.get("pyspark-client"), pins.get("pyspark")
        if client is None or client == spark:
            break
        requirements += (
            [f"pyspark-client<={spark}"] if attempt == 0 else [f"pyspark=={client}", f"pyspark-client=={client}"]
        )
    else:
        raise SystemExit(f"{env.name}: could not pin pyspark-client to pyspark {spark}")
    header = (
        f"# The exact set tested on Python {env.python} ({env.name}; uv resolution {env.resolution}).\n"
        f'# Install: pip install "{DIST_NAME}[spark]" -c {env.constraints.relative_to(ROOT)}\n'
        "# Regenerate: ./dev constraints (then ./dev test-matrix). pyspark-client == pyspark (DESIGN §8).\n"
    )
    CONSTRAINTS.mkdir(exist_ok=True)
    env.constraints.write_text(header + out)
    log(f"wrote {env.constraints.relative_to(ROOT)} ({len(pins)} distributions)")


def build() -> Path:
    """sdist + wheel into .matrix/dist, checked by twine; returns the wheel."""
    dist = WORK / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    run(
        [sys.executable, "-m", "build", "--installer", "uv", "--outdir", str(dist), str(ROOT)],
        stdout=subprocess.DEVNULL,
    )
    artifacts = sorted(dist.iterdir())
    run([sys.executable, "-m", "twine", "check", "--strict", *map(str, artifacts)])
    [wheel] = [a for a in artifacts if a.suffix == ".whl"]
    return wheel


def freeze(python: Path) -> dict[str, str]:
    """``{normalised name: version}`` of every distribution installed for ``python``."""
    out = subprocess.run(
        [uv(), "pip", "list", "--format", "json", "--python", str(python)], check=True, capture_output=True, text=True
    ).stdout
    return {re.sub(r"[-_.]+", "-", d["name"]).lower(): d["version"] for d in json.loads(out)}


class Timings:
    """Wall-clock duration of every step, printed as one table at the end (and as each step ends)."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []

    def step(self, label: str):
        timings = self

        class _Step:
            def __enter__(self):
                self.started = time.monotonic()
                log(f"{label} …")

            def __exit__(self, *exc_info):
                seconds = time.monotonic() - self.started
                timings.steps.append((label + ("" if exc_info[0] is None else " (failed)"), seconds))
                log(f"{label}: {seconds:.0f} s")

        return _Step()

    def report(self) -> str:
        width = max(len(label) for label, _ in self.steps)
        lines = [f"  {label:<{width}}  {seconds:6.0f} s" for label, seconds in self.steps]
        lines.append(f"  {'total':<{width}}  {sum(s for _, s in self.steps):6.0f} s")
        return "\n".join(lines)


def create_environment(env: Environment, wheel: Path) -> Path:
    """Steps 1–3 of the module docstring for one environment; returns its interpreter."""
    venv = WORK / env.name
    shutil.rmtree(venv, ignore_errors=True)
    run([uv(), "venv", "--quiet", "--python", interpreter(env.python), str(venv)])
    python = venv / "bin" / "python"
    run([uv(), "pip", "install", "--quiet", "--python", str(python), "-r", str(env.constraints)])
    before = freeze(python)
    run([uv(), "pip", "install", "--quiet", "--python", str(python), f"{wheel}[{','.join(env.extras)}]"])
    after = freeze(python)
    ours = after.pop(DIST_NAME, None)
    changed = {
        name: (before.get(name), after.get(name))
        for name in before.keys() | after.keys()
        if before.get(name) != after.get(name)
    }
    if ours is None or changed:
        raise SystemExit(f"{env.name}: installing the wheel changed the environment: {changed or 'not installed'}")
    log(
        f"{env.name}: Python {env.python}, wheel {ours}; Airflow stayed {after['apache-airflow']}, provider "
        f"{after['apache-airflow-providers-apache-spark']}, pyspark {after.get('pyspark')} (client "
        f"{after.get('pyspark-client', 'none')}), delta-spark {after.get('delta-spark')}, deltalake "
        f"{after['deltalake']}, PyYAML {after['pyyaml']}, pendulum {after['pendulum']}"
    )
    return python


def test_environment(env: Environment, python: Path, timings: Timings) -> None:
    """Step 4 of the module docstring for one environment; raises on the first failure."""
    venv = python.parent.parent
    pytest_env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    for variable in ("SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONPATH"):
        pytest_env.pop(variable, None)
    with tempfile.TemporaryDirectory(prefix=f"dq-matrix-{env.name}-") as cwd:
        # From outside the checkout, so that nothing imports the source tree instead of the wheel;
        # test paths are absolute, pytest's settings come from pyproject.toml. -x: the first failure
        # is the answer, the rest of a broken environment's run would only spend CI's budget.
        base = [
            str(python),
            "-m",
            "pytest",
            "-c",
            str(ROOT / "pyproject.toml"),
            "--rootdir",
            str(ROOT),
            "-p",
            "no:cacheprovider",
            "-q",
            "-x",
        ]
        absolute = lambda args: [str(ROOT / a) if a.startswith("tests") else a for a in args]  # noqa: E731
        where = subprocess.run(
            [str(python), "-c", "import airflow_dq_contracts as p; print(p.__file__)"],
            cwd=cwd,
            env=pytest_env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        if "site-packages" not in Path(where).parts:
            raise SystemExit(f"{env.name}: airflow_dq_contracts imports from {where}, not from the wheel")
        ignored = [f"--ignore={ROOT / path}" for path in (*PLAIN_IGNORED, *env.ignore)]
        for label, args in (("plain Python", PLAIN_PYTHON + ignored), ("dag.test() and spark-submit", DAG_TESTS)):
            with timings.step(f"{env.name}: {label} tests"):
                result = subprocess.run(base + absolute(args), cwd=cwd, env=pytest_env)
            # pytest exits 5 when it collected nothing: never a silent pass.
            if result.returncode != 0:
                raise SystemExit(f"{env.name}: {label} tests failed (pytest exit {result.returncode})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "constraints"))
    parser.add_argument(
        "names", nargs="*", help=f"environments (default: run {' '.join(MATRIX)}; constraints {' '.join(ENVIRONMENTS)})"
    )
    args = parser.parse_args(argv)
    names = args.names or (list(MATRIX) if args.command == "run" else list(ENVIRONMENTS))
    unknown = [n for n in names if n not in ENVIRONMENTS]
    if unknown:
        parser.error(f"unknown environment(s) {unknown}; known: {', '.join(ENVIRONMENTS)}")
    if args.command == "constraints":
        for name in names:
            compile_constraints(ENVIRONMENTS[name])
        return 0
    timings = Timings()
    try:
        with timings.step("build sdist + wheel, twine check"):
            wheel = build()
        # Every environment first, then every test step: installing is network and disk bound, the
        # tests are CPU bound, and on a 2-core machine the tests must not share it with an install.
        pythons = {}
        for name in names:
            with timings.step(f"{name}: environment (venv, constraints, wheel)"):
                pythons[name] = create_environment(ENVIRONMENTS[name], wheel)
        for name in names:
            test_environment(ENVIRONMENTS[name], pythons[name], timings)
    finally:
        if timings.steps:
            log("step timings:\n" + timings.report())
    log(f"matrix {' '.join(names)} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
