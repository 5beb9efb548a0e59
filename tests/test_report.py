"""The HTML report as a reader of the Delta tables (delta-rs; no Spark, no Airflow).

The tables are written by ``scripts/report_demo.py`` in the fixed layouts; expectations are
computed here from the rows it wrote, in plain Python. The page is parsed with the standard
library's HTML parser, so an escaping mistake shows up as an element that should not exist.
"""

from __future__ import annotations

import datetime as dt
import html.parser
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from airflow_dq_contracts.cli.main import main as cli_main
from airflow_dq_contracts.report import build_report, load_report_data
from airflow_dq_contracts.report.data import MAX_POINTS, ReportDataError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import report_demo  # noqa: E402

sys.path.remove(str(ROOT / "scripts"))

UTC = dt.timezone.utc


class Page(html.parser.HTMLParser):
    """Elements and text of a page, as a browser's parser would see them."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        self.attrs.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.text).append(data)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return report_demo.write_demo_tables(tmp_path_factory.mktemp("report"), runs=40)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return report_demo.write_demo_tables(tmp_path_factory.mktemp("hostile"), runs=12, hostile=True)


def _last_run(tables) -> list[dict]:
    return [r for r in tables.result_rows if r["run_id"] == tables.last_run_id]


def test_latest_run_by_default_with_one_row_per_check_and_the_decision_by_hand(demo):
    data = load_report_data(demo.results, report_demo.CONTRACT, days=30)
    rows = _last_run(demo)
    assert data.result.run_id == demo.last_run_id
    assert sorted(c.check_id for c in data.result.checks) == sorted(r["check_id"] for r in rows)
    # DESIGN §6 by hand: the last run fails the P0 uniqueness check (gate).
    assert any(r["action"] == "gate" and r["status"] != "passed" for r in rows)
    assert data.result.decision == "gate"
    page = Page(build_report(demo.results, report_demo.CONTRACT))
    body_rows = [a for tag, a in page.attrs if tag == "tr" and "data-status" in a]
    assert len(body_rows) == len(rows)
    assert Counter(a["data-status"] for a in body_rows) == Counter(r["status"] for r in rows)
    decision = [a for tag, a in page.attrs if a.get("id") == "decision"]
    assert decision and "gate" in decision[0]["class"]


def test_history_window_counts_points_per_check_and_the_band(demo):
    days = 10
    data = load_report_data(demo.results, report_demo.CONTRACT, days=days)
    end = max(r["reference_time"] for r in _last_run(demo))
    for check_id, history in data.history.items():
        expected = sorted(
            (r["reference_time"], r["metric_value"])
            for r in demo.result_rows
            if r["check_id"] == check_id and end - dt.timedelta(days=days) <= r["reference_time"] <= end
        )
        assert [(t, v) for t, v in zip(history.at, history.metric_value)] == expected[-MAX_POINTS:]
    band = data.history["_table_/row_count"]
    assert set(band.expected_min) == {9_500.0} and set(band.expected_max) == {10_500.0}
    page = build_report(demo.results, report_demo.CONTRACT, days=days)
    assert page.count("<svg") == len(data.history)  # one chart per check, inline
    assert "#90caf9" in page  # the band is drawn (BAND_COLOR)
    # Self-contained: nothing fetched (no src/href to a server, no stylesheet link, no @import).
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page) and "<link" not in page
    assert "@import" not in page


def test_an_older_run_and_its_quarantine_sample(demo):
    older = sorted({r["run_id"] for r in demo.result_rows} - {demo.last_run_id})[0]
    data = load_report_data(demo.results, report_demo.CONTRACT, run_id=older)
    assert data.result.run_id == older
    assert data.samples == {c: [] for c in data.samples}  # none of its rows are in quarantine
    latest = load_report_data(demo.results, report_demo.CONTRACT, sample_rows=20)
    assert latest.quarantine_table == demo.quarantine  # found through the registry
    assert latest.quarantine_rows == len(demo.quarantine_rows)
    for check_id, sample in latest.samples.items():
        broken = [q for q in demo.quarantine_rows if any(v["check_id"] == check_id for v in q["_dq_violations"])]
        assert [s["order_id"] for s in sample] == [q["order_id"] for q in broken][:20]
    assert latest.registry["owner"] == "checkout-team@example.com"


def test_hostile_values_render_as_text(hostile):
    page_text = build_report(hostile.results, report_demo.CONTRACT)
    page = Page(page_text)
    assert page.tags["script"] == 1  # only the report's own script
    assert page.tags["img"] == 0  # the onerror payload stayed text
    text = "".join(page.text)
    assert report_demo.HOSTILE_SCRIPT in text
    assert report_demo.HOSTILE_ATTR in text
    # 100k-character values are cut for display, with their full length stated — never dropped silently:
    # the check name at 500 characters, a quarantined value at 200.
    long_name = "long " + report_demo.LONG
    assert long_name[:500] + f"… ({len(long_name):,} characters)" in text
    assert report_demo.LONG[:200] + f"… ({len(report_demo.LONG):,} characters)" in text
    assert max(len(run) for run in re.findall("x+", text)) <= 500
    assert "window.__pwned" not in "".join(page.scripts)
    csp = [a for tag, a in page.attrs if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert (
        csp
        and "script-src 'sha256-" in csp[0]["content"]
        and "unsafe-inline" not in csp[0]["content"].split("script-src")[1]
    )


def test_cli_writes_the_report_and_fails_cleanly(demo, tmp_path, capsys):
    out = tmp_path / "r.html"
    code = cli_main(
        ["report", "--results-table", demo.results, "--contract", report_demo.CONTRACT, "--days", "7", "-o", str(out)]
    )
    assert code == 0 and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    code = cli_main(
        [
            "report",
            "--results-table",
            demo.results,
            "--contract",
            report_demo.CONTRACT,
            "--run-id",
            "no-such-run",
            "-o",
            str(tmp_path / "x.html"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 4 and "no run 'no-such-run' of contract 'orders'" in err and "Traceback" not in err
    code = cli_main(
        ["report", "--results-table", str(tmp_path / "missing"), "--contract", "orders", "-o", str(tmp_path / "y.html")]
    )
    assert code == 4 and "does not exist" in capsys.readouterr().err
    with pytest.raises(ReportDataError):
        load_report_data(demo.results, "no_such_contract")


def test_a_quarantine_table_not_written_yet_is_no_samples_not_an_error(demo, tmp_path, capsys):
    """A contract that never quarantined a row has no quarantine table: its report says 0 rows, exit 0."""
    never = tmp_path / "dq_quarantine" / "orders"
    out = tmp_path / "clean.html"
    args = ["report", "--results-table", demo.results, "--contract", report_demo.CONTRACT]
    code = cli_main([*args, "--quarantine-table", str(never), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.strip() == str(out) and captured.err == ""
    assert not never.exists()
    page = Page(out.read_text(encoding="utf-8"))
    assert page.tags["tr"] - 1 == len(_last_run(demo))  # every check of the run, no sample table
    assert 'class="sample"' not in out.read_text(encoding="utf-8")
    data = load_report_data(demo.results, report_demo.CONTRACT, quarantine_table=str(never))
    assert data.quarantine_rows == 0 and data.sample_columns == []
    assert all(rows == [] for rows in data.samples.values())


def test_the_report_imports_neither_airflow_nor_pyspark_and_the_registry_sink_no_airflow(demo, tmp_path):
    import subprocess

    def modules_after(statement: str) -> set[str]:
        code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
        return set(out.stdout.split())

    def loaded(mods: set[str], package: str) -> bool:
        return any(m == package or m.startswith(package + ".") for m in mods)

    report = modules_after(
        f"from airflow_dq_contracts.report import build_report; build_report({demo.results!r}, 'orders')"
    )
    assert not loaded(report, "airflow") and not loaded(report, "pyspark") and loaded(report, "matplotlib")
    sink = modules_after("import airflow_dq_contracts.store.results.spark_registry")
    assert not loaded(sink, "airflow") and loaded(sink, "pyspark")
