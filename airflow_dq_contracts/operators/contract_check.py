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
   summary built *from those rows* to XCom (:mod:`airflow_dq_contracts.runs`, shared with the CLI):
   what XCom holds is what the results table holds. Then write the run's HTML report.
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

Where outputs go when not given: a warehouse folder (``$DQ_CONTRACTS_WAREHOUSE``, else
``$AIRFLOW_HOME/dq_warehouse``) with ``<warehouse>/dq_results`` and ``<warehouse>/dq_quarantine/<contract>``
(:mod:`airflow_dq_contracts.storage.naming`); no valid-rows table unless ``valid_table`` is given. Catalog
names are read back where the job's catalog put them (:mod:`airflow_dq_contracts.runs.tables`).

The report (:mod:`airflow_dq_contracts.runs.report`) goes to ``<report_folder>/<contract>/<run id>.html``
(default ``<warehouse>/dq_reports``; a URI is written through fsspec); its URL is in the summary
(``summary["report"]``) and is the task's **"Data quality report"** extra link (under ``report_base_url``
when the folder is served over HTTP). A report that cannot be written is logged, never fails the check.

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

import datetime as dt
from collections.abc import Sequence
from typing import Any

from airflow_dq_contracts.contract import Contract
from airflow_dq_contracts.contract.counts import count_checks
from airflow_dq_contracts.jobs.bundle import cache_dir
from airflow_dq_contracts.operators.assets import ContractAssetsMixin, search_folders
from airflow_dq_contracts.operators.contract_job import ContractJobMixin, collect_summary
from airflow_dq_contracts.operators.contract_source import ContractSourceMixin, contract_argument
from airflow_dq_contracts.operators.contract_suite import RunOutcome, run_suite_task
from airflow_dq_contracts.operators.openlineage import LineageMixin
from airflow_dq_contracts.operators.report_link import (
    ContractReportLink,
    publish_report_url,
    start_report_link,
    ui_run_url,
)
from airflow_dq_contracts.results import DECISION_GATE
from airflow_dq_contracts.runs import (
    ReadBackError,
    RunTables,
    build_run_spec,
    decision_line,
    gate_reason,
    read_back,
    task_run_id,
    write_run_report,
)
from airflow_dq_contracts.runspec import RunSpec, RunSpecError, reference_instant
from airflow_dq_contracts.storage.naming import default_quarantine_table, default_results_table, default_warehouse
from airflow_dq_contracts.storage.s3 import mentions_s3
from airflow_dq_contracts.timeutil import format_time, utcnow
from airflow_dq_contracts.version_compat import AirflowException, AirflowFailException, BaseOperator, Context

# The default tables' names, imported from here by DAGs and scripts (their home: storage.naming).
__all__ = [
    "ContractCheckOperator",
    "collect_summary",
    "default_quarantine_table",
    "default_results_table",
    "default_warehouse",
]


class ContractCheckOperator(ContractSourceMixin, ContractJobMixin, LineageMixin, ContractAssetsMixin, BaseOperator):
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
    :param incremental: check only the rows that arrived since the last run of this contract on this
        dataset (Delta versions or new files; the range is recorded in the results table, docs/incremental.md).
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
        incremental: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if table and input_path:
            raise ValueError(f"{self.task_id}: give table= or input_path=, not both")
        self.contract = contract_argument(  # several contracts, one application: contract_suite.py
            self.task_id,
            contract,
            table=table,
            input_path=input_path,
            references=references,
            quarantine_table=quarantine_table,
            valid_table=valid_table,
        )
        # What to check, and how the run is scoped.
        self.table, self.input_path, self.input_format = table, input_path, input_format
        self.filter, self.reference_time, self.references = filter, reference_time, dict(references or {})
        self.policy, self.render_contract, self.fail_on_gate = policy, render_contract, fail_on_gate
        # Where the outputs go.
        self.results_table, self.quarantine_table, self.valid_table = results_table, quarantine_table, valid_table
        self.warehouse, self.storage_conn_id = warehouse, storage_conn_id or None
        self.incremental = bool(incremental)  # only the rows new since the last run (docs/incremental.md)
        self.write_report, self.report_folder = write_report, report_folder
        self.report_base_url, self.report_days = report_base_url, report_days
        # How the job is submitted.
        self.conn_id, self.spark_conf, self.packages, self.jars = conn_id, dict(spark_conf or {}), packages, jars
        self.spark_submit_kwargs = dict(spark_submit_kwargs or {})
        self._storage, self._on_s3, self._hook = None, False, None  # set in execute(), never serialised
        self.init_contract_origins()
        self.add_contract_asset(emit_asset, search_folders(self))

    # ------------------------------------------------------------------ run

    def _reference_time(self) -> dt.datetime | None:
        """The rendered ``reference_time`` as an aware UTC datetime; None for none (a run without a data interval)."""
        value = self.reference_time
        if isinstance(value, str) and value.strip() == "None":  # Jinja's rendering of a missing data interval
            return None
        try:
            return reference_instant(value)
        except RunSpecError as exc:
            raise AirflowFailException(f"{self.task_id}: {exc}") from None

    def _run_id(self, context: Context) -> tuple[str, str, str]:
        ti = context["ti"]
        run_id = task_run_id(ti.dag_id, ti.run_id, ti.task_id, getattr(ti, "map_index", -1))
        return run_id, ti.dag_id, ti.run_id

    def run_spec(self, context: Context, contract: Contract, text: str, warehouse: str) -> RunSpec:
        """This task's run as one :class:`~airflow_dq_contracts.runspec.RunSpec`, checked against ``contract``.

        The dataset defaults to the contract's; the outputs to the warehouse's. Raises
        ``AirflowFailException`` for a run that cannot be described (no retry: it will not heal).
        """
        run_id, dag_id, airflow_run_id = self._run_id(context)
        try:
            return build_run_spec(
                contract,
                warehouse=warehouse,
                references=self.references,
                reference_time=self._reference_time(),
                results_table=self.results_table or None,
                quarantine_table=self.quarantine_table or None,
                contract_text=text,
                contract_origin=self._contract_origin,
                policy=self.policy,
                input_path=self.input_path or None,
                table=self.table or None,
                input_format=(self.input_format or None) if self.input_path else None,
                filter=self.filter if isinstance(self.filter, str) else None,
                run_id=run_id,
                valid_table=self.valid_table or None,
                dag_id=dag_id,
                task_id=self.task_id,
                airflow_run_id=airflow_run_id,
                # The try number fences a late write of an earlier attempt off (store/fencing.py).
                attempt=getattr(context["ti"], "try_number", None) or None,
                incremental=self.incremental,
            )
        except RunSpecError as exc:
            raise AirflowFailException(f"{self.task_id}: {exc}") from None

    def execute(self, context: Context) -> dict[str, Any]:
        """Validate, submit, read back, push the summary; fail on gate when ``fail_on_gate``."""
        started_at = utcnow()
        start_report_link(self)  # no report yet: the extra link says so without asking XCom
        warehouse = self.warehouse or default_warehouse()
        if isinstance(self.contract, list):  # several contracts, one application
            self.resolve_storage(self.input_path, self.results_table, self.quarantine_table, self.valid_table)
            return run_suite_task(self, context, warehouse)
        contract, text = self.load_contract()
        spec = self.run_spec(context, contract, text, warehouse)
        self.resolve_storage(spec.input_path, spec.results_table, spec.quarantine_table, spec.valid_table)
        self._on_s3 = self._on_s3 or mentions_s3(spec)  # a reference table on S3 needs the s3a jars too
        # Contracts up to max_inline_contract_bytes travel inline, larger ones as a shipped file.
        arguments, files = spec.job_arguments(
            folder=cache_dir() / "specs", max_inline_bytes=self.max_inline_contract_bytes
        )
        dataset, where = spec.dataset or "", f" where {spec.filter}" if spec.filter else ""
        self.log.info(
            "Contract %s %s (%s) on %s%s → run %s",
            contract.name,
            contract.version or "",
            count_checks(contract),
            dataset,
            where,
            spec.run_id,
        )
        hook = self.make_hook(arguments, files, warehouse, run_id=spec.run_id)
        reported = self.submit(hook, f"contract job for {contract.name} on {dataset}")
        summary, lineage = self.finish_run(context, contract, spec, warehouse, reported, started_at)
        self.record_lineage([lineage], warehouse)
        self.log.info("%s", decision_line(summary, spec.results_table))
        # No event when the gate fails the task.
        self.emit_verdict(context, summary, format_time(spec.reference_time), reported)
        if summary["decision"] == DECISION_GATE and self.fail_on_gate:
            # Push first: a branch with trigger_rule="all_done", a callback or a human can still read it.
            context["ti"].xcom_push(key="return_value", value=summary)
            raise AirflowFailException(f"contract {contract.name} decided GATE on {dataset}: {gate_reason(summary)}")
        return summary

    def finish_run(
        self, context: Context, contract: Contract, spec: RunSpec, warehouse: str, reported: Any, started: dt.datetime
    ) -> RunOutcome:
        """(summary, lineage entry) of one run: read back (``AirflowException`` when its tables do not back it),
        its report written; its tables resolved once, with this task's storage options, for both."""
        try:
            summary, tables = read_back(
                contract,
                spec,
                warehouse,
                started_at=started,
                finished_at=utcnow(),
                reported=reported,
                storage_options=self.storage_options(),
            )
        except ReadBackError as exc:
            raise AirflowException(str(exc)) from None
        summary["report"] = self.run_report(context, summary, tables)
        lineage = {"contract": contract, "summary": summary, "table": spec.table, "input_path": spec.input_path}
        return summary, {**lineage, "outputs": tables.outputs}

    def run_report(self, context: Context, summary: dict[str, Any], tables: RunTables) -> str | None:
        """Write the run's HTML report when ``write_report``; push and return the link: the run's page in the Airflow
        UI when the plugin serves this results table, else the report's URL (None: neither; a report not written is
        logged and never fails the check)."""
        # With the UI plugin configured for this results table, the link (and the alerts') opens its run page.
        page = ui_run_url(summary["run_id"], tables.results)
        url = page
        if self.write_report:
            report = write_run_report(
                summary, tables, folder=self.report_folder, base_url=self.report_base_url, days=self.report_days
            )
            if report.error is not None:
                self.log.warning("Could not write the data quality report to %s: %s", report.path, report.error)
            else:
                url = page or report.url
        if url is None:
            return None
        publish_report_url(self, context, url)
        self.log.info("Data quality report: %s", url)
        return url
