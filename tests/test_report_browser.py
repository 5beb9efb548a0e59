"""The HTML report in a real headless Chromium (Debian's ``chromium``; ``./dev setup`` installs it).

Driven by ``scripts/report_demo.py`` — the same code that makes the README screenshot. The page
must load without console errors, show one row per result, filter by text and by status, sort,
carry its charts, and run none of the hostile values it displays. The screenshot is kept as a test
artifact in ``$DQ_TEST_ARTIFACTS`` (default ``.work/test-artifacts``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from ci_guard import require

from airflow_dq_contracts.report import build_report, write_report

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import report_demo  # noqa: E402

sys.path.remove(str(ROOT / "scripts"))

ARTIFACTS = Path(os.environ.get("DQ_TEST_ARTIFACTS", ROOT / ".work" / "test-artifacts"))


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require(report_demo.chromium_path() is not None, "chromium", "./dev setup installs it (apt-get install chromium)")


@pytest.mark.parametrize("hostile", [False, True], ids=["demo", "hostile"])
def test_report_in_chromium(tmp_path, hostile):
    tables = report_demo.write_demo_tables(tmp_path / "tables", runs=20, hostile=hostile)
    last = [r for r in tables.result_rows if r["run_id"] == tables.last_run_id]
    page = write_report(build_report(tables.results, report_demo.CONTRACT, days=30), str(tmp_path / "report.html"))
    shot = ARTIFACTS / f"report-{'hostile' if hostile else 'demo'}.png"
    view = report_demo.open_in_chromium(page, screenshot=shot, text_filter="amount", status_filter="failed")

    assert view.console_errors == [] and view.page_errors == []
    assert view.rows == len(last)

    # Expected counts by hand from the rows written: the text filter matches name/id/column/type/...
    def searchable(r):
        return " ".join(
            str(x)
            for x in (
                r["check_name"],
                r["check_id"],
                r["column"],
                r["check_type"],
                r["severity"],
                r["action"],
                r["status"],
                r["message"],
            )
            if x
        ).lower()

    assert view.visible_after_text_filter == sum("amount" in searchable(r) for r in last) > 0
    assert view.visible_after_status_filter == sum(r["status"] == "failed" for r in last) > 0
    numeric = {r["check_id"] for r in tables.result_rows if r["metric_value"] is not None}
    assert view.charts == len({r["check_id"] for r in last} & numeric)
    assert view.first_after_sort == min(r["severity"] for r in last)  # ascending by severity
    assert view.pwned is None  # no hostile value ran
    assert shot.is_file() and shot.stat().st_size > 10_000
