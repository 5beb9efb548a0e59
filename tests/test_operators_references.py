"""ContractCheckOperator and references: ``references=`` and the contract's reference filters are
templated; names the contract does not declare fail the task before anything is submitted.
(The real spark-submit path is exercised by tests/test_dags_references.py.)"""

from __future__ import annotations

import pytest
from test_operators import _check, _context

pytestmark = pytest.mark.airflow

CONTRACT = """\
name: orders
references:
  raw: {path: /placeholder, filter: "order_date = '{{ ds }}'"}
checks:
  - {name: No order lost, type: reconciliation, reference: raw, measure: count}
"""


def test_references_and_reference_filters_are_rendered(tmp_path):
    (tmp_path / "c.yaml").write_text(CONTRACT)
    op = _check(tmp_path, contract="c.yaml", references={"raw": "/wh/{{ ds }}/raw:delta"})
    assert "references" in op.template_fields
    op.render_template_fields(_context())
    assert op.references == {"raw": "/wh/2024-05-01/raw:delta"}
    contract, _ = op.load_contract()
    assert contract.references["raw"].filter == "order_date = '2024-05-01'"


def test_unknown_reference_names_fail_before_submitting(tmp_path):
    from airflow_dq_contracts.version_compat import AirflowFailException

    (tmp_path / "c.yaml").write_text(CONTRACT)
    op = _check(tmp_path, contract="c.yaml", references={"rwa": "/x"})
    op.render_template_fields(_context())
    op.make_hook = lambda *a, **k: pytest.fail("submitted despite an unknown reference")  # type: ignore[method-assign]

    class TI:
        dag_id, run_id, task_id, map_index = "d", "r", "check", -1

    with pytest.raises(AirflowFailException, match="rwa, which the contract does not declare"):
        op.execute({"ti": TI()})
