"""get_provider_info follows Airflow's provider metadata and matches the modules that exist.

Generic on purpose: a new operator, sensor, hook or trigger module, an extra link or a notifier
must be registered, and every registered path must import and hold what its section says.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)

import importlib
import inspect
import json
import pkgutil
from pathlib import Path

import jsonschema
import pytest

import airflow_dq_contracts
from airflow_dq_contracts.get_provider_info import get_provider_info

# section -> (subpackage, name of the Airflow base class its modules define subclasses of). By name,
# because the classes moved between releases (airflow.hooks.base -> airflow.sdk, …).
SECTIONS = {
    "operators": ("operators", "BaseOperator"),
    "sensors": ("sensors", "BaseSensorOperator"),
    "hooks": ("hooks", "BaseHook"),
    "triggers": ("triggers", "BaseTrigger"),
}


def _resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _public_modules(subpackage: str) -> set[str]:
    package = importlib.import_module(f"airflow_dq_contracts.{subpackage}")
    return {
        f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")
    }


def _is_a(cls: type, base_name: str) -> bool:
    return any(parent.__name__ == base_name for parent in cls.__mro__[1:])


def _defines_subclass(module_name: str, base_name: str) -> bool:
    module = importlib.import_module(module_name)
    return any(
        inspect.isclass(obj) and obj.__module__ == module_name and _is_a(obj, base_name)
        for obj in vars(module).values()
    )


def test_provider_info_validates_against_airflows_schema():
    import airflow

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)


def test_versions_and_package_name_come_from_one_place():
    import importlib.metadata

    info = get_provider_info()
    assert info["versions"] == [airflow_dq_contracts.__version__]
    assert importlib.metadata.version("airflow-dq-contracts") == airflow_dq_contracts.__version__
    assert info["package-name"] == importlib.metadata.metadata("airflow-dq-contracts")["Name"]


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_each_section_lists_exactly_the_modules_that_define_its_classes(section):
    subpackage, base_name = SECTIONS[section]
    info = get_provider_info()
    integrations = {entry["integration-name"] for entry in info["integrations"]}
    listed: set[str] = set()
    for entry in info.get(section, []):
        assert entry["integration-name"] in integrations, entry
        listed.update(entry["python-modules"])
    defining = {m for m in _public_modules(subpackage) if _defines_subclass(m, base_name)}
    assert listed == defining, f"{section}: registered {sorted(listed)}, defined in {sorted(defining)}"


def test_integrations_have_documentation_links():
    for integration in get_provider_info()["integrations"]:
        assert integration["external-doc-url"].startswith("https://"), integration


def test_extra_links_and_notifiers_are_importable_classes_of_the_right_kind():
    """Listed by class path once they exist (an operator's extra link, an alert notifier)."""
    info = get_provider_info()
    for key, base_name in (("extra-links", "BaseOperatorLink"), ("notifications", "BaseNotifier")):
        for path in info.get(key, []):
            assert path.startswith("airflow_dq_contracts."), path
            assert _is_a(_resolve(path), base_name), path
    # and the other way round: every link or notifier class in the package is registered
    registered = set(info.get("extra-links", [])) | set(info.get("notifications", []))
    for module_info in pkgutil.walk_packages(airflow_dq_contracts.__path__, "airflow_dq_contracts."):
        if module_info.name.split(".")[1] not in {"operators", "notifications", "notifiers", "links"}:
            continue
        module = importlib.import_module(module_info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and obj.__module__ == module.__name__
                and not inspect.isabstract(obj)
                and (_is_a(obj, "BaseOperatorLink") or _is_a(obj, "BaseNotifier"))
            ):
                assert f"{obj.__module__}.{obj.__qualname__}" in registered, obj


def test_importing_the_airflow_side_warns_no_deprecation():
    """What a DAG file imports from us (operators, sensors, hooks, triggers, notifications, the link) raises no
    deprecation warning on the installed Airflow — e.g. ``BaseBranchOperator`` from its current place."""
    import subprocess
    import sys

    # Airflow installs its own warning filters when first imported: import it first, then record everything.
    code = (
        "import warnings, airflow, airflow.sdk\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import airflow_dq_contracts.version_compat, airflow_dq_contracts.operators, airflow_dq_contracts.sensors\n"
        "    import airflow_dq_contracts.hooks, airflow_dq_contracts.triggers, airflow_dq_contracts.notifications\n"
        "    import airflow_dq_contracts.operators.report_link\n"
        "import pathlib\n"
        "kinds = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)\n"
        "for w in caught:\n"
        "    if issubclass(w.category, kinds):\n"
        # Ours to fix: a warning raised in our files or in Airflow's (whose deprecation shims point at the importer).
        # A library warning about another library inside Airflow's own import chain (e.g. starlette's test client
        # on anyio, on Airflow 3.0) is listed apart: nothing we import or call could avoid it.
        "        parts = set(pathlib.Path(w.filename).parts)\n"
        "        mine = bool(parts & {'airflow_dq_contracts', 'airflow'})\n"
        "        print(f'{w.category.__name__ if mine else \"third-party\"}: {w.message} ({w.filename}:{w.lineno})')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"  # the check itself sees Airflow's deprecated lookup
        "    warnings.simplefilter('always')\n"
        "    from airflow.providers.common.compat.sdk import BaseBranchOperator\n"
        "print('control:', sorted({w.category.__name__ for w in caught}))\n"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if "Warning: " in line] == []
    assert "control:" in done.stdout  # the recording works (the control's warnings depend on the release)
