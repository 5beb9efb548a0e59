"""Demo tables for the HTML report, and the headless-Chromium driver that checks and screenshots it.

Used by the report tests, the benchmark and the README screenshot — the same code each time::

    .venv/bin/python scripts/report_demo.py docs/images/report.png     # regenerate the README image

* :func:`write_demo_tables` writes a results table with ``runs`` daily runs of an ``orders``
  contract (``checks`` checks each, some failing, a baseline band on the row count), the contract
  registry beside it and the last run's quarantined rows — with delta-rs, in the fixed layouts, so
  the report is tested as the reader it is, on rows whose expected values the caller knows.
  ``hostile=True`` puts ``<script>``, quotes and 100k-character strings in names, messages and data.
* :func:`open_in_chromium` opens a report in the system Chromium (Debian's ``chromium``, driven by
  Playwright over the DevTools protocol — no browser download), collects console errors, counts
  rows, exercises the filter, and saves a screenshot.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any

UTC = dt.timezone.utc
CONTRACT = "orders"
VERSION = "2.1.0"
HOSTILE_SCRIPT = "<script>window.__pwned = 1</script>"
HOSTILE_ATTR = '"\'><img src=x onerror="window.__pwned=2">'
LONG = "x" * 100_000

# (check_id, name, type, column, severity, action, row-level)
BASE_CHECKS = [
    ("_table_/row_count", "Row count in baseline", "row_count", None, "P1", "gate", False),
    ("order_id/order_id_is_unique", "Order ID is unique", "duplicates", "order_id", "P0", "gate", True),
    ("amount/amount_in_range", "Amount in range", "between", "amount", "P1", "quarantine", True),
    ("status/status_is_valid", "Status is valid", "whitelist", "status", "P1", "quarantine", True),
    ("email/email_format", "E-mail format", "pattern", "email", "P2", "flag", True),
    ("created_at/fresh", "Fresh within 4 hours", "freshness", "created_at", "P1", "gate", False),
    ("amount/amount_mean", "Mean amount", "mean", "amount", "P3", "flag", False),
]


@dataclasses.dataclass
class DemoTables:
    """Where the demo tables are, and the rows written (for expectations computed by the caller)."""

    results: str
    registry: str
    quarantine: str
    result_rows: list[dict[str, Any]]
    quarantine_rows: list[dict[str, Any]]
    last_run_id: str


def _checks(count: int, hostile: bool) -> list[tuple[Any, ...]]:
    checks = list(BASE_CHECKS[:count])
    for index in range(len(checks), count):
        checks.append((f"c{index}/metric_{index}", f"Metric {index}", "mean", f"c{index}", "P3", "flag", False))
    if hostile:
        checks[1] = ("order_id/" + HOSTILE_SCRIPT, HOSTILE_SCRIPT + " unique", *checks[1][2:])
        checks[2] = ("amount/" + HOSTILE_ATTR, "Amount " + HOSTILE_ATTR, *checks[2][2:])
        checks[-1] = (checks[-1][0], "long " + LONG, *checks[-1][2:])
    return checks


def arrow_schema(columns: Any) -> Any:
    """A pyarrow schema for (name, Spark SQL type) pairs (timestamps as UTC microseconds, like Spark's)."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "bigint": pa.int64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "array<string>": pa.list_(pa.string()),
    }
    return pa.schema([(name, types[kind]) for name, kind in columns])


def write_demo_tables(
    folder: str | os.PathLike[str],
    *,
    runs: int = 30,
    checks: int = 7,
    hostile: bool = False,
    quarantined: int = 60,
    seed: int = 7,
    end: dt.datetime = dt.datetime(2024, 6, 1, tzinfo=UTC),
    step_minutes: int = 1440,
    keep_rows: bool = True,
) -> DemoTables:
    """Write results (``runs`` × ``checks`` rows), registry and quarantine tables under ``folder``.

    Runs are ``step_minutes`` apart and end at ``end``; the last run fails the uniqueness check
    (gate) and quarantines rows of the range and whitelist checks; the row-count check has a
    baseline band (``expected_min``/``expected_max``). ``keep_rows=False`` (benchmarks) does not
    keep the rows as Python dicts.
    """
    import pyarrow as pa
    from deltalake import write_deltalake

    from airflow_dq_contracts.results import RESULT_COLUMNS, VIOLATION_FIELDS, make_run_id
    from airflow_dq_contracts.store.results.registry import REGISTRY_COLUMNS, contract_text_hash

    root = Path(folder)
    rng = random.Random(seed)
    spec = _checks(checks, hostile)
    columns: dict[str, list[Any]] = {name: [] for name, _ in RESULT_COLUMNS}
    last_run_id = ""
    for index in range(runs):
        at = end - dt.timedelta(minutes=step_minutes * (runs - 1 - index))
        run_id = make_run_id("demo", CONTRACT, at.isoformat())
        last = index == runs - 1
        last_run_id = run_id
        row_count = 10_000 + rng.randint(-400, 400)
        for check_id, name, ctype, column, severity, action, row_level in spec:
            expected_min = expected_max = None
            failed_rows: int | None = None
            message = ""
            if ctype == "row_count":
                metric: float | None = float(row_count)
                expected_min, expected_max = 9_500.0, 10_500.0
                passed = expected_min <= metric <= expected_max
                validator = "baseline band"
            elif ctype == "duplicates":
                metric = float(2 if last or rng.random() < 0.1 else 0)
                passed, validator = metric == 0, "max 0"
                failed_rows = int(metric) * 2
            elif ctype in ("between", "whitelist", "pattern"):
                failed_rows = (
                    (17 if ctype == "between" else 9) if last else (rng.randint(1, 5) if rng.random() < 0.2 else 0)
                )
                metric = float(failed_rows)
                passed, validator = failed_rows == 0, "implicit: all conform"
            elif ctype == "freshness":
                metric = round(rng.uniform(0.5, 3.5), 3)
                passed, validator = metric <= 4, "max_age_hours 4"
            else:
                metric = round(50 + rng.gauss(0, 5), 4)
                passed, validator = True, "noop"
            status = "passed" if passed else "failed"
            if ctype == "freshness" and last and hostile:
                metric, status, passed = None, "error", False
                message = "column created_at missing " + HOSTILE_SCRIPT
            elif not passed:
                message = f"{name}: metric {metric} outside {validator}" + (
                    " " + LONG if hostile and ctype == "pattern" else ""
                )
            values = {
                "run_id": run_id,
                "contract_name": CONTRACT,
                "contract_version": VERSION,
                "dataset": "silver.orders",
                "check_id": check_id,
                "check_name": name,
                "check_type": ctype,
                "column": column,
                "severity": severity,
                "action": action,
                "validator": validator,
                "metric_value": metric,
                "status": status,
                "passed": passed,
                "failed_rows": failed_rows if row_level else None,
                "message": message,
                "row_count": row_count,
                "filter": None,
                "evaluated_at": at + dt.timedelta(minutes=5),
                "dag_id": "dq_orders_pipeline",
                "task_id": "check_orders",
                "airflow_run_id": f"scheduled__{at.date()}",
                "tags": ["demo"],
                "reference_time": at,
                "expected_min": expected_min,
                "expected_max": expected_max,
                "evaluated_from": "statistics" if ctype in ("num_rows", "freshness") else "scan",
            }
            for key in columns:  # a column the demo does not set (e.g. source_range: no incremental run) is NULL
                columns[key].append(values.get(key))
    results = pa.table(columns, schema=arrow_schema(RESULT_COLUMNS))
    results_path = root / "dq_results"
    write_deltalake(str(results_path), results, partition_by=["contract_name"], mode="overwrite")

    quarantine_path = root / "dq_quarantine" / CONTRACT
    qrows = []
    for number in range(quarantined):
        broken = [spec[2] if number % 3 else spec[3]]
        if number % 5 == 0:
            broken.append(spec[1])
        qrows.append(
            {
                "order_id": 1000 + number,
                "amount": -1.5 * number,
                "status": (
                    HOSTILE_SCRIPT
                    if hostile and number == 0
                    else HOSTILE_ATTR
                    if hostile and number == 1
                    else LONG
                    if hostile and number == 2
                    else "unknown"
                ),
                "_dq_run_id": last_run_id,
                "_dq_violations": [
                    {"check_id": c[0], "check_name": c[1], "check_type": c[2], "severity": c[4], "action": c[5]}
                    for c in broken
                ],
                "_dq_quarantined_at": end,
            }
        )
    violation = pa.struct([(field, pa.string()) for field in VIOLATION_FIELDS])
    qschema = pa.schema(
        [
            ("order_id", pa.int64()),
            ("amount", pa.float64()),
            ("status", pa.string()),
            ("_dq_run_id", pa.string()),
            ("_dq_violations", pa.list_(violation)),
            ("_dq_quarantined_at", pa.timestamp("us", tz="UTC")),
        ]
    )
    write_deltalake(str(quarantine_path), pa.Table.from_pylist(qrows, schema=qschema), mode="overwrite")

    text = f"name: {CONTRACT}\nversion: {VERSION}\nowner: checkout-team@example.com\n"
    registry = {
        "contract_name": CONTRACT,
        "contract_version": VERSION,
        "owner": "checkout-team@example.com",
        "domain": "commerce",
        "description": "Orders of the web shop" + (" " + HOSTILE_SCRIPT if hostile else ""),
        "consumers": ["analytics", "finance"],
        "tags": ["critical"],
        "dataset": "silver.orders",
        "sla_freshness_hours": 4.0,
        "sla_max_latency_minutes": 30.0,
        "sla_availability_target": 0.999,
        "sla_delivery_deadline_utc": "06:00",
        "sla_support_contact": "orders-oncall@example.com",
        "sla_escalation_policy": "page the checkout on-call, then #data-platform",
        "contract_hash": contract_text_hash(text),
        "contract_text": text,
        "first_run_at": end - dt.timedelta(minutes=step_minutes * (runs - 1)),
        "last_run_at": end,
        "last_run_id": last_run_id,
        "last_decision": "gate",
        "results_table": str(results_path),
        "quarantine_table": str(quarantine_path),
        "valid_table": None,
    }
    write_deltalake(
        str(root / "dq_contracts"),
        pa.Table.from_pylist([registry], schema=arrow_schema(REGISTRY_COLUMNS)),
        mode="overwrite",
    )
    return DemoTables(
        results=str(results_path),
        registry=str(root / "dq_contracts"),
        quarantine=str(quarantine_path),
        result_rows=results.to_pylist() if keep_rows else [],
        quarantine_rows=qrows,
        last_run_id=last_run_id,
    )


@dataclasses.dataclass
class BrowserView:
    """What Chromium saw: console errors, page errors, rows, rows left by each filter, charts."""

    console_errors: list[str]
    page_errors: list[str]
    rows: int
    visible_after_text_filter: int
    visible_after_status_filter: int
    charts: int
    pwned: Any
    first_after_sort: str
    screenshot: str | None


def chromium_path() -> str | None:
    """The system Chromium (Debian's ``chromium`` package), if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def open_in_chromium(
    html_path: str | os.PathLike[str],
    *,
    screenshot: str | os.PathLike[str] | None = None,
    text_filter: str = "",
    status_filter: str = "failed",
    width: int = 1500,
) -> BrowserView:
    """Load the report in headless Chromium and exercise it (see :class:`BrowserView`)."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    if executable is None:
        raise RuntimeError("chromium is not installed (Debian: apt-get install chromium; ./dev setup does it)")
    url = Path(html_path).resolve().as_uri()
    console_errors: list[str] = []
    page_errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on("console", lambda msg: console_errors.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))
            page.goto(url, wait_until="load")
            rows = page.locator("#checks tbody tr").count()
            charts = page.locator("#checks td.chart svg").count()
            shot = None
            if screenshot is not None:
                Path(screenshot).parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot), full_page=False)
                shot = str(screenshot)
            page.fill("#filter", text_filter)
            visible_text = page.locator("#checks tbody tr:not([hidden])").count()
            page.fill("#filter", "")
            page.select_option("#status-filter", status_filter)
            visible_status = page.locator("#checks tbody tr:not([hidden])").count()
            page.select_option("#status-filter", "")
            page.click("#checks thead th:has-text('Severity')")
            first = page.locator("#checks tbody tr").first.locator("td").nth(3).inner_text()
            pwned = page.evaluate("() => window.__pwned === undefined ? null : window.__pwned")
        finally:
            browser.close()
    return BrowserView(
        console_errors=console_errors,
        page_errors=page_errors,
        rows=rows,
        visible_after_text_filter=visible_text,
        visible_after_status_filter=visible_status,
        charts=charts,
        pwned=pwned,
        first_after_sort=first,
        screenshot=shot,
    )


def main(argv: list[str]) -> int:
    """Write demo tables, build their report, screenshot it to ``argv[0]`` (default docs/images/report.png)."""
    import tempfile

    from airflow_dq_contracts.report import build_report, write_report

    target = Path(argv[0] if argv else "docs/images/report.png")
    with tempfile.TemporaryDirectory() as folder:
        tables = write_demo_tables(folder, runs=30)
        page = build_report(tables.results, CONTRACT, days=30)
        html_path = write_report(page, os.path.join(folder, "report.html"))
        view = open_in_chromium(html_path, screenshot=target, text_filter="amount")
    if view.console_errors or view.page_errors:
        print(f"console errors: {view.console_errors + view.page_errors}", file=sys.stderr)
        return 1
    # A committed image: a 128-colour palette keeps it small (the page is flat colours and text).
    from PIL import Image

    with Image.open(target) as image:
        image.convert("RGB").quantize(colors=128).save(target, optimize=True)
    print(f"{target}: {view.rows} checks, {view.charts} charts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
