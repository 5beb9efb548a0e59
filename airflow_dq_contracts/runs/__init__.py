"""One run of a contract from the edge's side: its spec, its tables, its read-back and its report (plain Python).

What the operator (and the suite task) and ``dq-contracts run`` do the same way, once, with no Airflow and
no Spark: the Airflow side turns the errors into task failures, the CLI into exit codes.

* :mod:`.spec` — the :class:`~airflow_dq_contracts.runspec.RunSpec` from an edge's settings: the run id of
  an Airflow task, the reference time, the ``references`` overrides, the default tables of a warehouse.
* :mod:`.tables` — :class:`RunTables`: a run's results/quarantine/valid tables resolved once into
  :class:`~airflow_dq_contracts.storage.locations.TableLocation` values (where the job's catalog put them),
  and the locations lineage names.
* :mod:`.readback` — :func:`collect_summary`: the summary of a run read back through the results port
  (:meth:`~airflow_dq_contracts.store.results.ResultsStore.read_run_result`), the job's own report a
  cross-check; :class:`ReadBackError` when the tables do not back it.
* :mod:`.outcome` — the decision's log line and a gate's reason, in words.
* :mod:`.report` — :func:`write_run_report`: the run's HTML report written where the settings say.

Example::

    spec = build_run_spec(contract, warehouse="/wh", run_id="dq-1", input_path="/data/orders")
    tables = RunTables.resolve(spec, "/wh", reported=reported)
    summary = collect_summary(contract, spec, tables, reported=reported, started_at=t0, finished_at=t1)
"""

from __future__ import annotations

from airflow_dq_contracts.runs.outcome import decision_line, gate_reason
from airflow_dq_contracts.runs.readback import ReadBackError, collect_summary, read_back, warm_read_back
from airflow_dq_contracts.runs.report import RunReport, write_run_report
from airflow_dq_contracts.runs.spec import build_run_spec, reference_overrides, spec_from_args, task_run_id
from airflow_dq_contracts.runs.tables import RunTables, lineage_locations

__all__ = [
    "ReadBackError",
    "RunReport",
    "RunTables",
    "build_run_spec",
    "collect_summary",
    "decision_line",
    "gate_reason",
    "lineage_locations",
    "read_back",
    "reference_overrides",
    "spec_from_args",
    "task_run_id",
    "warm_read_back",
    "write_run_report",
]
