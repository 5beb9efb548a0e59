"""``ContractCheckOperator``: evaluate a data contract with a packaged Spark job, push the summary to XCom.

What ``execute`` does, in order (DESIGN §2):

1. **Validate the contract locally** — plain Python, no JVM. A bad contract fails the task at once
   (no retry: it will not get better) with every problem located, ``file:line: path: message``.
2. **Submit** the packaged job with spark-submit through
   :class:`~airflow_dq_contracts.hooks.contract_submit.ContractSubmitHook` (a ``SparkSubmitHook``
   on connection ``spark_default`` by default). The run travels inside the submission as one
   :class:`~airflow_dq_contracts.runspec.RunSpec` argument (the contract text included), built once here.
   The run id is deterministic — ``make_run_id(dag_id, run_id, task_id[, map_index])`` — so a retry
   *replaces* its results and quarantined rows instead of adding a second copy.
3. **Read this run's rows back** from the Delta results table with delta-rs (no JVM) and push the
   summary built *from those rows* to XCom: what XCom holds is what the results table holds.
4. **Decide**: with ``fail_on_gate=True`` (the default) a *gate* decision fails the task — after
   the summary was pushed — so a P0 failure never passes silently when the operator is used alone.

How it cooperates with :class:`~airflow_dq_contracts.operators.contract_branch.ContractBranchOperator`:

* **Routing** (recommended, what the example DAGs do): ``fail_on_gate=False`` on the check; the
  check task succeeds whatever the data says and pushes the summary; the branch reads it and
  follows ``gate_task_ids`` (alert / stop), ``quarantine_task_ids`` or ``pass_task_ids``, skipping
  the others. The gate is enforced by the branch: nothing on the pass path runs.
* **Red task and routing**: keep ``fail_on_gate=True`` and give the branch
  ``trigger_rule="all_done"``; the check task fails (visible in the grid, alerts fire) and the
  branch still routes the gate to the alert path, because the summary was pushed before the failure.

Where outputs go when not given (the embedded default): a warehouse folder —
``$DQ_CONTRACTS_WAREHOUSE``, else ``$AIRFLOW_HOME/dq_warehouse`` — with the results table at
``<warehouse>/dq_results`` and the quarantine table at ``<warehouse>/dq_quarantine/<contract>``.
No valid-rows table unless ``valid_table`` is given. Paths (``/…``, ``s3a://…``) are read back
directly; catalog table names are read back through Spark's warehouse layout
(``<warehouse>/<db>.db/<table>``), which needs ``$DQ_CONTRACTS_WAREHOUSE`` to match the
catalog's ``spark.sql.warehouse.dir``.

The report: after reading the run back, the operator writes the run's self-contained HTML report
(:mod:`airflow_dq_contracts.report`) to ``<report_folder>/<contract>/<run id>.html`` — by default
``<warehouse>/dq_reports``; a URI (``s3://…``) is written through fsspec like the tables — puts its
location in the summary (``summary["report"]``) and shows it as the task's **"Data quality report"**
extra link (the URL is ``report_base_url/<contract>/<run id>.html`` when the folder is served over
HTTP, else the file's own URI). A report that cannot be written is logged and never fails the check.

Templating: ``contract`` (a path is read and *its text* rendered with Jinja, so a YAML contract may
use ``{{ ds }}``; ``render_contract=False`` turns that off, e.g. for regexes containing ``{{``),
``table``, ``input_path``, ``filter``, ``reference_time`` (default the run's ``data_interval_end``; a run
without a data interval uses the evaluation time), the output tables and ``spark_conf``.

Example::

    check = ContractCheckOperator(
        task_id="check_orders",
        contract="contracts/orders.yaml",
        input_path="/data/orders",
        filter="order_date = '{{ ds }}'",
        fail_on_gate=False,            # a ContractBranchOperator follows
    )
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow_dq_contracts.contract import Contract, ContractValidationError, load_contract
from airflow_dq_contracts.hooks.errors import ContractJobError
from airflow_dq_contracts.hooks.storage import (
    StorageCredentials,
    check_access,
    check_location,
    get_storage_credentials,
)
from airflow_dq_contracts.hooks.transport import JobHook, JobRequest, build_job_hook
from airflow_dq_contracts.jobs.bundle import cache_dir
from airflow_dq_contracts.operators.assets import ContractAssetsMixin, search_folders
from airflow_dq_contracts.operators.contract_suite import check_suite_arguments, run_suite_task
from airflow_dq_contracts.operators.report_link import REPORT_URL_KEY, ContractReportLink
from airflow_dq_contracts.results import DECISION_GATE, CheckResult, ContractResult, make_run_id
from airflow_dq_contracts.runspec import ReferenceOverride, RunSpec, RunSpecError, normalise_reference_time
from airflow_dq_contracts.storage import catalog_names
from airflow_dq_contracts.storage.locations import StoreError, TableLocation, is_path, resolve_location
from airflow_dq_contracts.storage.naming import (
    default_quarantine_table,
    default_report_folder,
    default_results_table,
    default_warehouse,
    report_location,
)
from airflow_dq_contracts.storage.s3 import mentions_s3, needs_s3
from airflow_dq_contracts.store.results import open_results_store
from airflow_dq_contracts.timeutil import format_time, parse_time, utcnow
from airflow_dq_contracts.version_compat import (
    AirflowException,
    AirflowFailException,
    BaseOperator,
    Context,
)

# --------------------------------------------------------------------------------------- outputs


def warm_read_back() -> None:
    """Import what the read-back needs (pyarrow's Parquet reader, delta-rs) in a thread while the job runs.

    A task process imports them on its first read-back: a few tenths of a second that otherwise come
    after the job, on the task's critical path. A failed import here is the read-back's to report.
    """

    def load() -> None:
        with contextlib.suppress(ImportError):
            import deltalake  # noqa: F401
            import pyarrow.fs  # noqa: F401
            import pyarrow.parquet  # noqa: F401

    threading.Thread(target=load, name="dq-warm-read-back", daemon=True).start()


def collect_summary(
    contract: Contract,
    *,
    run_id: str,
    dataset: str,
    results_table: str,
    quarantine_table: str | None,
    valid_table: str | None,
    warehouse: str,
    filter: str | None,  # noqa: A002
    started_at: dt.datetime,
    finished_at: dt.datetime,
    reported: dict[str, Any] | None = None,
    storage_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The XCom summary of one run, built from what the Delta tables hold for it.

    ``reported`` is the job's own completion payload (client mode); it is cross-checked against
    the table, never trusted instead of it: a mismatch means rows were lost or duplicated.
    Catalog names resolve where the job's catalog put them (``reported["locations"]``, recorded in the
    warehouse for the sensors and the report: :mod:`airflow_dq_contracts.storage.catalog_names`).
    """
    locations = dict((reported or {}).get("locations") or {})
    for name, where in locations.items():
        catalog_names.record(warehouse, name, where)
    try:
        store = open_results_store(
            TableLocation.resolve(results_table, warehouse, storage_options=storage_options), warehouse=warehouse
        )
        # The job's report names its results commit: read that one commit, not the whole history.
        version = (reported or {}).get("results_version")
        records = store.read_run(
            run_id, contract_name=contract.name, version=version if isinstance(version, int) else None
        )
        quarantine_rows = store.count_run_rows(quarantine_table, run_id)
        valid_rows = store.count_run_rows(valid_table, run_id)
    except (StoreError, ValueError) as exc:
        raise AirflowException(f"cannot read run {run_id} back from its Delta tables: {exc}") from None
    if not records:
        raise AirflowException(
            f"the results table {results_table} holds no rows for run {run_id}: the job reported success "
            "but its results are not there (wrong table, or another process removed them)"
        )
    order = {check.check_id: index for index, check in enumerate(contract.evaluated_checks())}
    records.sort(key=lambda r: (order.get(r.check_id, len(order)), r.check_id))
    if reported is not None and int(reported.get("checks", len(records))) != len(records):
        raise AirflowException(
            f"the job reported {reported.get('checks')} check results for run {run_id} but the results "
            f"table {results_table} holds {len(records)}"
        )
    result = ContractResult(
        run_id=run_id,
        contract_name=contract.name,
        contract_version=contract.version,
        dataset=dataset,
        row_count=_row_count(contract, records, reported),
        checks=records,
        started_at=parse_time((reported or {}).get("started_at")) or started_at,
        finished_at=parse_time((reported or {}).get("finished_at")) or finished_at,
        results_table=results_table,
        quarantine_table=quarantine_table,
        quarantine_rows=quarantine_rows,
        valid_table=valid_table,
        valid_rows=valid_rows,
        filter=filter,
    )
    summary = result.summary()
    if locations:
        summary["locations"] = locations
    if reported is not None and reported.get("decision") not in (None, summary["decision"]):
        raise AirflowException(
            f"the job decided {reported.get('decision')!r} but the rows in {results_table} decide "
            f"{summary['decision']!r} for run {run_id}"
        )
    return summary


def _row_count(contract: Contract, records: list[CheckResult], reported: dict[str, Any] | None) -> int:
    if reported and reported.get("row_count") is not None:
        return int(reported["row_count"])
    # A check with its own filter counts only its rows; the run's count is an unfiltered check's.
    unfiltered = {c.check_id for c in contract.evaluated_checks() if not c.filter}
    counts = [r.row_count for r in records if r.check_id in unfiltered]
    return counts[0] if counts else max(r.row_count for r in records)


# --------------------------------------------------------------------------------------- operator


class ContractCheckOperator(ContractAssetsMixin, BaseOperator):
    """Evaluate a data contract on a dataset with Spark; push the summary to XCom (see module docs).

    :param contract: path of a YAML/JSON contract (templated: its text is rendered), YAML text, or a dict;
        or a list of them: every contract in ONE Spark application (see :mod:`.contract_suite`).
    :param table: catalog table to check. Exclusive with ``input_path``.
    :param input_path: path of the dataset to check; neither given → the contract's ``dataset``.
    :param input_format: format of ``input_path`` (delta, parquet, csv, json, orc).
    :param filter: SQL predicate scoping the run, e.g. ``"order_date = '{{ ds }}'"`` (templated).
    :param reference_time: instant freshness/completeness are measured against (templated;
        default the run's ``data_interval_end``; empty or ``None`` → evaluation time).
    :param results_table: Delta results table (path or table name); default in the warehouse.
    :param quarantine_table: Delta table for violating rows; default per contract in the warehouse.
    :param valid_table: Delta table for the remaining rows; default none.
    :param conn_id: Spark connection; one of type ``spark_connect`` runs the job as a Spark Connect client
        (no spark-submit; see :mod:`airflow_dq_contracts.hooks.spark_connect`).
    :param spark_conf: extra Spark conf (templated), over the Delta settings.
    :param packages: extra Maven coordinates (Delta's is added).
    :param jars: extra jars.
    :param fail_on_gate: fail the task on a *gate* decision (after pushing the summary). Set False
        when a ``ContractBranchOperator`` routes the decision.
    :param policy: severity → action override for this run (``{"P1": "gate"}`` or
        ``{"P1": {"table": "gate", "row": "quarantine"}}``), applied when the contract is loaded.
    :param render_contract: render the contract text with Jinja (default True).
    :param warehouse: warehouse folder for default outputs and table names (default see module docs).
    :param report_folder: folder (path or URI) for the run's HTML report (templated); default
        ``<warehouse>/dq_reports``. ``write_report=False`` writes none.
    :param report_base_url: URL under which ``report_folder`` is served; the extra link uses it.
    :param report_days: days of history in the report's trend charts.
    :param storage_conn_id: Airflow connection (``aws``, ``google_cloud_platform``, ``wasb``/``adls``) with the
        credentials of the tables on object storage (:mod:`airflow_dq_contracts.hooks.storage`): its secrets
        are masked, reach the job through spark-submit's environment only (never its command line, the
        run's spec, XCom or the report) and this task's read-back/report as delta-rs options.
    :param spark_submit_kwargs: any other ``SparkSubmitHook`` argument (``driver_memory``,
        ``executor_memory``, ``executor_cores``, ``num_executors``, ``deploy_mode``, ``files``…).
    :param references: ``{name: "PATH[:FORMAT]"}`` overrides of the contract's ``references:``
        (templated; carried to the job in the run's spec). The references' ``filter`` is part of
        the contract text, which is rendered as a template like every other field.
    :param emit_asset: also update the dataset's asset (the valid table's when ``valid_table`` is given),
        derived from its location (:mod:`~airflow_dq_contracts.operators.assets`). Every asset event of the
        task — these and ``outlets=[Asset(...)]`` — carries the run's verdict in its ``extra``.

    Example::

        ContractCheckOperator(task_id="check_orders", contract="contracts/orders.yaml",
                              input_path="/data/orders", fail_on_gate=False)
    """

    template_fields: Sequence[str] = (
        "contract",
        "table",
        "input_path",
        "input_format",
        "filter",
        "reference_time",
        "results_table",
        "quarantine_table",
        "valid_table",
        "spark_conf",
        "references",
        "report_folder",
    )
    operator_extra_links = (ContractReportLink(),)
    # The contract file is read and rendered by this operator (see render_template_fields), not by
    # Airflow's template_ext machinery: that one cannot read absolute paths and turns a missing file
    # into a Jinja traceback instead of a located contract error.
    template_ext: Sequence[str] = ()
    template_fields_renderers = {"contract": "yaml", "spark_conf": "json", "filter": "sql"}
    ui_color = "#e8f4e4"

    # A run's spec (the contract text included) up to this size travels as one base64 argument; a
    # larger one as a --files attachment (a single argv string is capped at 128 KiB on Linux).
    max_inline_contract_bytes: int = 64 * 1024

    def __init__(
        self,
        *,
        contract: str | dict[str, Any] | list[str | dict[str, Any]],
        table: str | None = None,
        input_path: str | None = None,
        input_format: str | None = "delta",
        filter: str | None = None,  # noqa: A002 - the fixed public name
        reference_time: str | dt.datetime | None = "{{ data_interval_end }}",
        results_table: str | None = None,
        quarantine_table: str | None = None,
        valid_table: str | None = None,
        conn_id: str = "spark_default",
        spark_conf: dict[str, Any] | None = None,
        packages: str | list[str] | None = None,
        jars: str | list[str] | None = None,
        fail_on_gate: bool = True,
        policy: dict[str, Any] | None = None,
        render_contract: bool = True,
        warehouse: str | None = None,
        spark_submit_kwargs: dict[str, Any] | None = None,
        references: dict[str, str] | None = None,
        report_folder: str | None = None,
        report_base_url: str | None = None,
        report_days: int = 30,
        write_report: bool = True,
        storage_conn_id: str | None = None,
        emit_asset: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if table and input_path:
            raise ValueError(f"{self.task_id}: give table= or input_path=, not both")
        if isinstance(contract, (list, tuple)):  # several contracts, one application (contract_suite.py)
            contract = check_suite_arguments(
                self.task_id,
                contract,
                table=table,
                input_path=input_path,
                references=references,
                quarantine_table=quarantine_table,
                valid_table=valid_table,
            )
        elif not isinstance(contract, (str, dict, os.PathLike)) or (isinstance(contract, str) and not contract.strip()):
            raise ValueError(f"{self.task_id}: contract= must be a path, YAML text or a dict, got {contract!r}")
        self.contract = os.fspath(contract) if isinstance(contract, os.PathLike) else contract
        self.table = table
        self.input_path = input_path
        self.input_format = input_format
        self.filter = filter
        self.reference_time = reference_time
        self.results_table = results_table
        self.quarantine_table = quarantine_table
        self.valid_table = valid_table
        self.conn_id = conn_id
        self.spark_conf = dict(spark_conf or {})
        self.packages = packages
        self.jars = jars
        self.fail_on_gate = fail_on_gate
        self.policy = policy
        self.render_contract = render_contract
        self.warehouse = warehouse
        self.spark_submit_kwargs = dict(spark_submit_kwargs or {})
        self.references = dict(references or {})
        self.report_folder = report_folder
        self.report_base_url = report_base_url
        self.report_days = report_days
        self.write_report = write_report
        self.storage_conn_id = storage_conn_id or None
        self._storage: StorageCredentials | None = None  # resolved in execute(), never serialised
        self._on_s3 = False  # a location of the run is on S3: the job needs the s3a filesystem's jars
        # What the contract was before rendering (a path locates errors; the text replaces it).
        self._contract_origin: str = (
            str(self.contract) if self._is_contract_path(self.contract) else f"<{self.task_id}.contract>"
        )
        self._contract_origins = [
            str(item) if self._is_contract_path(item) else f"<{self.task_id}.contract[{index}]>"
            for index, item in enumerate(self.contract if isinstance(self.contract, list) else [])
        ]
        self._hook: JobHook | None = None
        self._lineage: dict[str, Any] | None = None  # what the last execute() checked and wrote
        self.add_contract_asset(emit_asset, search_folders(self))

    # ------------------------------------------------------------------ contract

    @staticmethod
    def _is_contract_path(value: Any) -> bool:
        # The same rule as load_contract: one line that is not inline JSON names a file.
        return isinstance(value, str) and "\n" not in value and not value.lstrip().startswith("{")

    def _search_path(self) -> list[Path]:
        folders: list[Path] = []
        dag = self.dag if self.has_dag() else None
        if dag is not None:
            folders.append(Path(dag.folder))
            for extra in dag.template_searchpath or ():
                folders.append(Path(extra))
        folders.append(Path.cwd())
        return folders

    def _read_contract_file(self, name: str) -> tuple[str, str]:
        """(text, name for error locations) of a contract file, found like Airflow finds templates."""
        candidate = Path(name).expanduser()
        tried: list[str] = []
        paths = [candidate] if candidate.is_absolute() else [folder / candidate for folder in self._search_path()]
        for path in paths:
            tried.append(str(path))
            if path.is_file():
                try:
                    return path.read_text(encoding="utf-8"), name
                except (OSError, UnicodeDecodeError) as exc:
                    raise AirflowFailException(f"{name}: cannot read the contract: {exc}") from None
        raise AirflowFailException(f"{name}: contract file not found (looked in: {', '.join(tried)})")

    def render_template_fields(self, context: Context, jinja_env: Any = None) -> None:
        """Render the templated fields; the contract's *file text* is rendered, with located errors."""
        if "data_interval_end" not in context:
            # A run without a logical date (asset-triggered, or manual without one) has no data
            # interval, and Airflow 3.0 leaves the name out of the context: the default
            # reference_time "{{ data_interval_end }}" would fail the task on Jinja's StrictUndefined.
            # As on Airflow 3.1 (the name present, None), such a run uses the evaluation time.
            context = {**context, "data_interval_end": None}
        source = self.contract
        self.contract = None  # rendered below, once
        try:
            super().render_template_fields(context, jinja_env)
        finally:
            self.contract = source
        if jinja_env is None:
            jinja_env = self.get_template_env()
        if isinstance(source, list):
            origins = self._contract_origins
            self.contract = [self._render_contract(*pair, context, jinja_env)[0] for pair in zip(source, origins)]
            return
        self.contract, self._contract_origin = self._render_contract(source, self._contract_origin, context, jinja_env)

    def _render_contract(self, source: Any, origin: str, context: Context, jinja_env: Any) -> tuple[Any, str]:
        """(rendered contract, name for error locations) of one contract: a dict, a file or a text."""
        if isinstance(source, dict):
            return (self.render_template(source, context, jinja_env) if self.render_contract else source), origin
        if self._is_contract_path(source):
            source, origin = self._read_contract_file(source)
        return (self._render_text(source, origin, context, jinja_env) if self.render_contract else source), origin

    def _render_text(self, text: str, origin: str, context: Context, jinja_env: Any) -> str:
        import jinja2

        try:
            rendered = jinja_env.from_string(text).render(**context)
        except jinja2.TemplateSyntaxError as exc:
            raise AirflowFailException(
                f"{origin}:{exc.lineno}: template error in the contract: {exc.message}"
            ) from None
        except jinja2.TemplateError as exc:
            raise AirflowFailException(f"{origin}: template error in the contract: {exc}") from None
        # Jinja drops the final newline; keep the text a document (a single line would read as a path).
        return rendered if rendered.endswith("\n") or not text.endswith("\n") else rendered + "\n"

    def contract_sources(self) -> list[tuple[Any, str]]:
        """(contract, name for error locations) of each contract of a task given a list (see ``contract_suite``)."""
        return list(zip(self.contract, self._contract_origins)) if isinstance(self.contract, list) else []

    def load_contract(self, source: Any = None, origin: str | None = None) -> tuple[Contract, str]:
        """Validate the (rendered) contract — or ``source`` named ``origin`` — locally; (contract, its text as
        shipped to the job).

        Raises ``AirflowFailException`` listing every problem, located (no retry: a bad contract
        does not heal).
        """
        alone = source is None
        if alone:
            source, origin = self.contract, self._contract_origin
        if self._is_contract_path(source):  # not rendered (execute() called directly)
            source, origin = self._read_contract_file(source)
            if alone:
                self._contract_origin = origin
        try:
            contract = load_contract(source, filename=origin, policy=self.policy)
        except ContractValidationError as exc:
            raise AirflowFailException(f"invalid contract, nothing submitted:\n{exc}") from None
        if isinstance(source, dict):
            text = json.dumps(source, default=str)  # JSON is YAML: the job's loader reads it as is
        else:
            text = str(source) if str(source).endswith("\n") else f"{source}\n"
        return contract, text

    # ------------------------------------------------------------------ run

    def _reference_time(self) -> str | None:
        """The rendered ``reference_time`` as ISO-8601 UTC (``Z``); None for none (a run without a data interval)."""
        value = self.reference_time
        if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
            return None
        try:
            return normalise_reference_time(value)
        except RunSpecError as exc:
            raise AirflowFailException(f"{self.task_id}: reference_time: {exc.reason}") from None

    def _run_id(self, context: Context) -> tuple[str, str, str]:
        ti = context["ti"]
        dag_id, airflow_run_id, task_id = ti.dag_id, ti.run_id, ti.task_id
        map_index = getattr(ti, "map_index", -1)
        parts = [dag_id, airflow_run_id, task_id] + (
            [str(map_index)] if map_index is not None and map_index >= 0 else []
        )
        return make_run_id(*parts), dag_id, airflow_run_id

    def run_spec(self, context: Context, contract: Contract, text: str, warehouse: str) -> RunSpec:
        """This task's run as one :class:`~airflow_dq_contracts.runspec.RunSpec`, checked against ``contract``.

        The dataset defaults to the contract's; the outputs to the warehouse's. Raises
        ``AirflowFailException`` for a run that cannot be described (no retry: it will not heal).
        """
        run_id, dag_id, airflow_run_id = self._run_id(context)
        try:
            references = {name: ReferenceOverride.parse(location) for name, location in self.references.items()}
            return RunSpec.for_contract(
                contract,
                contract_text=text,
                contract_origin=self._contract_origin,
                policy=self.policy,
                input_path=self.input_path or None,
                table=self.table or None,
                input_format=(self.input_format or None) if self.input_path else None,
                filter=self.filter if isinstance(self.filter, str) else None,
                references=references,
                reference_time=self._reference_time(),
                run_id=run_id,
                results_table=self.results_table or default_results_table(warehouse),
                quarantine_table=self.quarantine_table or default_quarantine_table(warehouse, contract.name),
                valid_table=self.valid_table or None,
                dag_id=dag_id,
                task_id=self.task_id,
                airflow_run_id=airflow_run_id,
            )
        except RunSpecError as exc:
            raise AirflowFailException(f"{self.task_id}: {exc}") from None

    def make_hook(
        self, application_args: list[str], files: list[str], warehouse: str, run_id: str | None = None
    ) -> JobHook:
        """The hook that submits the job (overridable, e.g. to add ``post_submit_commands``).

        ``run_id`` identifies the run across retries (the hook reclaims an earlier attempt's driver by it).
        The transport is chosen by the connection's type (:mod:`airflow_dq_contracts.hooks.transport`:
        ``spark_connect`` runs the job as a Spark Connect client, any other type through spark-submit).
        """
        return build_job_hook(
            JobRequest(
                conn_id=self.conn_id,
                application_args=application_args,
                files=files,
                warehouse=warehouse,
                run_id=run_id,
                spark_conf={str(k): str(v) for k, v in (self.spark_conf or {}).items()},
                packages=self.packages,
                jars=self.jars,
                name=f"dq-contracts-{self.task_id}",
                storage=self._storage,
                s3=self._on_s3,
                submit_kwargs=self.spark_submit_kwargs,
            )
        )

    def submit(self, hook: JobHook, what: str) -> dict[str, Any] | None:
        """Run ``hook``'s job (``on_kill`` stops it); the job's report, or the task's failure naming ``what``."""
        self._hook = hook
        try:
            return hook.submit_job()
        except ContractJobError as exc:
            if exc.kind in ("invalid_contract", "invalid_arguments"):
                raise AirflowFailException(f"the contract job refused its input: {exc}") from None
            raise AirflowException(f"{what} failed: {exc}") from None

    def execute(self, context: Context) -> dict[str, Any]:
        """Validate, submit, read back, push the summary; fail on gate when ``fail_on_gate``."""
        started_at = utcnow()
        warehouse = self.warehouse or default_warehouse()
        if isinstance(self.contract, list):  # several contracts, one application
            self.resolve_storage(self.input_path, self.results_table, self.quarantine_table, self.valid_table)
            collect = functools.partial(collect_summary, storage_options=self.storage_options())
            return run_suite_task(self, context, warehouse, collect)
        contract, text = self.load_contract()
        spec = self.run_spec(context, contract, text, warehouse)
        assert spec.run_id is not None and spec.results_table is not None  # set by run_spec
        self.resolve_storage(spec.input_path, spec.results_table, spec.quarantine_table, spec.valid_table)
        self._on_s3 = self._on_s3 or mentions_s3(spec)  # a reference table on S3 needs the s3a jars too
        run_id, results_table, dataset = spec.run_id, spec.results_table, spec.dataset or ""
        # Contracts up to max_inline_contract_bytes travel inline, larger ones as a shipped file.
        arguments, files = spec.job_arguments(
            folder=cache_dir() / "specs", max_inline_bytes=self.max_inline_contract_bytes
        )
        self.log.info(
            "Contract %s %s (%d checks) on %s%s → run %s",
            contract.name,
            contract.version or "",
            sum(1 for _ in contract.evaluated_checks()),
            dataset,
            f" where {spec.filter}" if spec.filter else "",
            run_id,
        )
        hook = self.make_hook(arguments, files, warehouse, run_id=run_id)
        warm_read_back()
        reported = self.submit(hook, f"contract job for {contract.name} on {dataset}")

        summary = collect_summary(
            contract,
            run_id=run_id,
            dataset=dataset,
            results_table=results_table,
            quarantine_table=spec.quarantine_table,
            valid_table=spec.valid_table,
            warehouse=warehouse,
            filter=spec.filter,
            started_at=started_at,
            finished_at=utcnow(),
            reported=reported,
            storage_options=self.storage_options(),
        )
        summary["report"] = self.run_report(context, summary, warehouse)
        outputs = [t for t in (results_table, spec.quarantine_table, spec.valid_table) if t]
        run = {"contract": contract, "summary": summary, "table": spec.table, "input_path": spec.input_path}
        self.record_lineage([{**run, "outputs": outputs}], warehouse)
        counts = summary["counts"]
        quarantine = summary.get("quarantine") or {}
        self.log.info(
            "Decision %s: %d passed, %d failed, %d error; %s rows, %s quarantined (results in %s)",
            summary["decision"].upper(),
            counts["passed"],
            counts["failed"],
            counts["error"],
            summary["row_count"],
            quarantine.get("rows", 0),
            results_table,
        )
        # No event when the gate fails the task.
        self.emit_verdict(context, summary, format_time(spec.reference_time), reported)
        if summary["decision"] == DECISION_GATE and self.fail_on_gate:
            # Push first: a branch with trigger_rule="all_done", a callback or a human can still read it.
            context["ti"].xcom_push(key="return_value", value=summary)
            gating = [c for c in summary["checks"] if c["action"] == DECISION_GATE and c["status"] != "passed"]
            names = (
                "; ".join(
                    f"{c['severity']} {c['check_id']} ({c['status']}: {c['message'] or c['validator']})" for c in gating
                )
                or "a quarantine check errored (fails closed)"
            )
            raise AirflowFailException(f"contract {contract.name} decided GATE on {dataset}: {names}")
        return summary

    def run_report(self, context: Context, summary: dict[str, Any], warehouse: str) -> str | None:
        """The run's HTML report's URL when ``write_report`` (None when off or it could not be written)."""
        return self._write_report(context, summary, warehouse) if self.write_report else None

    def _write_report(self, context: Context, summary: dict[str, Any], warehouse: str) -> str | None:
        """Write the run's HTML report; push and return its URL (None, logged, if it could not be written)."""
        from airflow_dq_contracts.report import build_report, write_report

        folder = self.report_folder or default_report_folder(warehouse)
        path, url = report_location(folder, summary["contract"]["name"], summary["run_id"], self.report_base_url)
        quarantine = (summary.get("quarantine") or {}).get("table")
        try:
            page = build_report(
                resolve_location(summary["results_table"], warehouse),
                summary["contract"]["name"],
                run_id=summary["run_id"],
                days=self.report_days,
                report_link=url,
                quarantine_table=resolve_location(quarantine, warehouse) if quarantine else None,
                storage_options=self.storage_options(),
            )
            write_report(page, path, storage_options=self.storage_options())
        except Exception as exc:  # noqa: BLE001 - the report is a view: never fail the check for it
            self.log.warning("Could not write the data quality report to %s: %s", path, exc)
            return None
        context["ti"].xcom_push(key=REPORT_URL_KEY, value=url)
        self.log.info("Data quality report: %s", url)
        return url

    def resolve_storage(self, *locations: str | None) -> None:
        """Look ``storage_conn_id`` up (masked) and try it on these locations before anything is submitted: a
        bad connection or a refused secret fails the task naming the connection, with nothing written."""
        self._on_s3 = needs_s3(locations)
        if self.storage_conn_id:
            self._storage = get_storage_credentials(self.storage_conn_id)
            for location in locations:
                check_location(self._storage, location)
                check_access(self._storage, location)

    def storage_options(self) -> dict[str, str] | None:
        """delta-rs options of this task's storage connection (None without one: the worker's environment)."""
        return self._storage.storage_options() if self._storage is not None else None

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage facets of the run (called by the OpenLineage provider; also on a gate failure).

        The checked dataset is the input, with ``dataQualityAssertions`` (one per check) and
        ``dataQualityMetrics`` (row count and the column statistics the run measured), all read
        from this run's result rows; the results/quarantine/valid tables are the outputs. Returns
        None when nothing ran or the OpenLineage packages are not installed.
        """
        state = self._lineage
        if state is None or not state["runs"]:
            return None
        try:
            from airflow_dq_contracts.operators.openlineage import merge_lineage, operator_lineage

            warehouse = state["warehouse"]
            each = []
            for run in state["runs"]:  # one per contract (several in one task)
                table = run["table"]
                input_location = resolve_location(table, warehouse) if table else run["input_path"]
                outputs = [(resolve_location(t, warehouse), None if is_path(t) else t) for t in run["outputs"]]
                each.append(
                    operator_lineage(
                        run["contract"],
                        run["summary"],
                        input_location=input_location,
                        input_table=table,
                        outputs=outputs,
                    )
                )
            return merge_lineage(each)
        except ImportError:
            return None  # the OpenLineage provider is optional: silent without it

    def record_lineage(self, runs: list[dict[str, Any]], warehouse: str) -> None:
        """What this execute() checked and wrote, per contract, for :meth:`get_openlineage_facets_on_complete`."""
        self._lineage = {"runs": runs, "warehouse": warehouse}

    def on_kill(self) -> None:
        """Stop the Spark application (local process group, or the cluster's driver/application)."""
        if self._hook is not None:
            self._hook.on_kill()
