"""``./dev``: each command installs what it needs and no more (README, "What each command installs").

The script is sourced by bash (sourced, it only defines its functions) and its commands run with the
installing steps replaced by lines that name them — the steps themselves (``uv pip install``, Maven,
apt-get, the JVM archive's build) are what the rest of the suite and a cold ``./dev demo`` exercise.
The order matters as much as the set: the demo's result comes before the JVM archive is built.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEV = ROOT / "dev"


def test_dev_is_valid_bash():
    run = subprocess.run(["bash", "-n", str(DEV)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def _tool(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)


def _run(tmp_path: Path, *args: str, archive_built: bool = False, env: dict[str, str] | None = None) -> list[str]:
    """``./dev ARGS`` with each installing step printing its name; returns the lines, in order."""
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True, exist_ok=True)
    trace = tmp_path / "trace"
    # The programs the commands start: each says what it was asked.
    _tool(
        venv_bin / "python",
        f'echo "python ${{*#{ROOT}/}}" >> "{trace}"\n'
        f'echo "PYTHONDONTWRITEBYTECODE=${{PYTHONDONTWRITEBYTECODE-unset}}" >> "{tmp_path / "bytecode"}"\n',
    )
    _tool(
        venv_bin / "dq-contracts",
        f'echo "dq-contracts $*" >> "{trace}"\n'
        f'[ "$*" = "jvm-archive path" ] && exit {0 if archive_built else 1}\nexit 0\n',
    )
    script = f"""
source "{DEV}"
VENV="{tmp_path / "venv"}"
WORK="{tmp_path / "work"}"
packages() {{ echo "packages $1" >> "{trace}"; }}
ensure_compose() {{ echo "docker-compose" >> "{trace}"; }}
ensure_chromium() {{ echo "chromium" >> "{trace}"; }}
ensure_postgres() {{ echo "postgresql" >> "{trace}"; }}
lint() {{ echo "lint" >> "{trace}"; }}
main "$@"
"""
    run = subprocess.run(
        ["bash", "-c", script, "dev", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DQ_MATRIX": "", "DQ_CONTRACTS_JVM_ARCHIVE": "", **(env or {})},
    )
    assert run.returncode == 0, run.stderr
    # The background build (demo) writes its line a moment later.
    deadline = time.monotonic() + 10
    lines = trace.read_text().splitlines()
    while args[0] == "demo" and not archive_built and not (env or {}).get("DQ_CONTRACTS_JVM_ARCHIVE"):
        if "dq-contracts jvm-archive build" in lines or time.monotonic() > deadline:
            break
        time.sleep(0.1)
        lines = trace.read_text().splitlines()
    return lines


def test_demo_installs_the_demo_set_and_builds_the_archive_after_its_result(tmp_path):
    lines = _run(tmp_path, "demo", "--outcome", "pass")
    assert lines == [
        "packages demo",
        "dq-contracts jars fetch",
        "python scripts/demo.py --outcome pass",
        "dq-contracts jvm-archive path",
        "dq-contracts jvm-archive build",
    ]


def test_demo_runs_with_bytecode_writing_on(tmp_path):
    # The demo's sets are installed uncompiled: its processes cache the bytecode of what they import.
    _run(tmp_path, "demo", env={"PYTHONDONTWRITEBYTECODE": "1", "DQ_CONTRACTS_JVM_ARCHIVE": "off"})
    assert (tmp_path / "bytecode").read_text().splitlines() == ["PYTHONDONTWRITEBYTECODE=unset"]


def test_demo_with_the_archive_built_builds_nothing(tmp_path):
    lines = _run(tmp_path, "demo", archive_built=True)
    assert lines == [
        "packages demo",
        "dq-contracts jars fetch",
        "python scripts/demo.py",
        "dq-contracts jvm-archive path",
    ]


def test_demo_with_the_archive_off_does_not_build_it(tmp_path):
    lines = _run(tmp_path, "demo", env={"DQ_CONTRACTS_JVM_ARCHIVE": "off"})
    assert lines == ["packages demo", "dq-contracts jars fetch", "python scripts/demo.py"]


@pytest.mark.parametrize("storage", [["--storage", "s3"], ["--storage=s3"]])
def test_demo_on_s3_adds_the_s3_server_and_the_s3a_jars(tmp_path, storage):
    lines = _run(tmp_path, "demo", *storage, archive_built=True)
    assert lines[:3] == [
        "packages demo-s3",
        "dq-contracts jars fetch --with s3",
        f"python scripts/demo.py {' '.join(storage)}",
    ]


def test_test_sets_up_everything_before_the_checks_and_the_suite(tmp_path):
    lines = _run(tmp_path, "test", "-k", "nothing")
    assert lines == [
        "packages test",
        "docker-compose",
        "dq-contracts jars fetch --with s3 --with kafka",
        "python tests/kafka_fixtures.py fetch",
        "dq-contracts jvm-archive build",
        "chromium",
        "postgresql",
        "lint",
        "python -m pytest -k nothing",
    ]


def test_lint_installs_the_packages_only(tmp_path):
    assert _run(tmp_path, "lint") == ["packages test", "lint"]


def _needs_install(stamp: str, now: str, wanted: str) -> bool:
    script = f'source "{DEV}"; if needs_install "$1" "$2" "$3"; then echo yes; else echo no; fi'
    run = subprocess.run(["bash", "-c", script, "dev", stamp, now, wanted], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip() == "yes"


@pytest.mark.parametrize(
    ("stamp", "wanted", "expected"),
    [
        ("", "demo", True),  # a fresh environment
        ("h1", "demo", True),  # the stamp of an earlier ./dev, which named no set
        ("h1 demo", "demo", False),
        ("h1 demo", "demo-s3", True),
        ("h1 demo", "test", True),  # the demo's set installed, the test set wanted: the rest is installed
        ("h1 demo-s3", "test", True),
        ("h1 test", "demo", False),  # the test set serves the demo as it is
        ("h1 test", "demo-s3", False),
        ("h1 test", "test", False),
        ("h0 test", "demo", True),  # pyproject.toml or the constraints changed
    ],
)
def test_the_stamp_installs_what_is_missing(stamp, wanted, expected):
    assert _needs_install(stamp, "h1", wanted) is expected


def _install(tmp_path: Path, wanted: str, cache_has_it: bool) -> list[str]:
    """``packages WANTED`` in a fresh environment whose python and uv say what they were asked; the fake uv
    refuses ``--offline`` unless ``cache_has_it``."""
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    trace = tmp_path / "trace"
    _tool(
        venv_bin / "python",
        f'case "$*" in -c*sysconfig*) echo "{tmp_path}/site" ;; -c*) echo 3.11 ;;\n'
        f'  *) r="{ROOT}"; echo "python ${{*//"$r"/ROOT}}" >> "{trace}" ;; esac\n',
    )
    offline_rc = 0 if cache_has_it else 1
    _tool(
        venv_bin / "uv",
        f'r="{ROOT}"; echo "uv ${{*//"$r"/ROOT}}" >> "{trace}"\n'
        f'case " $* " in *" --offline "*) exit {offline_rc} ;; esac\nexit 0\n',
    )
    script = f'source "{DEV}"; VENV="{tmp_path / "venv"}"; packages "$1"'
    run = subprocess.run(["bash", "-c", script, "dev", wanted], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return trace.read_text().splitlines()


UV = "uv pip install --quiet --python {venv}/bin/python -c ROOT/constraints/constraints-3.11.txt"


@pytest.mark.parametrize("cache_has_it", [True, False])
def test_the_demo_set_installs_from_uvs_cache_first_and_compiles_only_this_package(tmp_path, cache_has_it):
    lines = _install(tmp_path, "demo", cache_has_it)
    uv = UV.format(venv=tmp_path / "venv")
    online = [] if cache_has_it else [f"{uv} -e ROOT[spark]"]
    assert lines == [
        "python -m pip install --quiet --disable-pip-version-check uv>=0.4",
        f"{uv} --offline -e ROOT[spark]",
        *online,
        "python -m compileall -q ROOT/airflow_dq_contracts",
    ]


def test_the_test_set_is_installed_compiled(tmp_path):
    lines = _install(tmp_path, "test", cache_has_it=False)
    uv = UV.format(venv=tmp_path / "venv") + " --compile-bytecode"
    assert lines == [
        "python -m pip install --quiet --disable-pip-version-check uv>=0.4",
        f"{uv} --offline -e ROOT[spark,test,release,lint]",
        f"{uv} -e ROOT[spark,test,release,lint]",
        f"python -m compileall -q -j0 {tmp_path}/site",
        "python -m compileall -q ROOT/airflow_dq_contracts",
    ]
