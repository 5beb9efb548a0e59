"""The verdict an asset event carries, the assets a check task updates, and the consumer's judgement — no Spark.

Expected values are computed here from the synthetic check records (the score's formula written out again),
and the consumer is judged on Airflow's own event objects (``AssetEventDagRunReferenceResult``, what a task
finds in ``triggering_asset_events``), not on stand-ins. The end-to-end half (Spark, the metadata database,
a real scheduler) is in ``test_assets_pipeline.py`` and ``test_assets_scheduler.py``.
"""

from __future__ import annotations

import airflow_fixtures  # noqa: F401  (first: sets AIRFLOW_HOME before anything imports airflow)

import datetime as dt
import json
from pathlib import Path

import pytest

from airflow_dq_contracts.operators import ContractCheckOperator, ContractVerdictOperator, contract_asset
from airflow_dq_contracts.operators.assets import (
    AIRFLOW_DQ_RESULT_KEY,
    MAX_CHECK_IDS,
    VERDICT_KEY,
    asset_uri,
    verdict_extra,
)
from airflow_dq_contracts.operators.verdict import judge

pytestmark = [pytest.mark.airflow]

UTC = dt.timezone.utc
WEIGHT = {"P0": 8, "P1": 4, "P2": 2, "P3": 1}


def _checks(n: int) -> list[dict]:
    """``n`` check records: every 7th failed (flag action every 3rd of those), every 11th errored."""
    out = []
    for i in range(n):
        status = "error" if i % 11 == 0 else "failed" if i % 7 == 0 else "passed"
        out.append(
            {
                "check_id": f"column_{i:04d}/a_reasonably_long_check_name_{i:04d}",
                "severity": f"P{i % 4}",
                "action": "flag" if i % 21 == 0 else "quarantine",
                "status": status,
                "message": "x" * 200,
                "reference_time": "2024-05-02T00:00:00Z",
            }
        )
    return out


def _summary(checks: list[dict]) -> dict:
    counts = {s: sum(1 for c in checks if c["status"] == s) for s in ("passed", "failed", "error")}
    return {
        "run_id": "dq-abc",
        "contract": {"name": "orders", "version": "2.1.0"},
        "dataset": "/data/orders",
        "row_count": 40,
        "status": "error",
        "decision": "quarantine",
        "counts": counts,
        "failed_by_severity": {"P0": 1, "P1": 0, "P2": 0, "P3": 0},
        "quarantine": {"table": "/wh/q", "rows": 3},
        "valid": {"table": "/wh/v", "rows": 37},
        "results_table": "/wh/dq_results",
        "filter": "order_date = '2024-05-01'",
        "report": "file:///wh/dq_reports/orders/dq-abc.html",
        "checks": checks,
    }


def test_the_verdict_of_a_thousand_checks_is_compact_json_with_exact_counts_and_score():
    checks = _checks(1000)
    extra = verdict_extra(_summary(checks), results_version=12, airflow={"dag_id": "d", "run_id": "r"})
    text = json.dumps(extra)
    assert len(text.encode()) < 16 * 1024  # well under 64 KB: checks are counted, not copied
    verdict = extra[VERDICT_KEY]
    not_passed = [c for c in checks if c["status"] != "passed"]
    assert verdict["schema_version"] == 1
    assert verdict["counts"] == {
        "passed": sum(c["status"] == "passed" for c in checks),
        "failed": sum(c["status"] == "failed" for c in checks),
        "error": sum(c["status"] == "error" for c in checks),
        "total": 1000,
    }
    assert verdict["failed_checks_total"] == len(not_passed) > MAX_CHECK_IDS
    assert len(verdict["failed_checks"]) == MAX_CHECK_IDS
    # worst first: the P0 checks that did not pass lead the capped list
    p0 = sorted(c["check_id"] for c in not_passed if c["severity"] == "P0")
    assert verdict["failed_checks"] == p0[:MAX_CHECK_IDS]
    weights = sum(WEIGHT[c["severity"]] for c in checks)
    assert verdict["score"] == round(sum(WEIGHT[c["severity"]] for c in checks if c["status"] == "passed") / weights, 4)
    assert verdict["reference_time"] == "2024-05-02T00:00:00Z"  # from the rows when not given
    assert verdict["results"] == {"table": "/wh/dq_results", "version": 12}
    assert (verdict["contract"], verdict["run_id"], verdict["decision"]) == (
        {"name": "orders", "version": "2.1.0"},
        "dq-abc",
        "quarantine",
    )
    assert verdict["report"] == "file:///wh/dq_reports/orders/dq-abc.html"
    convention = extra[AIRFLOW_DQ_RESULT_KEY]
    assert convention["score"] == verdict["score"] and convention["run_uid"] == "dq-abc"
    assert convention["ruleset"] == "orders" and convention["table"] == "/data/orders"
    assert convention["warned"] == sum(c["status"] == "failed" and c["action"] == "flag" for c in checks)
    assert convention["failed"] == sum(c["status"] == "failed" and c["action"] != "flag" for c in checks)
    assert convention["errored"] == verdict["counts"]["error"]
    assert len(convention["failed_rules"]) <= MAX_CHECK_IDS


def test_asset_uris_are_named_as_openlineage_names_datasets():
    assert asset_uri("s3a://lake/silver/orders/") == "s3://lake/silver/orders"
    assert asset_uri("s3://lake/silver/orders") == "s3://lake/silver/orders"
    assert asset_uri("gs://b/t") == "gs://b/t"
    assert asset_uri("file:///data/orders") == "file:///data/orders"
    assert asset_uri("/data/my orders") == "file:///data/my%20orders"
    assert asset_uri("silver.orders", "/wh") == "file:///wh/silver.db/orders"
    assert asset_uri("orders", "s3://lake/wh") == "s3://lake/wh/orders"
    asset = contract_asset("/data/valid/orders")
    assert (asset.name, asset.uri) == ("file:///data/valid/orders", "file:///data/valid/orders")


def _dag(tmp_path: Path):
    from airflow.sdk import DAG

    return DAG(
        "dq_assets_unit",
        schedule=None,
        start_date=dt.datetime(2024, 1, 1, tzinfo=UTC),
        template_searchpath=[str(tmp_path)],
    )


def test_emit_asset_derives_the_valid_table_else_the_dataset_else_the_contracts(tmp_path):
    from airflow.sdk import Asset

    (tmp_path / "orders.yaml").write_text("name: orders\ndataset:\n  path: s3a://lake/silver/orders\n")
    declared = Asset("x-team://orders-checked")
    with _dag(tmp_path):
        valid = ContractCheckOperator(
            task_id="valid",
            contract="orders.yaml",
            input_path="/in",
            valid_table="/out/valid",
            emit_asset=True,
            outlets=[declared],
        )
        dataset = ContractCheckOperator(task_id="dataset", contract="orders.yaml", input_path="/in", emit_asset=True)
        from_contract = ContractCheckOperator(task_id="contract", contract="orders.yaml", emit_asset=True)
        plain = ContractCheckOperator(task_id="plain", contract="orders.yaml", input_path="/in")
        mapped = ContractCheckOperator.partial(
            task_id="mapped", table="silver.orders", warehouse="/wh", emit_asset=True
        ).expand(contract=[{"name": "a"}, {"name": "b"}])
    assert [a.uri for a in valid.outlets] == ["x-team://orders-checked", "file:///out/valid"]
    assert [a.uri for a in dataset.outlets] == ["file:///in"]
    assert [a.uri for a in from_contract.outlets] == ["s3://lake/silver/orders"]
    assert plain.outlets == []
    assert [a.uri for a in mapped.outlets] == ["file:///wh/silver.db/orders"]  # known at parse time


def test_emit_asset_refuses_what_it_cannot_know_when_the_dag_is_parsed(tmp_path):
    (tmp_path / "nodataset.yaml").write_text("name: orders\n")
    with _dag(tmp_path):
        with pytest.raises(ValueError, match=r"templated input_path \('/in/\{\{ ds \}\}'\).*outlets=\[Asset"):
            ContractCheckOperator(task_id="t", contract="nodataset.yaml", input_path="/in/{{ ds }}", emit_asset=True)
        with pytest.raises(ValueError, match="needs the dataset's location when the DAG is parsed"):
            ContractCheckOperator(task_id="u", contract="nodataset.yaml", emit_asset=True)
        with pytest.raises(ValueError, match="needs the dataset's location"):
            ContractCheckOperator.partial(task_id="m", emit_asset=True).expand(contract=["a.yaml", "b.yaml"])


def _event(extra: dict, *, map_index: int = -1, run_id: str = "scheduled__2024-05-02"):
    from airflow.sdk.execution_time.comms import AssetEventDagRunReferenceResult

    return AssetEventDagRunReferenceResult(
        asset={"name": "file:///wh/valid", "uri": "file:///wh/valid", "extra": {}},
        extra=extra,
        source_task_id="check_orders",
        source_dag_id="producer",
        source_run_id=run_id,
        source_map_index=map_index,
        source_aliases=[],
        timestamp=dt.datetime(2024, 5, 2, tzinfo=UTC),
    )


def _verdict(decision: str, run_id: str = "dq-1", **more) -> dict:
    return {
        VERDICT_KEY: {
            "schema_version": 1,
            "decision": decision,
            "run_id": run_id,
            "contract": {"name": "orders", "version": "2.1.0"},
            "score": 0.9,
            **more,
        }
    }


def test_a_consumer_accepts_up_to_its_decision_and_names_the_run_that_stopped_it():
    passed, quarantined = _event(_verdict("pass")), _event(_verdict("quarantine", "dq-2"))
    gated = _event(
        _verdict("gate", "dq-3", failed_checks=["order_id/order_id_is_unique"], failed_checks_total=3), map_index=2
    )
    assert judge([passed], "pass").proceed
    assert judge([passed, quarantined], "quarantine").proceed
    assert [v["run_id"] for v in judge([passed, quarantined], "quarantine").verdicts] == ["dq-1", "dq-2"]
    refused = judge([passed], "pass"), judge([quarantined], "pass"), judge([passed, gated], "quarantine")
    assert [j.proceed for j in refused] == [True, False, False]
    assert refused[2].reason == (
        "file:///wh/valid was updated by DAG run producer/scheduled__2024-05-02, task check_orders[2] "
        "(contract orders 2.1.0, run dq-3) with decision GATE; this consumer accepts pass, quarantine; "
        "checks not passed: order_id/order_id_is_unique (+2 more)"
    )
    # fail closed: no event, an event without a verdict, a verdict of a newer layout
    assert not judge([], "quarantine").proceed
    bare = judge([_event({"row_count": 3})], "quarantine")
    assert not bare.proceed and "with no contract verdict" in bare.reason
    newer = judge([_event({VERDICT_KEY: {"schema_version": 2, "decision": "pass"}})], "quarantine")
    assert not newer.proceed and "schema version 2" in newer.reason
    with pytest.raises(ValueError, match="accept must be 'pass' or 'quarantine'"):
        judge([passed], "gate")


def test_the_verdict_operator_declares_its_asset_as_an_inlet_and_checks_its_arguments(tmp_path):
    asset = contract_asset("/wh/valid")
    with _dag(tmp_path):
        gate = ContractVerdictOperator(task_id="gate", asset=asset, accept="quarantine")
        with pytest.raises(ValueError, match="on_refuse must be 'skip' or 'fail'"):
            ContractVerdictOperator(task_id="bad", asset=asset, on_refuse="ignore")
    assert gate.inlets == [asset]
