"""Consumer of the checked orders asset: runs when ``dq_orders_assets_producer`` updates it — unless the data is bad.

Scheduled on :data:`ORDERS_VALID` (the producer's valid table, ``emit_asset=True`` there). Airflow starts a
run for every event of the asset, good or bad, so the first task, ``require_contract``
(:func:`~airflow_dq_contracts.operators.require_contract`, ``accept="quarantine"``), reads the triggering
events' verdicts: after a ``pass`` or a ``quarantine`` it returns the verdicts and ``summarise_orders`` reads
the rows the check kept (the valid table's rows of that contract run); after a ``gate`` it logs which
producer run's verdict stopped it and skips, so ``summarise_orders`` is skipped too.

Triggered by hand (no triggering event), ``require_contract`` judges the asset's latest event instead.
"""

from __future__ import annotations

import datetime as dt
import logging
import os

from airflow.sdk import DAG, task

from airflow_dq_contracts.operators import contract_asset, require_contract
from airflow_dq_contracts.operators.contract_check import default_warehouse

log = logging.getLogger(__name__)

VALID_ORDERS = os.path.join(default_warehouse(), "checked", "valid")
#: The producer's asset (the same name and URI: contract_asset of the same valid table).
ORDERS_VALID = contract_asset(VALID_ORDERS)

with DAG(
    dag_id="dq_orders_assets_consumer",
    description="Summarise the checked orders whenever they are updated with an acceptable verdict",
    schedule=[ORDERS_VALID],
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    catchup=False,
    tags=["data-quality", "example", "assets"],
    doc_md=__doc__,
) as dag:
    verdict = require_contract(ORDERS_VALID, accept="quarantine")

    @task
    def summarise_orders(verdicts: list) -> dict:
        """The rows each accepted contract run kept, read from the valid table by its run id."""
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        valid = DeltaTable(VALID_ORDERS).to_pyarrow_table(columns=["_dq_run_id", "amount"])
        out = {}
        for accepted in verdicts:
            rows = valid.filter(pc.equal(valid["_dq_run_id"], accepted["run_id"]))
            out[accepted["run_id"]] = rows.num_rows
            log.info(
                "run %s (%s): %d valid orders, %.2f in total",
                accepted["run_id"],
                accepted["decision"],
                rows.num_rows,
                pc.sum(rows["amount"]).as_py() or 0.0,
            )
        return out

    summarise_orders(verdict.output)
