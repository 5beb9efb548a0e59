"""Old module paths of the package, kept importable for one release after the third wave's restructure.

``import airflow_dq_contracts.results_store`` still works and gives the module's new home
(``airflow_dq_contracts.store.results.delta_store``), with a ``DeprecationWarning`` naming it. Only whole
modules are aliased: code importing a module's private names was never supported.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

#: old dotted name → new dotted name
MOVED: dict[str, str] = {
    "airflow_dq_contracts.history_cli": "airflow_dq_contracts.cli.history",
    "airflow_dq_contracts.jars_cli": "airflow_dq_contracts.cli.jars",
    "airflow_dq_contracts.report.cli": "airflow_dq_contracts.cli.report",
    "airflow_dq_contracts.interop.cli": "airflow_dq_contracts.cli.interop",
    "airflow_dq_contracts.jars": "airflow_dq_contracts.runtime.jars",
    "airflow_dq_contracts.jvm_archive": "airflow_dq_contracts.runtime.jvm_archive",
    "airflow_dq_contracts.spark_config": "airflow_dq_contracts.runtime.spark_config",
    "airflow_dq_contracts.results_store": "airflow_dq_contracts.store.results.delta_store",
    "airflow_dq_contracts.history": "airflow_dq_contracts.store.results.history",
    "airflow_dq_contracts.registry": "airflow_dq_contracts.store.results.registry",
    "airflow_dq_contracts.engine.sinks": "airflow_dq_contracts.store.sinks",
    "airflow_dq_contracts.engine.registry_sink": "airflow_dq_contracts.store.results.spark_registry",
    "airflow_dq_contracts.engine.history": "airflow_dq_contracts.store.results.spark_history",
    "airflow_dq_contracts.delta_metadata": "airflow_dq_contracts.store.tablemeta.delta_log",
    "airflow_dq_contracts.lineage": "airflow_dq_contracts.interop.lineage",
    # fourth wave (#33): storage, credentials and locations in one plain package
    "airflow_dq_contracts.runtime.storage": "airflow_dq_contracts.storage.s3",
    "airflow_dq_contracts.runtime.connections": "airflow_dq_contracts.storage.connections",
    "airflow_dq_contracts.store.catalog_names": "airflow_dq_contracts.storage.catalog_names",
    # fourth wave (#33): the store split into results, sinks and table metadata
    "airflow_dq_contracts.store.base": "airflow_dq_contracts.store.results.port",
    "airflow_dq_contracts.store.results_store": "airflow_dq_contracts.store.results.delta_store",
    "airflow_dq_contracts.store.history": "airflow_dq_contracts.store.results.history",
    "airflow_dq_contracts.store.registry": "airflow_dq_contracts.store.results.registry",
    "airflow_dq_contracts.store.delta_commits": "airflow_dq_contracts.store.results.driver_commits",
    "airflow_dq_contracts.store.registry_sink": "airflow_dq_contracts.store.results.spark_registry",
    "airflow_dq_contracts.store.spark_results": "airflow_dq_contracts.store.results.spark_writes",
    "airflow_dq_contracts.store.spark_store": "airflow_dq_contracts.store.results.spark_store",
    "airflow_dq_contracts.store.spark_history": "airflow_dq_contracts.store.results.spark_history",
    "airflow_dq_contracts.store.spark_rows": "airflow_dq_contracts.store.sinks.spark_rows",
    "airflow_dq_contracts.store.delta_log": "airflow_dq_contracts.store.tablemeta.delta_log",
    "airflow_dq_contracts.store.table_facts": "airflow_dq_contracts.store.tablemeta.table_facts",
    "airflow_dq_contracts.store.parquet_dir": "airflow_dq_contracts.store.tablemeta.parquet_dir",
}


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new_name: str) -> None:
        self.new_name = new_name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # a placeholder module; exec_module puts the real one in its place

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.new_name}; import it from there", DeprecationWarning, stacklevel=2
        )
        # The import system returns whatever sys.modules holds under the old name once this returns.
        sys.modules[module.__name__] = importlib.import_module(self.new_name)


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new_name = MOVED.get(fullname)
        if new_name is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new_name))


def install() -> None:
    """Register the alias finder once (called by the package's ``__init__``)."""
    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
