"""The UI's pages as server-rendered HTML: no script, no CDN, no external file — inline CSS and SVG only.

Every value from a contract, the data or the results is HTML-escaped (:func:`_text`) and every link
built from one is percent-encoded (:func:`_path`), so a contract named ``<script>…`` is shown, never run;
the API server also sends a Content-Security-Policy that allows no script at all on these pages.
Filtering and sorting are links and a GET form (query parameters), so they work without JavaScript.

Example::

    page = contracts_page(view.contracts(access), Listing(), prefix="/dq-contracts", source="s3://lake/dq_results")
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Any

from airflow_dq_contracts.results import DECISIONS
from airflow_dq_contracts.ui.views import SORTABLE, ContractDetail, ContractRow, RunSummary

__all__ = [
    "HEADER_POLICY",
    "PAGE_POLICY",
    "Listing",
    "contract_page",
    "contracts_page",
    "message_page",
    "run_page",
    "task_page",
]

#: Content-Security-Policy of the pages (in a meta element): inline styles, data: images, no script, forms to
#: this server.
PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'"
#: The same as a response header, which may also say who may frame the page (Airflow's UI, same origin).
HEADER_POLICY = PAGE_POLICY + "; frame-ancestors 'self'"
#: Characters of one value shown; longer values are cut (the length is stated).
MAX_TEXT = 300
#: Runs listed in a contract's table (the timeline draws up to TIMELINE_RUNS).
LISTED_RUNS = 50
TIMELINE_RUNS = 200

_STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2329;background:#fff}
nav.top{background:#0f2a3f;color:#fff;padding:8px 24px;display:flex;gap:18px;align-items:center}
nav.top a{color:#fff;text-decoration:none;font-weight:600}main{padding:16px 24px}
h1{font-size:22px;margin:4px 0}h2{font-size:17px;margin:24px 0 8px}.meta,.small{color:#52606d}.small{font-size:12px}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-weight:600;color:#fff;text-transform:uppercase;
font-size:11px}.pass,.passed{background:#2e7d32}.quarantine{background:#ef6c00}.gate,.failed,.error{background:#c62828}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #e4e7eb;padding:4px 6px;text-align:left;
vertical-align:middle;overflow-wrap:anywhere}th{background:#f5f7fa;white-space:nowrap}th a{color:inherit}
td.num,td.when{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.when{text-align:left}form.controls{display:flex;gap:8px;align-items:center;
margin:8px 0;flex-wrap:wrap}input,select,button{font:inherit;padding:3px 6px}a{color:#0b62a4}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:1px 14px;font-size:13px}dl.facts dt{color:#52606d}
dl.facts dd{margin:0;overflow-wrap:anywhere}pre{background:#f5f7fa;padding:10px;overflow:auto;max-height:480px;
white-space:pre-wrap;overflow-wrap:anywhere}pre .add{color:#1b5e20;background:#e8f5e9}pre .del{color:#b71c1c;
background:#ffebee}.cards{display:flex;gap:10px;flex-wrap:wrap}.card{border:1px solid #d9e2ec;border-radius:6px;
padding:6px 12px}.card b{display:block;font-size:18px}svg.spark{display:block}
"""
_COLORS = {"pass": "#2e7d32", "quarantine": "#ef6c00", "gate": "#c62828"}


@dataclasses.dataclass(frozen=True)
class Listing:
    """The overview's query parameters: text filter, decision filter, sort field and order."""

    query: str = ""
    decision: str = ""
    sort: str = "name"
    descending: bool = False


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    """``value`` as escaped text, cut to ``limit`` characters (its length stated); '—' for None.

    >>> _text("<b>&</b>"), _text(None)
    ('&lt;b&gt;&amp;&lt;/b&gt;', '—')
    """
    if value is None:
        return "—"
    text = str(value)
    if len(text) > limit:
        return html.escape(text[:limit]) + f"… <span class=small>({len(text):,} characters)</span>"
    return html.escape(text)


def _attr(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _path(value: str) -> str:
    """A path segment: every reserved character percent-encoded (a name with ``/`` or ``"`` stays one segment).

    >>> _path('a/b "c"')
    'a%2Fb%20%22c%22'
    """
    return urllib.parse.quote(value, safe="")


def _when(value: dt.datetime | None) -> str:
    return "—" if value is None else value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _badge(decision: str | None) -> str:
    kind = decision if decision in _COLORS or decision in ("passed", "failed", "error") else ""
    return f'<span class="badge {kind}">{_text(decision)}</span>'


def sparkline(
    scores: Sequence[float | None], decisions: Sequence[str] = (), *, width: int = 120, height: int = 24
) -> str:
    """An inline SVG polyline of scores in [0, 1] (oldest first); the last point coloured by its decision.

    >>> sparkline([1.0, 0.5]).startswith('<svg class="spark"')
    True
    """
    points = [(index, s) for index, s in enumerate(scores) if s is not None]
    if not points:
        return '<span class="small">—</span>'
    step = (width - 6) / max(1, len(scores) - 1)
    coords = [(3 + index * step, 3 + (1 - score) * (height - 6)) for index, score in points]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    last_colour = _COLORS.get(decisions[-1] if decisions else "", "#0b62a4")
    x, y = coords[-1]
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="score trend of the last {len(scores)} runs"><polyline fill="none" stroke="#52606d" '
        f'stroke-width="1.5" points="{line}"/><circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{last_colour}"/></svg>'
    )


def timeline(runs: Sequence[RunSummary], *, width: int = 900, height: int = 120) -> str:
    """The runs' scores over time as an SVG: one dot per run coloured by its decision."""
    runs = list(runs)[-TIMELINE_RUNS:]
    if not runs:
        return ""
    first, last = runs[0].at.timestamp(), runs[-1].at.timestamp()
    span = max(last - first, 1.0)
    dots = []
    for run in runs:
        x = 10 + (run.at.timestamp() - first) / span * (width - 20)
        y = 10 + (1 - (run.score if run.score is not None else 0)) * (height - 30)
        dots.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{_COLORS.get(run.decision, "#52606d")}">'
            f"<title>{_text(_when(run.at))} · {_text(run.decision)} · score {_score(run.score)}</title></circle>"
        )
    labels = (
        f'<text x="10" y="{height - 4}" font-size="11" fill="#52606d">{_text(_when(runs[0].at))}</text>'
        f'<text x="{width - 10}" y="{height - 4}" font-size="11" fill="#52606d" text-anchor="end">'
        f"{_text(_when(runs[-1].at))}</text>"
    )
    return (
        f'<svg id="timeline" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="runs over time"><line x1="10" y1="10" x2="{width - 10}" y2="10" stroke="#e4e7eb"/>'
        f'<line x1="10" y1="{height - 20}" x2="{width - 10}" y2="{height - 20}" stroke="#e4e7eb"/>'
        f"{''.join(dots)}{labels}</svg>"
    )


def _layout(title: str, body: str, prefix: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_attr(PAGE_POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(title, 200)} · data quality</title><style>{_STYLE}</style></head><body>"
        f'<nav class="top"><a href="{_attr(prefix)}/">Data quality contracts</a>'
        f'<a href="{_attr(prefix)}/api/v1/contracts">JSON</a></nav><main>{body}</main></body></html>\n'
    )


def message_page(title: str, message: str, prefix: str) -> str:
    """A page that only says something (not configured, not found, refused) — the text escaped."""
    return _layout(title, f"<h1>{_text(title)}</h1><p>{_text(message, 2000)}</p>", prefix)


def _sort_link(field: str, label: str, listing: Listing, prefix: str) -> str:
    descending = not listing.descending if listing.sort == field else field in ("last_run_at", "runs", "never_fired")
    query = urllib.parse.urlencode(
        {"q": listing.query, "decision": listing.decision, "sort": field, "order": "desc" if descending else "asc"}
    )
    mark = (" ▼" if listing.descending else " ▲") if listing.sort == field else ""
    return f'<th><a href="{_attr(prefix)}/?{_attr(query)}">{_text(label)}{mark}</a></th>'


def contracts_page(rows: Iterable[ContractRow], listing: Listing, *, prefix: str, source: str) -> str:
    """The overview: every visible contract, filter form, sortable columns."""
    rows = list(rows)
    options = "".join(
        f'<option value="{_attr(d)}"{" selected" if d == listing.decision else ""}>{_text(d or "any decision")}</option>'
        for d in ("", *DECISIONS)
    )
    sorts = "".join(
        f'<option value="{_attr(s)}"{" selected" if s == listing.sort else ""}>{_text(s)}</option>' for s in SORTABLE
    )
    form = (
        f'<form class="controls" method="get" action="{_attr(prefix)}/">'
        f'<input type="search" name="q" value="{_attr(listing.query)}" placeholder="contract, dataset or owner">'
        f'<select name="decision">{options}</select><select name="sort">{sorts}</select>'
        f'<select name="order"><option value="asc">ascending</option>'
        f'<option value="desc"{" selected" if listing.descending else ""}>descending</option></select>'
        f'<button type="submit">Apply</button></form>'
    )
    head = "".join(
        _sort_link(field, label, listing, prefix)
        for field, label in (
            ("name", "Contract"),
            ("dataset", "Dataset"),
            ("owner", "Owner"),
            ("last_decision", "Last decision"),
            ("last_score", "Score"),
            ("last_run_at", "Last run"),
        )
    )
    head += "<th>Trend</th>" + _sort_link("runs", "Runs", listing, prefix)
    head += _sort_link("never_fired", "Never fired", listing, prefix)
    body = []
    for row in rows:
        body.append(
            f'<tr data-contract="{_attr(row.name)}" data-decision="{_attr(row.last_decision)}">'
            f'<td><a href="{_attr(prefix)}/contracts/{_attr(_path(row.name))}">{_text(row.name)}</a>'
            f'<div class="small">version {_text(row.version)}</div></td>'
            f"<td>{_text(row.dataset)}</td><td>{_text(row.owner)}</td><td>{_badge(row.last_decision)}</td>"
            f'<td class="num score">{_score(row.last_score)}</td>'
            f'<td class="when"><a href="{_attr(prefix)}/runs/{_attr(_path(row.last_run_id))}">{_text(_when(row.last_run_at))}</a></td>'
            f'<td>{sparkline(row.trend, row.trend_decisions)}</td><td class="num runs">{row.runs}</td>'
            f'<td class="num never-fired" title="checks (of {row.checks}) that never failed">{row.never_fired}</td></tr>'
        )
    table = (
        f'<table id="contracts"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        if body
        else "<p>No contract with a run you may see.</p>"
    )
    return _layout(
        "Contracts",
        f"<h1>Contracts</h1><p class=meta>{len(rows)} contracts · results table {_text(source)}</p>{form}{table}",
        prefix,
    )


def _run_rows(runs: Sequence[RunSummary], prefix: str) -> str:
    rows = "".join(
        f'<tr><td class="when"><a href="{_attr(prefix)}/runs/{_attr(_path(run.run_id))}">{_text(_when(run.at))}</a></td>'
        f"<td>{_badge(run.decision)}</td><td class=num>{_score(run.score)}</td><td class=num>"
        f"{'—' if run.rows is None else f'{run.rows:,}'}</td><td class=num>{run.failed_checks} / {run.checks}</td>"
        f"<td>{_text(run.contract_version)}</td><td>{_text(run.dag_id)}</td><td class=small>{_text(run.run_id)}</td></tr>"
        for run in reversed(list(runs)[-LISTED_RUNS:])
    )
    return (
        '<table id="runs"><thead><tr><th>Run</th><th>Decision</th><th>Score</th><th>Rows</th><th>Failed checks</th>'
        f"<th>Version</th><th>DAG</th><th>Run id</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _diff_block(detail: ContractDetail, prefix: str) -> str:
    versions = [row.get("contract_version") for row in detail.versions]
    if len(versions) < 2:
        return ""

    def select(name: str, chosen: str | None) -> str:
        return (
            f'<select name="{name}">'
            + "".join(
                f'<option value="{_attr(v)}"{" selected" if v == chosen else ""}>{_text(v)}</option>' for v in versions
            )
            + "</select>"
        )

    diff = detail.diff
    old, new = (diff.old, diff.new) if diff is not None else (None, None)
    form = (
        f'<form class="controls" method="get" action="{_attr(prefix)}/contracts/{_attr(_path(detail.name))}">'
        f'<input type="hidden" name="days" value="{detail.days}">Compare {select("from", old)} with '
        f'{select("to", new)}<button type="submit">Diff</button></form>'
    )
    if diff is None:
        return f"<h2>Diff between versions</h2>{form}"
    lines = "\n".join(
        f'<span class="{"add" if line.startswith("+") else "del" if line.startswith("-") else ""}">{_text(line, 2000)}</span>'
        for line in diff.text_diff
    )
    changes = "".join(
        f"<li>{_badge('gate' if c.get('breaking') else 'pass')} {_text(c.get('description'))}</li>"
        for c in diff.changes
    )
    note = f"<p class=small>{_text(diff.error)}</p>" if diff.error else ""
    return (
        f"<h2>Diff between versions {_text(diff.old)} → {_text(diff.new)}</h2>{form}{note}"
        f'<ul id="changes">{changes or "<li>No schema or SLA change.</li>"}</ul>'
        f'<pre id="diff">{lines or "(same text)"}</pre>'
    )


def contract_page(detail: ContractDetail, *, prefix: str) -> str:
    """One contract: facts, timeline of runs, checks failing most over ``days``, drift, versions and their diff."""
    registry = detail.registry or {}
    last = detail.runs[-1]
    facts = "".join(
        f"<dt>{_text(label)}</dt><dd>{_text(value)}</dd>"
        for label, value in (
            ("Dataset", last.dataset),
            ("Owner", registry.get("owner")),
            ("Domain", registry.get("domain")),
            ("Description", registry.get("description")),
            ("Freshness SLA (hours)", registry.get("sla_freshness_hours")),
            ("Support", registry.get("sla_support_contact")),
            ("Versions", len(detail.versions) or None),
        )
    )
    cards = (
        f'<div class="cards"><div class="card">Last decision<b>{_badge(last.decision)}</b></div>'
        f'<div class="card">Score<b>{_score(last.score)}</b></div><div class="card">Runs<b>{len(detail.runs)}</b></div>'
        f'<div class="card">Never fired<b>{len(detail.never_fired)}</b></div></div>'
    )
    period = (
        f'<form class="controls" method="get" action="{_attr(prefix)}/contracts/{_attr(_path(detail.name))}">'
        f'Checks failing most in the last <input type="number" name="days" min="1" max="3650" value="{detail.days}"> '
        f'days<button type="submit">Show</button></form>'
    )
    failing = "".join(
        f"<tr><td>{_text(f.check_name)}<div class=small>{_text(f.check_id)}</div></td><td>{_text(f.check_type)}</td>"
        f"<td>{_text(f.severity)}</td><td class=num>{f.failed} / {f.evaluated}</td><td>{_badge(f.last_status)}</td></tr>"
        for f in detail.failing
    )
    failing_table = (
        '<table id="failing"><thead><tr><th>Check</th><th>Type</th><th>Severity</th><th>Failed / runs</th>'
        f"<th>Last status</th></tr></thead><tbody>{failing}</tbody></table>"
        if failing
        else "<p>No check failed in this period.</p>"
    )
    drift = "".join(
        f"<li>{_text(d.get('check_name') or d.get('check_id'))}: {_text(d.get('metric_value'))} outside "
        f"[{_text(d.get('expected_min'))}, {_text(d.get('expected_max'))}]</li>"
        for d in detail.drift
    )
    versions = "".join(
        f"<tr><td>{_text(v.get('contract_version'))}</td><td>{_text(_when(v.get('first_run_at')))}</td>"
        f"<td>{_text(_when(v.get('last_run_at')))}</td><td class=small>{_text(v.get('contract_hash'))}</td></tr>"
        for v in reversed(detail.versions)
    )
    text = registry.get("contract_text")
    body = (
        f"<h1>{_text(detail.name)}</h1><p class=meta>version {_text(last.contract_version)} · last run "
        f"{_text(_when(last.at))}</p>{cards}<dl class=facts>{facts}</dl>"
        f"<h2>Runs</h2>{timeline(detail.runs)}{_run_rows(detail.runs, prefix)}"
        f"<h2>Checks failing most</h2>{period}{failing_table}"
        f'<h2>Drift flags of the last run</h2><ul id="drift">{drift or "<li>None.</li>"}</ul>'
        f"<h2>Checks that never fired</h2><p class=small>{_text(', '.join(detail.never_fired) or 'none', 4000)}</p>"
        f'<h2>Versions</h2><table id="versions"><thead><tr><th>Version</th><th>First run</th><th>Last run</th>'
        f"<th>Text hash</th></tr></thead><tbody>{versions}</tbody></table>{_diff_block(detail, prefix)}"
        + (f'<h2>Contract text</h2><pre id="contract-text">{_text(text, 200_000)}</pre>' if text else "")
    )
    return _layout(detail.name, body, prefix)


def task_page(runs: Sequence[RunSummary], *, prefix: str, task: str) -> str:
    """The contract runs of one task instance (its tab in Airflow's UI)."""
    if not runs:
        return message_page("No contract run", f"The task instance {task} wrote no contract result.", prefix)
    rows = "".join(
        f'<tr><td><a href="{_attr(prefix)}/runs/{_attr(_path(run.run_id))}">{_text(run.contract_name)}</a></td>'
        f"<td>{_badge(run.decision)}</td><td class=num>{_score(run.score)}</td><td>{_text(_when(run.at))}</td></tr>"
        for run in runs
    )
    return _layout(
        task,
        f'<h1>Contract runs of {_text(task)}</h1><table id="task-runs"><thead><tr><th>Contract</th><th>Decision</th>'
        f"<th>Score</th><th>At</th></tr></thead><tbody>{rows}</tbody></table>",
        prefix,
    )


def run_page(report_html: str, *, prefix: str, contract_name: str, samples_hidden: bool) -> str:
    """The report of one run (:func:`airflow_dq_contracts.report.render_report`) with this UI's navigation on top."""
    note = (
        '<p style="margin:0 24px;color:#52606d">Quarantined rows are not shown: they need permission to read this '
        "DAG's task logs.</p>"
        if samples_hidden
        else ""
    )
    bar = (
        '<nav style="background:#0f2a3f;padding:8px 24px;margin:-24px -24px 16px">'
        f'<a style="color:#fff;font-weight:600;text-decoration:none" href="{_attr(prefix)}/">Data quality contracts</a>'
        f' <span style="color:#9fb3c8">›</span> <a style="color:#fff;text-decoration:none" '
        f'href="{_attr(prefix)}/contracts/{_attr(_path(contract_name))}">{_text(contract_name)}</a></nav>{note}'
    )
    head, marker, rest = report_html.partition("<body>")
    return f"{head}{marker}{bar}{rest}" if marker else report_html
