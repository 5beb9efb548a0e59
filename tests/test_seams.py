"""The seams of docs/architecture.md's "Where to add", each proved by a toy added through its registration
point alone: a check type (contract/checks.py + engine/metrics/registry.py), a results backend kept in
memory (store/results/__init__.py) and an import format (interop/formats.py). The third toy, a transport that runs the job in this process, is in
tests/test_transport.py (hooks/transport.py's registry). Each toy runs a contract through its seam.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
import yaml

from airflow_dq_contracts.cli.main import main as dq_contracts
from airflow_dq_contracts.contract import ContractValidationError, checks, load_contract
from airflow_dq_contracts.engine.metrics import Measurement, Metric, registry
from airflow_dq_contracts.results import RESULT_COLUMNS, CheckResult
from airflow_dq_contracts.store import results as results_store
from airflow_dq_contracts.store.results import ResultsStore, TableLocation, open_results_store
from airflow_dq_contracts.timeutil import parse_time

# --------------------------------------------------------------------------------------- a check type

TOY_TYPE = "toy_zeros"


class ZerosMetric(Metric):
    """``toy_zeros``: the column's values equal to 0 (its count joins the shared scan)."""

    check_type, level = TOY_TYPE, "column"

    def aggregations(self, scope):
        return [scope.count_if(self.col == 0)]

    def measure(self, scan, grouped, ctx):
        return Measurement(float(scan[0] or 0))


@pytest.fixture
def toy_check_type() -> Iterator[str]:
    checks.register_check_type(checks.CheckType(TOY_TYPE, "column", summary="values equal to 0"))
    registry.register_metric(ZerosMetric)
    yield TOY_TYPE
    # The registries are the package's own tables: leave them as the other tests know them.
    del registry.METRICS[("column", TOY_TYPE)]
    del checks.CHECK_TYPES[("column", TOY_TYPE)]
    checks.COLUMN_TYPES.remove(TOY_TYPE)


def _toy_contract(name: str = "toy") -> dict[str, Any]:
    return {
        "name": name,
        "columns": [
            {"name": "id"},
            {"name": "qty", "checks": [{"name": "no_zeros", "type": TOY_TYPE, "max": 1}]},
        ],
    }


def test_an_unregistered_check_type_is_refused_naming_the_allowed_ones():
    with pytest.raises(ContractValidationError, match=f"unknown column-level check type '{TOY_TYPE}'"):
        load_contract(_toy_contract())


def test_a_metric_without_its_contract_side_is_refused():
    with pytest.raises(ValueError, match="register it first"):
        registry.register_metric(ZerosMetric)
    assert ("column", TOY_TYPE) not in registry.METRICS


@pytest.mark.spark
def test_a_toy_check_type_runs_through_evaluate(spark, toy_check_type):
    from airflow_dq_contracts.engine import evaluate

    rows = [(1, 0), (2, 3), (3, 0), (4, None), (5, 5)]
    df = spark.createDataFrame(rows, "id INT, qty INT")
    contract = load_contract(_toy_contract())
    assert checks.check_type("column", toy_check_type) is not None and toy_check_type in checks.COLUMN_TYPES

    result = evaluate(contract, df, reference_time="2024-05-02T00:00:00Z", run_id="toy-run")

    zeros = sum(1 for _, qty in rows if qty == 0)
    (record,) = [r for r in result.checks if r.check_type == toy_check_type]
    assert (record.column, record.metric_value, record.row_count) == ("qty", float(zeros), len(rows))
    assert (record.status, record.passed) == (("passed", True) if zeros <= 1 else ("failed", False))


# --------------------------------------------------------------------------------------- a results backend

SCHEME = "memory"


class MemoryResultsStore(ResultsStore):
    """A results backend kept in this process: each table's runs as CheckResult lists, by table URI."""

    tables: dict[str, list[CheckResult]] = {}
    registries: dict[str, dict[tuple[str, str | None], dict[str, Any]]] = {}

    def __init__(self, location: TableLocation, warehouse: str | None = None) -> None:
        self.results_table = location.target
        self.key = location.uri
        self.warehouse = warehouse

    @property
    def _rows(self) -> list[CheckResult]:
        return self.tables.setdefault(self.key, [])

    def write_run(self, records: Sequence[CheckResult], run_id: str) -> int | None:
        kept = [r for r in self._rows if r.run_id != run_id]  # a retry replaces the run's rows
        self.tables[self.key] = kept + [dataclasses.replace(r) for r in records]
        return len(self.tables[self.key])

    def read_run(
        self, run_id: str, *, contract_name: str | None = None, version: int | None = None
    ) -> list[CheckResult]:
        found = [
            dataclasses.replace(r)
            for r in self._rows
            if r.run_id == run_id and (contract_name is None or r.contract_name == contract_name)
        ]
        return sorted(found, key=lambda r: (r.contract_name, r.check_id))

    def read_history(
        self,
        contract_name: str,
        *,
        since: dt.datetime | None = None,
        until: dt.datetime | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        names = list(columns) if columns is not None else [name for name, _ in RESULT_COLUMNS]
        return [
            {name: getattr(r, name) for name in names}
            for r in self._rows
            if r.contract_name == contract_name
            and r.reference_time is not None
            and (since is None or r.reference_time >= since)
            and (until is None or r.reference_time <= until)
        ]

    def upsert_registry(self, row: Mapping[str, Any]) -> None:
        table = self.registries.setdefault(self.key, {})
        table[(row["contract_name"], row.get("contract_version"))] = dict(row)

    def read_registry(self, contract_name: str, contract_version: str | None = None) -> dict[str, Any] | None:
        rows = [v for (name, version), v in self.registries.get(self.key, {}).items() if name == contract_name]
        if contract_version is not None:
            rows = [r for r in rows if r.get("contract_version") == contract_version]
        return rows[-1] if rows else None

    def committed_version(self) -> int | None:
        return len(self._rows) if self.key in self.tables else None


@pytest.fixture
def memory_backend() -> Iterator[str]:
    results_store.register_results_backend(SCHEME, MemoryResultsStore)
    yield f"{SCHEME}://toy/results"
    del results_store._BACKENDS[SCHEME]
    MemoryResultsStore.tables.clear()
    MemoryResultsStore.registries.clear()


def test_the_factory_opens_a_registered_backend_by_its_scheme_and_delta_otherwise(memory_backend, tmp_path):
    store = open_results_store(memory_backend)
    assert isinstance(store, MemoryResultsStore)
    assert (store.results_table, store.committed_version()) == (memory_backend, None)
    assert not isinstance(open_results_store(str(tmp_path / "dq_results")), MemoryResultsStore)


@pytest.mark.spark
def test_a_run_is_written_and_read_back_through_an_in_memory_backend(spark, memory_backend):
    from airflow_dq_contracts.engine import evaluate

    contract = load_contract(
        {
            "name": "toy_memory",
            "columns": [
                {"name": "id", "checks": [{"name": "id_unique", "type": "duplicates", "max": 0}]},
                {"name": "qty", "checks": [{"name": "qty_present", "type": "missing", "max": 0}]},
            ],
        }
    )
    rows = [(1, 2), (2, None), (2, 7)]
    df = spark.createDataFrame(rows, "id INT, qty INT")
    result = evaluate(contract, df, reference_time="2024-05-02T00:00:00Z", run_id="mem-1")

    store = open_results_store(memory_backend)
    version = store.write_run(result.checks, "mem-1")
    order = [r.check_id for r in result.checks]  # the schema checks a run derives included
    back = open_results_store(memory_backend).read_run_result(
        "mem-1", contract_name="toy_memory", version=version, check_order=order
    )
    assert back is not None
    assert [r.check_id for r in back.checks] == order
    assert {r.check_id: r.to_dict() for r in back.checks} == {r.check_id: r.to_dict() for r in result.checks}
    assert (back.row_count, back.decision, back.results_table) == (len(rows), result.decision, memory_backend)
    assert back.summary()["checks"] == result.summary()["checks"]

    # The CLI's reader (`dq-contracts history`) opens the same backend by the table's name alone.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = dq_contracts(["history", "toy_memory", "--results-table", memory_backend, "--json"])
    assert code == 0
    report = json.loads(out.getvalue())
    assert report["newest_reference_time"] == "2024-05-02T00:00:00Z"
    failed = {r.check_id for r in result.checks if r.status != "passed"}
    assert {c["check_id"]: (c["runs"], c["failures"]) for c in report["checks"]} == {
        c: (1, 1 if c in failed else 0) for c in order
    }
    assert parse_time(report["newest_reference_time"]) == result.checks[0].reference_time


# --------------------------------------------------------------------------------------- an import format

TOY_FORMAT = "toy_required"


def _toy_convert(sources, settings):
    """``{dataset: PATH, required: [COLUMN, …]}`` → a contract whose required columns are declared not null."""
    from airflow_dq_contracts.interop.common import ImportResult, read_sources

    contracts: dict[str, str] = {}

    def add(source) -> None:
        doc = source.mapping(source.data, (), "a toy rule file")
        if doc is None:
            return
        for key in sorted(set(doc) - {"dataset", "required"}):
            source.refuse((key,), f"unknown key {key!r} (a toy rule file has dataset and required)")
        required = source.items(doc.get("required"), ("required",), "required") or []
        name = settings["name"] or "toy"
        contract = {
            "name": name,
            "owner": settings.get("owner") or "nobody",
            "dataset": {"path": str(doc.get("dataset")), "format": "parquet"},
            "columns": [{"name": str(column), "nullable": False} for column in required],
        }
        contracts[name] = yaml.safe_dump(contract, sort_keys=False)

    refused = read_sources(sources, add, bool(settings["partial"]))
    return ImportResult(contracts, refused)


@pytest.fixture
def toy_import_format() -> Iterator[str]:
    from airflow_dq_contracts.interop import formats

    option = formats.ImportOption("--owner", "the team that owns the contract")
    formats.register_import_format(formats.ImportFormat(TOY_FORMAT, "toy rule files", _toy_convert, (option,)))
    yield TOY_FORMAT
    del formats._FORMATS[TOY_FORMAT]  # the CLI knows the built-in formats only again


def test_an_import_format_registered_alone_becomes_a_subcommand(toy_import_format, tmp_path, capsys):
    source = tmp_path / "rules.yaml"
    source.write_text("dataset: /lake/orders\nrequired: [id, qty]\nowner: shop\n")
    out = tmp_path / "orders.yaml"
    assert dq_contracts(["import", toy_import_format, str(source), "-o", str(out)]) == 1
    # The refusal is located in the source file (line 3, key owner) and nothing was written.
    assert f"{source}:3: owner: unknown key 'owner'" in capsys.readouterr().err
    assert not out.exists()
    assert dq_contracts(["import", toy_import_format, str(source), "--partial", "--owner", "shop", "-o", str(out)]) == 3
    contract = load_contract(str(out))
    assert (contract.name, contract.owner, contract.dataset.path) == ("toy", "shop", "/lake/orders")
    assert dq_contracts(["validate", "-q", str(out)]) == 0


@pytest.mark.spark
def test_a_toy_import_formats_contract_runs(spark, toy_import_format, tmp_path):
    from airflow_dq_contracts.engine import evaluate

    source = tmp_path / "rules.yaml"
    source.write_text("dataset: /lake/orders\nrequired: [id, qty]\n")
    out = tmp_path / "orders.yaml"
    assert dq_contracts(["import", toy_import_format, str(source), "--name", "orders", "-o", str(out)]) == 0
    rows = [(1, 2), (2, None), (None, 4), (4, None)]
    df = spark.createDataFrame(rows, "id INT, qty INT")

    result = evaluate(load_contract(str(out)), df, reference_time="2024-05-02T00:00:00Z", run_id="toy-import")

    failed = {r.check_id: r.failed_rows for r in result.checks if r.check_id.endswith("/not_null")}
    nulls = {f"{name}/not_null": sum(1 for row in rows if row[i] is None) for i, name in enumerate(("id", "qty"))}
    assert failed == nulls
