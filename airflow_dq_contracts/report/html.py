"""Render :class:`~airflow_dq_contracts.report.data.ReportData` as one self-contained HTML page.

Self-contained: no CDN, no external file, no server — styles, script and charts (inline SVG) are in
the page, so it opens offline and as an e-mail attachment.

Safety: every value that comes from a contract, the data or the results (check names, messages,
quarantined values) is HTML-escaped and shown as text; very long values are cut for display
(``MAX_TEXT`` characters, the full length is stated). The page also carries a Content-Security-Policy
that allows only its own script (by hash), so even a value that slipped through could not run.

Example::

    html_text = render_report(load_report_data("/wh/dq_results", "orders"))
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import math
from collections.abc import Iterable
from typing import Any

from airflow_dq_contracts.results import SEVERITIES, format_time, utcnow

from .charts import trend_svg
from .data import ReportData

__all__ = ["render_report"]

#: Characters of one value shown in a cell; longer values are cut (their length is stated).
MAX_TEXT = 500
MAX_SAMPLE_TEXT = 200

_SCRIPT = """(function () {
  var table = document.getElementById("checks");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var query = document.getElementById("filter");
  var status = document.getElementById("status-filter");
  var shown = document.getElementById("shown");
  function apply() {
    var text = query.value.toLowerCase(), wanted = status.value, count = 0;
    rows.forEach(function (row) {
      var ok = (!wanted || row.getAttribute("data-status") === wanted) &&
               (!text || row.getAttribute("data-search").indexOf(text) >= 0);
      row.hidden = !ok;
      if (ok) { count += 1; }
    });
    shown.textContent = String(count);
  }
  query.addEventListener("input", apply);
  status.addEventListener("change", apply);
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (head, index) {
    var kind = head.getAttribute("data-kind");
    if (!kind) { return; }
    head.addEventListener("click", function () {
      var ascending = head.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      head.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      function key(row) {
        var raw = row.cells[index].getAttribute("data-v") || "";
        if (kind !== "num") { return raw.toLowerCase(); }
        return raw === "" ? -Infinity : parseFloat(raw);
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var order = x < y ? -1 : (x > y ? 1 : 0);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  apply();
})();"""

_STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2329;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}h3{font-size:14px;margin:18px 0 6px}
.meta{color:#52606d;margin:0 0 12px}.badge{display:inline-block;padding:2px 10px;border-radius:10px;
font-weight:600;color:#fff;text-transform:uppercase;font-size:12px}.pass,.passed{background:#2e7d32}
.quarantine{background:#ef6c00}.gate,.failed,.error{background:#c62828}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}.card{border:1px solid #d9e2ec;border-radius:6px;
padding:8px 12px;min-width:110px}.card b{display:block;font-size:18px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:1px 14px;margin:6px 0;font-size:13px}dl.facts dt{color:#52606d}
dl.facts dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #e4e7eb;padding:4px 6px;text-align:left;
vertical-align:top;overflow-wrap:break-word}th{background:#f5f7fa;position:sticky;top:0;white-space:nowrap}
td.wide{min-width:11em;max-width:24em}.badge{white-space:nowrap}
.columns{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:0 32px}
th[data-kind]{cursor:pointer}th[aria-sort=ascending]::after{content:" \\25B2"}
th[aria-sort=descending]::after{content:" \\25BC"}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.chart svg{width:230px;height:auto;display:block}.small{font-size:12px;color:#52606d}
.controls{display:flex;gap:8px;align-items:center;margin:8px 0}input,select{font:inherit;padding:3px 6px}
pre{background:#f5f7fa;padding:10px;overflow:auto;max-height:400px;white-space:pre-wrap;overflow-wrap:anywhere}
table.sample td{font-family:ui-monospace,monospace;font-size:12px}
"""


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    """``value`` as escaped HTML text, cut to ``limit`` characters (with the full length stated)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        return html.escape(text[:limit]) + f'<span class="small">… ({len(text):,} characters)</span>'
    return html.escape(text)


def _attr(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _number(value: float | int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:,.6g}" if abs(value) < 1e15 else f"{value:.6g}"
    return f"{value:,}"


def _band(low: float | None, high: float | None) -> str:
    if low is None and high is None:
        return ""
    return f"[{_number(low) if low is not None else '−∞'}, {_number(high) if high is not None else '∞'}]"


def _facts(pairs: Iterable[tuple[str, Any]]) -> str:
    items = [
        f"<dt>{html.escape(label)}</dt><dd>{_text(value)}</dd>"
        for label, value in pairs
        if value not in (None, "", [], ())
    ]
    return f'<dl class="facts">{"".join(items)}</dl>' if items else ""


def _when(value: dt.datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def _header(data: ReportData, report_link: str | None) -> str:
    result, registry = data.result, data.registry or {}
    decision = result.decision
    counts = result.counts()
    failed = result.failed_by_severity()
    cards = [
        ("decision", f'<span class="badge {decision}">{html.escape(decision)}</span>'),
        ("rows", _number(result.row_count)),
        ("passed", _number(counts["passed"])),
        ("failed", _number(counts["failed"])),
        ("error", _number(counts["error"])),
    ]
    if data.quarantine_rows is not None:
        cards.append(("quarantined rows", _number(data.quarantine_rows)))
    cards.extend((f"failed {s}", _number(failed[s])) for s in SEVERITIES if failed[s])
    card_html = "".join(
        f'<div class="card" data-card="{_attr(label)}"><span class="small">{html.escape(label)}'
        f"</span><b>{value}</b></div>"
        for label, value in cards
    )
    contract_facts = _facts(
        [
            ("version", result.contract_version),
            ("owner", registry.get("owner")),
            ("domain", registry.get("domain")),
            ("consumers", ", ".join(registry.get("consumers") or [])),
            ("support contact", registry.get("sla_support_contact")),
            ("escalation policy", registry.get("sla_escalation_policy")),
            ("freshness SLA (hours)", _number(registry.get("sla_freshness_hours"))),
            ("max latency (minutes)", _number(registry.get("sla_max_latency_minutes"))),
            ("availability target", _number(registry.get("sla_availability_target"))),
            ("delivery deadline (UTC)", registry.get("sla_delivery_deadline_utc")),
            ("description", registry.get("description")),
            ("contract text hash", registry.get("contract_hash")),
            ("first run", _when(registry.get("first_run_at"))),
        ]
    )
    run_facts = _facts(
        [
            ("run id", result.run_id),
            ("dataset", result.dataset),
            ("evaluated at", _when(result.finished_at)),
            ("reference time", _when(next((c.reference_time for c in result.checks if c.reference_time), None))),
            ("filter", next((c.filter for c in result.checks if c.filter), None)),
            (
                "Airflow",
                " / ".join(
                    x for x in (result.checks[0].dag_id, result.checks[0].airflow_run_id, result.checks[0].task_id) if x
                )
                or None,
            ),
            ("results table", result.results_table),
            ("quarantine table", data.quarantine_table),
            ("this report", report_link),
        ]
    )
    return (
        f'<header><h1>{_text(result.contract_name)} <span class="badge {decision}" id="decision">'
        f"{html.escape(decision)}</span></h1>"
        f'<p class="meta">Data quality report · contract version {_text(result.contract_version or "—")}'
        f" · run {_text(result.run_id)}</p></header>"
        f'<section class="cards">{card_html}</section>'
        f'<div class="columns"><section><h2>Contract</h2>'
        f"{contract_facts or '<p class=small>No registry entry for this contract.</p>'}</section>"
        f"<section><h2>Run</h2>{run_facts}</section></div>"
    )


_COLUMNS = (
    ("Check", "text"),
    ("Column", "text"),
    ("Type", "text"),
    ("Severity", "text"),
    ("Action", "text"),
    ("Status", "text"),
    ("Metric", "num"),
    ("Validator", "text"),
    ("Expected band", None),
    ("Failed rows", "num"),
    ("Message", "text"),
    ("Trend", None),
)


def _checks_table(data: ReportData) -> str:
    head = "".join(
        f"<th{f' data-kind={chr(34)}{kind}{chr(34)}' if kind else ''}>{name}</th>" for name, kind in _COLUMNS
    )
    body = []
    # Failed and errored checks first, most severe first: what a reader opened the report for.
    ordered = sorted(data.result.checks, key=lambda c: (c.status == "passed", c.severity or "", c.check_id))
    for check in ordered:
        history = data.history.get(check.check_id)
        chart = trend_svg(history) if history is not None else ""
        points = len(history.at) if history is not None else 0
        search = " ".join(
            str(x)
            for x in (
                check.check_name,
                check.check_id,
                check.column,
                check.check_type,
                check.severity,
                check.action,
                check.status,
                check.message,
            )
            if x
        )
        cells = [
            (
                check.check_name,
                f"<b>{_text(check.check_name)}</b><br><span class=small>{_text(check.check_id)}</span>",
                "wide",
            ),
            (check.column, _text(check.column), ""),
            (check.check_type, _text(check.check_type), ""),
            (check.severity, _text(check.severity), ""),
            (check.action, _text(check.action), ""),
            (check.status, f'<span class="badge {_attr(check.status)}">{_text(check.status)}</span>', ""),
            ("" if check.metric_value is None else repr(check.metric_value), _number(check.metric_value), "num"),
            (check.validator, _text(check.validator), ""),
            (None, _band(check.expected_min, check.expected_max), ""),
            ("" if check.failed_rows is None else str(check.failed_rows), _number(check.failed_rows), "num"),
            (check.message, _text(check.message), "wide"),
            (
                None,
                (chart + f'<span class="small">{points} run{"s" if points != 1 else ""} in {data.days} days</span>')
                if chart
                else '<span class="small">no numeric history</span>',
                "chart",
            ),
        ]
        tds = "".join(
            f'<td{f" class={chr(34)}{css}{chr(34)}" if css else ""} data-v="{_attr(v)}">{content}</td>'
            for v, content, css in cells
        )
        body.append(f'<tr data-status="{_attr(check.status)}" data-search="{_attr(search.lower())}">{tds}</tr>')
    statuses = "".join(f'<option value="{s}">{s}</option>' for s in ("passed", "failed", "error"))
    counted = f' <span class="small">{_text(str(data.check_count))}</span>' if data.check_count else ""
    return (
        f"<h2>Checks{counted}</h2>"
        '<div class="controls"><input id="filter" type="search" placeholder="Filter checks…" '
        'aria-label="Filter checks"><select id="status-filter" aria-label="Status">'
        f'<option value="">any status</option>{statuses}</select>'
        f'<span class="small"><span id="shown">{len(body)}</span> of {len(body)} checks</span></div>'
        f'<table id="checks"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def _samples(data: ReportData) -> str:
    blocks = []
    names = {c.check_id: c.check_name for c in data.result.checks}
    for check_id, rows in data.samples.items():
        if not rows:
            continue
        head = "".join(f"<th>{_text(c, MAX_SAMPLE_TEXT)}</th>" for c in data.sample_columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{_text(row.get(c), MAX_SAMPLE_TEXT)}</td>" for c in data.sample_columns) + "</tr>"
            for row in rows
        )
        blocks.append(
            f'<h3>{_text(names.get(check_id, check_id))} <span class="small">{_text(check_id)} · '
            f"first {len(rows)} rows</span></h3>"
            f'<table class="sample" data-check="{_attr(check_id)}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>"
        )
    if not blocks:
        return ""
    total = f" ({_number(data.quarantine_rows)} rows quarantined by this run)" if data.quarantine_rows else ""
    return f"<h2>Quarantined rows{total}</h2>" + "".join(blocks)


def render_report(data: ReportData, *, report_link: str | None = None, generated_at: dt.datetime | None = None) -> str:
    """The report page as a string (UTF-8 HTML5).

    ``report_link`` is where the page will be published (shown for reference);
    ``generated_at`` defaults to now.

    Example::

        page = render_report(load_report_data("/wh/dq_results", "orders"))
        Path("report.html").write_text(page, encoding="utf-8")
    """
    script_hash = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")
    policy = (
        f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{script_hash}'; base-uri 'none'; form-action 'none'"
    )
    registry = data.registry or {}
    contract_text = registry.get("contract_text")
    text_block = (
        (
            f"<h2>Contract text</h2><details><summary>{_text(registry.get('contract_hash'))}</summary>"
            f"<pre>{html.escape(contract_text)}</pre></details>"
        )
        if contract_text
        else ""
    )
    generated = format_time(generated_at or utcnow())
    title = f"{data.result.contract_name} · {data.result.decision} · data quality report"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_attr(policy)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(title, 200)}</title><style>{_STYLE}</style></head><body>"
        f"{_header(data, report_link)}{_checks_table(data)}{_samples(data)}{text_block}"
        f'<p class="small">Generated {html.escape(generated or "")} by airflow-dq-contracts from '
        f"{_text(data.result.results_table)}.</p>"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
