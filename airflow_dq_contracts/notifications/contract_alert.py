"""``ContractAlertNotifier``: tell a contract's owner that a run gated (or, if asked, quarantined).

An Airflow notifier (``BaseNotifier``), so it goes wherever Airflow takes callbacks —
``on_failure_callback`` / ``on_success_callback`` of a task or DAG. It reads the check task's
summary from XCom and, depending on the decision:

* **gate** → an alert (``on_gate=True``, the default);
* **quarantine** → an alert only with ``on_quarantine=True``;
* **pass** → nothing.

The alert lists the failing checks (severity, action, status, metric, failing rows, message), the
decision, the report link (the report is attached when the file is local) and the contract's
escalation policy. Recipients: ``to=``, else the contract's ``sla.support_contact`` and ``owner``
from the contract registry beside the results table (those that are e-mail addresses).

Delivery: SMTP through an Airflow connection (``smtp_conn_id``, default ``smtp_default``: host,
port, login, password; extras ``from_email``, ``use_ssl`` (default false), ``starttls``
(``auto``: when the server offers it, ``true``, ``false``), ``timeout``). Or pass any Airflow
notifier as ``notifier=`` (Slack, Teams, PagerDuty…): it is called with the same context plus
``dq_alert`` (``subject``, ``text``, ``recipients``, ``decision``, ``report_url``, ``summary``), so
its templated fields can say ``"{{ dq_alert.text }}"``.

Example::

    alert = ContractAlertNotifier(check_task_id="check_orders")            # gate → e-mail the owner
    ContractCheckOperator(task_id="check_orders", ..., on_failure_callback=alert)   # fail_on_gate=True
    # or on the branch's gate path:  EmptyOperator(task_id="alert", on_success_callback=alert)
    # Slack instead of e-mail:
    ContractAlertNotifier(check_task_id="check_orders",
                          notifier=SlackNotifier(text="{{ dq_alert.text }}", channel="#dq"))
"""

from __future__ import annotations

import os
import smtplib
import socket
import ssl
from collections.abc import Sequence
from email.message import EmailMessage
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from airflow_dq_contracts.hooks.storage import StorageConnectionError, resolve_storage_options
from airflow_dq_contracts.storage.locations import StoreError, is_path
from airflow_dq_contracts.store.results import TableLocation, open_results_store
from airflow_dq_contracts.version_compat import BaseNotifier

__all__ = ["ContractAlertNotifier", "format_alert"]

# Reports larger than this are linked, not attached (mail servers commonly cap messages at 10–25 MB).
MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024
MAX_CHECKS_LISTED = 50
_MAX_FIELD = 300


def _one_line(value: Any, limit: int = _MAX_FIELD) -> str:
    # Author and data text goes into headers and lines: no CR/LF (header injection), bounded length.
    text = " ".join(str(value if value is not None else "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_alert(summary: dict[str, Any], registry: dict[str, Any] | None = None) -> tuple[str, str]:
    """(subject, plain-text body) of an alert for a run's summary (and its registry row, if known).

    >>> subject, body = format_alert({"run_id": "r1", "contract": {"name": "orders", "version": "1.0"},
    ...     "dataset": "silver.orders", "decision": "gate", "counts": {"passed": 1, "failed": 1, "error": 0},
    ...     "failed_by_severity": {"P0": 1}, "checks": [{"check_id": "id/unique", "severity": "P0",
    ...     "action": "gate", "status": "failed", "metric_value": 2.0, "failed_rows": 2, "message": "2 dups",
    ...     "validator": "max 0"}]})
    >>> subject
    '[DQ GATE] orders 1.0 on silver.orders: 1 check failed (P0: 1)'
    """
    registry = registry or {}
    contract = summary.get("contract") or {}
    name, version = _one_line(contract.get("name")), _one_line(contract.get("version") or "")
    decision = str(summary.get("decision") or "").lower()
    failing = [c for c in summary.get("checks") or [] if c.get("status") != "passed"]
    by_severity = ", ".join(f"{s}: {n}" for s, n in sorted((summary.get("failed_by_severity") or {}).items()) if n)
    subject = (
        f"[DQ {decision.upper()}] {name}{' ' + version if version else ''} on "
        f"{_one_line(summary.get('dataset'), 120)}: {len(failing)} check{'s' if len(failing) != 1 else ''} "
        f"failed{f' ({by_severity})' if by_severity else ''}"
    )
    lines = [
        f"Contract {name} (version {version or 'unversioned'}) decided {decision.upper()} "
        f"for {_one_line(summary.get('dataset'))}.",
        f"Run: {_one_line(summary.get('run_id'))}",
    ]
    checks = summary.get("checks") or []
    first = checks[0] if checks else {}
    if first.get("dag_id"):
        lines.append(
            f"Airflow: DAG {_one_line(first.get('dag_id'))}, run {_one_line(first.get('airflow_run_id'))}, "
            f"task {_one_line(first.get('task_id'))}"
        )
    counts = summary.get("counts") or {}
    lines.append(
        f"Checks: {counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
        f"{counts.get('error', 0)} error; {summary.get('row_count', '?')} rows evaluated."
    )
    quarantine = summary.get("quarantine") or {}
    if quarantine.get("rows"):
        lines.append(f"Quarantined rows: {quarantine['rows']} in {_one_line(quarantine.get('table'))}")
    lines += ["", f"Failing checks ({len(failing)}):"]
    order = {"gate": 0, "quarantine": 1, "flag": 2}
    failing.sort(key=lambda c: (order.get(c.get("action"), 3), str(c.get("severity")), str(c.get("check_id"))))
    for check in failing[:MAX_CHECKS_LISTED]:
        rows = f", {check['failed_rows']} failing rows" if check.get("failed_rows") else ""
        lines.append(
            f"  - {_one_line(check.get('severity'))} {_one_line(check.get('action'))} "
            f"{_one_line(check.get('check_id'))}: {_one_line(check.get('status'))} "
            f"(metric {check.get('metric_value')}{rows}; expected {_one_line(check.get('validator'))})"
            + (f" {_one_line(check.get('message'))}" if check.get("message") else "")
        )
    if len(failing) > MAX_CHECKS_LISTED:
        lines.append(f"  … and {len(failing) - MAX_CHECKS_LISTED} more (see the report)")
    lines.append("")
    if summary.get("report"):
        lines.append(f"Report: {summary['report']}")
    if registry.get("owner") or registry.get("sla_support_contact"):
        lines.append(
            f"Owner: {_one_line(registry.get('owner'))}; support contact: "
            f"{_one_line(registry.get('sla_support_contact'))}"
        )
    if registry.get("sla_escalation_policy"):
        lines.append(f"Escalation policy: {_one_line(registry.get('sla_escalation_policy'), 2000)}")
    lines.append(f"Results: {_one_line(summary.get('results_table'))} (run_id {_one_line(summary.get('run_id'))})")
    return _one_line(subject, 250), "\n".join(lines) + "\n"


def _registry_row(summary: dict[str, Any], storage_options: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The contract's registry row beside the results table, when it can be read (None otherwise)."""
    results_table = summary.get("results_table")
    contract = summary.get("contract") or {}
    if not results_table or not contract.get("name"):
        return None
    if not is_path(results_table):
        return None
    try:
        store = open_results_store(TableLocation.resolve(results_table, storage_options=storage_options))
        return store.read_registry(contract["name"], contract.get("version"))
    except StoreError:
        return None


def _addresses(values: Sequence[Any]) -> list[str]:
    out: list[str] = []
    for value in values:
        for part in str(value or "").replace(";", ",").split(","):
            part = part.strip()
            if "@" in part and " " not in part and part not in out:
                out.append(part)
    return out


def _local_file(url: str | None) -> str | None:
    if not url:
        return None
    if url.startswith("file://"):
        return url2pathname(urlparse(url).path)
    return url if "://" not in url and os.path.isfile(url) else None


class ContractAlertNotifier(BaseNotifier):
    """Alert the contract's owner on a gate (and optionally on a quarantine); see the module docstring.

    :param check_task_id: the ContractCheckOperator whose summary to read (default: the task the
        callback runs on).
    :param to: recipients (address or list); default the registry's support contact and owner.
    :param on_gate: alert on a gate decision (default True).
    :param on_quarantine: alert on a quarantine decision (default False).
    :param smtp_conn_id: Airflow connection of the SMTP server.
    :param from_email: sender; default the connection's ``from_email`` extra, else
        ``airflow-dq-contracts@<host name>``.
    :param notifier: any Airflow notifier to deliver through instead of SMTP.
    :param attach_report: attach the HTML report when it is a local file (default True).
    :param storage_conn_id: storage connection of the results table's store (object storage), for the
        contract's registry row (owner, support contact); see :mod:`airflow_dq_contracts.hooks.storage`.

    Example::

        ContractAlertNotifier(check_task_id="check_orders", to="orders-oncall@example.com",
                              on_quarantine=True)
    """

    template_fields = ("check_task_id", "to", "from_email")

    def __init__(
        self,
        *,
        check_task_id: str | None = None,
        to: str | Sequence[str] | None = None,
        on_gate: bool = True,
        on_quarantine: bool = False,
        smtp_conn_id: str = "smtp_default",
        from_email: str | None = None,
        notifier: BaseNotifier | None = None,
        attach_report: bool = True,
        storage_conn_id: str | None = None,
    ) -> None:
        super().__init__()
        self.check_task_id = check_task_id
        self.to = to
        self.on_gate = on_gate
        self.on_quarantine = on_quarantine
        self.smtp_conn_id = smtp_conn_id
        self.from_email = from_email
        self.notifier = notifier
        self.attach_report = attach_report
        self.storage_conn_id = storage_conn_id or None

    def _summary(self, context: Any) -> dict[str, Any] | None:
        ti = context["ti"]
        task_id = self.check_task_id or ti.task_id
        value = ti.xcom_pull(task_ids=task_id, key="return_value")
        return value if isinstance(value, dict) and "decision" in value else None

    def wants(self, decision: str) -> bool:
        """Whether a run with ``decision`` is alerted.

        >>> ContractAlertNotifier().wants("gate"), ContractAlertNotifier().wants("quarantine")
        (True, False)
        """
        return (decision == "gate" and self.on_gate) or (decision == "quarantine" and self.on_quarantine)

    def notify(self, context: Any) -> None:
        """Read the summary, decide, format, deliver (SMTP or the given notifier)."""
        summary = self._summary(context)
        if summary is None:
            self.log.warning(
                "ContractAlertNotifier: no contract summary in XCom of task %s; nothing sent",
                self.check_task_id or context["ti"].task_id,
            )
            return
        decision = str(summary.get("decision"))
        if not self.wants(decision):
            self.log.info("ContractAlertNotifier: decision %s is not alerted", decision)
            return
        try:
            options = resolve_storage_options(self.storage_conn_id, location=summary.get("results_table"))
        except StorageConnectionError as exc:  # the alert still goes out, without the registry's contacts
            self.log.warning("ContractAlertNotifier: %s", exc)
            options = None
        registry = _registry_row(summary, options)
        subject, text = format_alert(summary, registry)
        explicit = [self.to] if isinstance(self.to, str) else list(self.to or [])
        recipients = (
            _addresses(explicit)
            if explicit
            else _addresses([(registry or {}).get("sla_support_contact"), (registry or {}).get("owner")])
        )
        alert = {
            "subject": subject,
            "text": text,
            "recipients": recipients,
            "decision": decision,
            "report_url": summary.get("report"),
            "summary": summary,
        }
        if self.notifier is not None:
            self.notifier({**context, "dq_alert": alert})
            return
        if not recipients:
            self.log.error(
                "ContractAlertNotifier: %s decided %s but no recipient is known (give to=, or an "
                "e-mail address as the contract's owner or sla.support_contact)",
                subject,
                decision,
            )
            return
        self._send_smtp(subject, text, recipients, summary)
        self.log.info("ContractAlertNotifier: sent %r to %s", subject, ", ".join(recipients))

    def _send_smtp(self, subject: str, text: str, recipients: list[str], summary: dict[str, Any]) -> None:
        from airflow.sdk import BaseHook

        conn = BaseHook.get_connection(self.smtp_conn_id)
        extra = conn.extra_dejson or {}
        sender = self.from_email or extra.get("from_email") or f"airflow-dq-contracts@{socket.getfqdn()}"
        message = EmailMessage()
        message["Subject"] = subject
        message["From"] = sender
        message["To"] = ", ".join(recipients)
        message.set_content(text)
        report = _local_file(summary.get("report")) if self.attach_report else None
        if report and os.path.isfile(report) and os.path.getsize(report) <= MAX_ATTACHMENT_BYTES:
            with open(report, "rb") as handle:
                message.add_attachment(
                    handle.read(), maintype="text", subtype="html", filename=os.path.basename(report)
                )
        timeout = float(extra.get("timeout", 30))
        host, port = conn.host or "localhost", int(conn.port or (465 if extra.get("use_ssl") else 25))
        client: smtplib.SMTP
        if str(extra.get("use_ssl", "false")).lower() in ("1", "true", "yes"):
            client = smtplib.SMTP_SSL(host, port, timeout=timeout, context=ssl.create_default_context())
        else:
            client = smtplib.SMTP(host, port, timeout=timeout)
        with client:
            client.ehlo()
            starttls = str(extra.get("starttls", "auto")).lower()
            if not isinstance(client, smtplib.SMTP_SSL) and (
                starttls in ("1", "true", "yes") or (starttls == "auto" and client.has_extn("starttls"))
            ):
                client.starttls(context=ssl.create_default_context())
                client.ehlo()
            if conn.login:
                client.login(conn.login, conn.password or "")
            client.send_message(message, from_addr=sender, to_addrs=recipients)
