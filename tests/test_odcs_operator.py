"""ODCS v3 through the Airflow operator's contract loading (templated as any contract) and ``dq-contracts diff``."""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)

import datetime as dt

import pendulum
import pytest

from airflow_dq_contracts.cli.main import main as cli_main

ODCS = """apiVersion: v3.1.0
kind: DataContract
id: orders-1
version: {version}
status: active
schema:
  - name: orders
    properties:
      - {{name: id, physicalType: bigint, primaryKey: true}}
      - name: day
        physicalType: string
        quality:
          - {{metric: invalidValues, arguments: {{validValues: ['{{{{ ds }}}}']}}, mustBe: 0}}
"""


@pytest.mark.airflow
def test_the_operator_accepts_an_odcs_file_and_renders_it(tmp_path):
    from airflow.sdk import DAG

    from airflow_dq_contracts.operators import ContractCheckOperator

    (tmp_path / "orders.odcs.yaml").write_text(ODCS.format(version="1.0.0"))
    with DAG(dag_id="odcs_op", schedule=None, start_date=dt.datetime(2024, 1, 1), template_searchpath=[str(tmp_path)]):
        op = ContractCheckOperator(task_id="check", contract="orders.odcs.yaml", input_path="/data/orders")
    op.render_template_fields({"ds": "2024-05-01", "data_interval_end": pendulum.datetime(2024, 5, 2, tz="UTC")})
    contract, text = op.load_contract()
    assert "apiVersion: v3.1.0" in text  # the job receives the ODCS text and compiles it the same way
    (check,) = contract.checks
    assert check.params["condition"] == "day IN ('2024-05-01')"
    assert {"id/not_null", "id/unique"} <= {c.check_id for c in contract.evaluated_checks()}


def test_diff_reads_odcs_versions(tmp_path, capsys):
    old, new = tmp_path / "old.odcs.yaml", tmp_path / "new.odcs.yaml"
    old.write_text(ODCS.format(version="1.0.0"))
    new.write_text(
        ODCS.format(version="2.0.0").replace("      - {name: id, physicalType: bigint, primaryKey: true}\n", "")
    )
    code = cli_main(["diff", str(old), str(new)])
    out = capsys.readouterr().out
    assert code != 0 and "id" in out  # a removed column is a breaking change
