"""The examples in the modules' docstrings (``>>>``) run, in CI too: a docstring example that no longer
holds fails here instead of misleading a reader.

Every module of the package is imported and its doctests run with :func:`doctest.testmod` (inside the
test session, so the Airflow modules see the throw-away ``AIRFLOW_HOME`` of ``airflow_fixtures``).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import airflow_dq_contracts

MODULES = sorted(info.name for info in pkgutil.walk_packages(airflow_dq_contracts.__path__, "airflow_dq_contracts."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert outcome.failed == 0, (
        f"{outcome.failed} of {outcome.attempted} docstring examples of {name} failed (see above)"
    )


def test_the_plain_python_modules_have_examples_that_run() -> None:
    attempted = 0
    for name in (
        "airflow_dq_contracts.results",
        "airflow_dq_contracts.contract.timeliness",
        "airflow_dq_contracts.contract.validators",
        "airflow_dq_contracts.runtime.jars",
        "airflow_dq_contracts.storage.s3",
    ):
        attempted += doctest.testmod(importlib.import_module(name), verbose=False).attempted
    assert attempted >= 8  # the collection above is not silently empty
