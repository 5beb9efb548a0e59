"""In CI a test never skips: a missing tool fails with its install hint, a bare skip fails too.

Runs pytest on a small throw-away test file in a subprocess, with and without ``CI``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SAMPLE = """
import pytest
from ci_guard import require

def test_needs_a_tool():
    require(False, "the frobnicator", "apt-get install frobnicator")

def test_plain_skip():
    pytest.skip("no reason worth hiding")

def test_runs():
    assert 1 + 1 == 2
"""


def _run(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "ci_guard", "-p", "no:cacheprovider", "-rA", "-q", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_in_ci_a_missing_tool_and_a_skip_fail(tmp_path: Path, ci: str) -> None:
    done = _run(tmp_path, ci)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 1 passed" in done.stdout, done.stdout
    assert "the frobnicator is missing on CI: apt-get install frobnicator" in done.stdout
    assert "skipped on CI, which must run every test: Skipped: no reason worth hiding" in done.stdout


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_outside_ci_they_skip_with_the_hint(tmp_path: Path, ci: str | None) -> None:
    done = _run(tmp_path, ci)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 2 skipped" in done.stdout, done.stdout
    assert "the frobnicator is not available here (apt-get install frobnicator)" in done.stdout


def test_ci_run_declares_ci() -> None:
    lines = (TESTS.parent / ".ci" / "run").read_text().splitlines()
    assert "export CI=true" in lines
    assert lines[-1] == "exec ./dev test"
