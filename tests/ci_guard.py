"""One guard, one meaning: in CI a missing tool fails the test with its install hint; elsewhere it skips.

CI is declared by ``.ci/run`` (``CI=true``) and by every hosted runner; any value but empty, ``0``,
``false`` or ``no`` means CI. Loaded as a pytest plugin by ``conftest.py``: in CI a test that skips for
any other reason (a bare ``pytest.skip``, an ``importorskip``) is reported as a failure too, so a
green CI run never hides a test that did not run.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest


def in_ci() -> bool:
    """Whether this run is CI (``CI`` set to anything but empty/0/false/no)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(available: bool, what: str, hint: str) -> None:
    """Go on when ``available``; else fail in CI (naming ``what`` and how to install it), skip elsewhere."""
    if available:
        return
    if in_ci():
        pytest.fail(f"{what} is missing on CI: {hint}", pytrace=False)
    pytest.skip(f"{what} is not available here ({hint})")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report = outcome.get_result()
    if in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped on CI, which must run every test: {reason}"
