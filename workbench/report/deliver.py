"""Delivering a written report: spreadsheets beside it, a summary to a webhook and by mail.

::

    plan = plan_delivery(notify="https://hooks.slack.com/services/...", mail_to=["ops@college.ca"],
                         export="csv,xlsx")          # checked before anything is pulled or run
    job = run_report_job("reconcile", ...)
    done = plan.deliver(job)                          # Delivered: exports, sent, failures

The summary (:func:`report_notice`) holds figures, exception counts by kind and severity, the
report's path and how fresh the store is: never a student's data, an id or a secret. Its
top-level ``text`` is what Slack and Teams incoming webhooks show (Slack also gets ``blocks``);
``workbench`` holds the same figures for any other receiver. The mail carries the same text;
the HTML (which holds student data) is attached only with ``attach=True``.

A delivery that fails never loses the report: it is written first, and each failure is one
line of ``Delivered.failures`` (``workbench report`` then exits 1).
"""

from __future__ import annotations

import json
import smtplib
import socket
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from workbench.config import SmtpSettings, is_loopback, load_profile
from workbench.errors import ConfigError, InvalidParameter, WorkbenchError
from workbench.report.staleness import DEFAULT_MAX_AGE_HOURS

if TYPE_CHECKING:
    from workbench.reconcile import Reconciliation
    from workbench.report.job import ReportJob

NOTICE_VERSION = 1
WEBHOOK_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Delivered:
    """What :meth:`Delivery.deliver` did: files written, where the summary went, what failed."""

    exports: list[Path] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Delivery:
    """Where a report goes once written; made by :func:`plan_delivery`, which checks it."""

    notify: str | None = None
    mail_to: tuple[str, ...] = ()
    attach: bool = False
    export: tuple[str, ...] = ()
    db: str | None = None  # the store reported on, when the notebook is not told it
    smtp: SmtpSettings | None = None
    sender: str | None = None

    def __bool__(self) -> bool:
        return bool(self.notify or self.mail_to or self.export)

    def _notice(self, job: ReportJob, html: Path, done: Delivered) -> dict[str, Any]:
        from workbench.report.exports import write_exports  # pandas: only when delivering
        from workbench.report.store_freshness import freshness
        from workbench.report.stores import open_store

        rec, store_path = _reconciliation(job, self.db)
        if self.export:
            done.exports.extend(write_exports(rec, html, self.export))
        with open_store(store_path) as store:
            fresh = freshness(store, rec.now).as_dict(job.max_age_hours or DEFAULT_MAX_AGE_HOURS)
        exports = [p.resolve() for p in done.exports]
        return report_notice(
            rec, notebook=job.notebook, report=html, freshness=fresh, exports=exports
        )

    def deliver(self, job: ReportJob, *, say: Callable[[str], None] = print) -> Delivered:
        """Write the exports, post the summary, mail it; each failure is kept, never raised."""
        if not self:
            return Delivered()
        done = Delivered()
        notice = bare_notice(job.notebook, None)  # the notebook failed: no figures, no files
        if job.run is not None:
            html = job.run.html_path.resolve()
            try:
                notice = self._notice(job, html, done)
            except (WorkbenchError, OSError, ValueError) as exc:
                done.failures.append(
                    f"The figures and exports could not be made ({type(exc).__name__}: {exc}); "
                    "the summary says only where the report is."
                )
                notice = bare_notice(job.notebook, html)
        url, smtp = self.notify, self.smtp
        if url:
            _attempt(done, f"webhook {_safe_url(url)}", lambda: post_webhook(url, notice))
        if self.mail_to and smtp is not None:
            attach = job.run.html_path if (self.attach and job.run is not None) else None
            message = notice_mail(notice, to=self.mail_to, sender=self.sender or "", attach=attach)
            _attempt(done, f"mail to {', '.join(self.mail_to)}", lambda: send_mail(message, smtp))
        for line in done.sent:
            say(f"Sent the summary: {line}.")
        return done


def plan_delivery(
    *,
    notify: str | None = None,
    mail_to: Iterable[str] | None = None,
    attach: bool = False,
    export: str | Iterable[str] | None = None,
    profile: str | None = None,
    db: str | None = None,
    config_path: str | None = None,
) -> Delivery:
    """Check where a report will go before anything runs: an ``InvalidParameter`` for a URL that
    is not http(s), an address that is not one, ``attach`` without ``mail_to`` or an unknown
    export format; a ``ConfigError`` when mail is asked for and the profile has no mail server
    or sender."""
    if notify is not None:
        notify = _webhook_url(notify)
    addresses = tuple(a for text in mail_to or () for a in _addresses(text))
    if attach and not addresses:
        raise InvalidParameter(
            "--attach attaches the report to the mail: add --mail-to", parameter="attach"
        )
    formats: tuple[str, ...] = ()
    if export is not None:
        from workbench.report.exports import export_formats  # pandas: only when asked

        formats = export_formats(export)
    smtp = sender = None
    if addresses or notify or formats:
        chosen = load_profile(profile, config_path=config_path)
        db = db if db is not None else chosen.db
        if addresses:
            smtp = chosen.smtp
            if not smtp.host:
                raise ConfigError(
                    f"--mail-to needs a mail server: set {smtp.where} "
                    "(and its port, tls, username, password and from)."
                )
            sender = smtp.sender or (smtp.username if "@" in (smtp.username or "") else None)
            if not sender or not _is_address(sender):
                raise ConfigError(
                    "--mail-to needs a From address: set WORKBENCH_SMTP_FROM "
                    f"(or from in the profile's [smtp] table); got {sender!r}."
                )
    return Delivery(notify, addresses, attach, formats, db, smtp, sender)


def _webhook_url(text: str) -> str:
    """``text`` stripped, when it is an http(s) URL a request can be sent to; else an
    ``InvalidParameter`` for ``notify`` that never repeats it (its path may hold a token)."""
    import httpx  # only when a webhook is asked for

    url = text.strip()
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL) as exc:
        why = (
            "it is malformed"
            if isinstance(exc, ValueError)
            else "it holds a character a URL cannot"
        )
        raise InvalidParameter(
            f"the webhook's URL cannot be used ({why}): give its http(s) URL as the receiver "
            "shows it, such as https://hooks.slack.com/services/...",
            parameter="notify",
        ) from None
    if not valid:
        raise InvalidParameter(
            "give the webhook's http(s) URL, such as https://hooks.slack.com/services/...",
            parameter="notify",
        )
    return url


def report_notice(
    rec: Reconciliation,
    *,
    notebook: str,
    report: Path | str | None,
    freshness: Mapping[str, Any],
    exports: Iterable[Path | str] = (),
) -> dict[str, Any]:
    """The summary a webhook and a mail carry: ``text`` (and Slack ``blocks``) to read,
    ``workbench`` the same figures as data. Nothing in it names a student or an id."""
    from workbench.report.summary import summary_payload

    figures = summary_payload(rec)
    kinds = rec.exceptions["kind"].value_counts()
    by_kind = {str(k): int(v) for k, v in kinds.sort_index().items()}
    pairs = rec.exceptions.groupby(["kind", "severity"], observed=True).size()
    by_kind_severity = {f"{k}/{s}": int(n) for (k, s), n in pairs.items() if n}
    data = {
        "version": NOTICE_VERSION,
        "notebook": notebook,
        "report": None if report is None else str(report),
        "exports": [str(p) for p in exports],
        "as_of": figures["as_of"],
        "sla_days": figures["sla_days"],
        "exceptions": figures["exceptions"],
        "exceptions_by_severity": figures["exceptions_by_severity"],
        "exceptions_by_kind": by_kind,
        "exceptions_by_kind_and_severity": by_kind_severity,
        "headline": figures["headline"],
        "freshness": dict(freshness),
    }
    text = _notice_text(data)
    return {"text": text, "blocks": _slack_blocks(text), "workbench": data}


def bare_notice(notebook: str, report: Path | None) -> dict[str, Any]:
    """The summary without figures: where the report is, or (``report`` None) that the
    notebook failed and none was written."""
    host = socket.gethostname()
    if report is None:
        text = (
            f"Workbench report {notebook} FAILED on {host}: no report was written. "
            "See the log of the job that ran it."
        )
    else:
        text = f"Workbench report {notebook} on {host} is written (its figures are not): {report}"
    data = {
        "version": NOTICE_VERSION,
        "notebook": notebook,
        "report": None if report is None else str(report),
        "failed": report is None,
    }
    return {"text": text, "blocks": _slack_blocks(text), "workbench": data}


def post_webhook(
    url: str, notice: Mapping[str, Any], *, timeout_s: float = WEBHOOK_TIMEOUT_S
) -> None:
    """POST ``notice`` as JSON; ``RuntimeError`` (with no part of the URL's path, which may hold
    its token, and none of the answer) unless the receiver answers 2xx."""
    import httpx

    try:
        answer = httpx.post(url.strip(), json=notice, timeout=timeout_s)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise RuntimeError(f"{type(exc).__name__}: the receiver could not be reached") from None
    if not answer.is_success:
        raise RuntimeError(f"the receiver answered {answer.status_code}")


def notice_mail(
    notice: Mapping[str, Any], *, to: Iterable[str], sender: str, attach: Path | None = None
) -> EmailMessage:
    """The mail of a summary: its text, the figures as JSON, and the report's HTML only when
    ``attach`` names it (it holds student data)."""
    data = notice["workbench"]
    message = EmailMessage()
    message["Subject"] = _subject(data)
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    figures = json.dumps(data, indent=2, sort_keys=True)
    message.set_content(f"{notice['text']}\n\nThe figures, as data:\n\n{figures}\n")
    if attach is not None:
        html = attach.read_text(encoding="utf-8")
        message.add_attachment(html, subtype="html", filename=attach.name)
    return message


def send_mail(message: EmailMessage, smtp: SmtpSettings) -> None:
    """Send ``message`` through ``smtp`` (STARTTLS, implicit TLS or none; a login when it has
    a username, never in clear except to this machine); ``RuntimeError`` saying what failed,
    never the password, on failure."""
    context = ssl.create_default_context()
    where = f"{smtp.host}:{smtp.port}"
    if smtp.password and smtp.tls == "none" and not is_loopback(smtp.host or ""):
        raise RuntimeError(  # load_profile refuses it too: this is for settings made in code
            f"{where}: no login without TLS to another machine (set tls to starttls or ssl)"
        )
    try:
        if smtp.tls == "ssl":
            server: smtplib.SMTP = smtplib.SMTP_SSL(
                smtp.host or "", smtp.port, timeout=smtp.timeout, context=context
            )
        else:
            server = smtplib.SMTP(smtp.host or "", smtp.port, timeout=smtp.timeout)
        with server:
            if smtp.tls == "starttls":
                server.starttls(context=context)
            if smtp.username and smtp.password:
                server.login(smtp.username, smtp.password.reveal())
            server.send_message(message)
    except smtplib.SMTPResponseException as exc:
        raise RuntimeError(f"{where} answered {exc.smtp_code} ({type(exc).__name__})") from None
    except (smtplib.SMTPException, OSError) as exc:
        raise RuntimeError(f"{where}: {type(exc).__name__}") from None


def _reconciliation(job: ReportJob, db: str | None) -> tuple[Reconciliation, str]:
    """The reconciliation the report showed: its store, at the moment its summary names, with
    the parameters it was given that :func:`~workbench.reconcile.reconcile` takes."""
    import inspect

    from workbench import reconcile
    from workbench.report.stores import open_store

    summary = (job.run.summary if job.run else None) or {}
    path = str(job.parameters.get("db") or db)
    as_of = summary.get("as_of") or job.parameters.get("as_of")
    taken = inspect.signature(reconcile.reconcile).parameters
    options: dict[str, Any] = {
        k: v for k, v in job.parameters.items() if k in taken and k not in ("tables", "now")
    }
    if "sla_days" in summary:
        options["sla_days"] = summary["sla_days"]
    with open_store(path) as store:
        tables = reconcile.load(store, as_of=as_of)
    return reconcile.reconcile(tables, **options), path


def _attempt(done: Delivered, what: str, action: Callable[[], None]) -> None:
    try:
        action()
    except RuntimeError as exc:
        done.failures.append(f"The {what} failed: {exc}. The report is written.")
    else:
        done.sent.append(what)


def _notice_text(data: Mapping[str, Any]) -> str:
    head, fresh = data["headline"], data["freshness"]
    severity = ", ".join(f"{k} {v}" for k, v in data["exceptions_by_severity"].items())
    kinds = ", ".join(f"{k} {v}" for k, v in data["exceptions_by_kind"].items()) or "none"
    sla = f"{data['sla_days']:g}-day SLA"
    lines = [
        f"Workbench report {data['notebook']} as of {_when(data['as_of'])}: "
        f"{data['exceptions']} exceptions ({severity}).",
        f"By kind: {kinds}.",
        f"{head.get('open_requests', 0)} open requests, {head.get('open_over_sla', 0)} over the "
        f"{sla}; {head.get('transcripts_awaiting_ack', 0)} transcripts await our "
        f"acknowledgment, {head.get('awaiting_ack_over_sla', 0)} over the SLA.",
    ]
    if fresh.get("last_pull_at"):
        line = f"Last pull: {_when(fresh['last_pull_at'])}, {fresh['last_pull_status']}"
        if fresh.get("items_not_fetched"):
            line += f", {fresh['items_not_fetched']} items not fetched"
        if fresh.get("failed_lists"):
            line += f", failed: {', '.join(fresh['failed_lists'])}"
        lines.append(line + ".")
    else:
        lines.append("No pull has finished in this store.")
    unfinished = fresh.get("unfinished_pull")
    if unfinished:
        lines.append(
            f"Pull run {unfinished['run']} started {_when(unfinished['started_at'])} and never "
            "finished (crashed or still running)."
        )
    if "stale" in fresh:
        age = fresh.get("hours_old")
        read = "a list in use was never read" if age is None else f"oldest read {age:g} h ago"
        limit = f"limit {fresh['max_age_hours']:g} h"
        lines.append(f"Stale: {'yes' if fresh['stale'] else 'no'} ({read}, {limit}).")
    if data["report"]:
        lines.append(f"Report: {data['report']}")
    return "\n".join(lines)


def _slack_blocks(text: str) -> list[dict[str, Any]]:
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return [{"type": "section", "text": {"type": "mrkdwn", "text": escaped[:3000]}}]


def _subject(data: Mapping[str, Any]) -> str:
    if data.get("failed"):
        return f"Workbench report {data['notebook']}: FAILED"
    if "exceptions" not in data:
        return f"Workbench report {data['notebook']}: written, without figures"
    worst = next((f"{n} {s}" for s, n in data["exceptions_by_severity"].items() if n), "none")
    return (
        f"Workbench report {data['notebook']} {_when(data['as_of'])}: "
        f"{data['exceptions']} exceptions (worst: {worst})"
    )


def _when(iso: str) -> str:
    import pandas as pd

    return f"{pd.Timestamp(iso).tz_convert('UTC'):%Y-%m-%d %H:%M} UTC"


def _addresses(text: str) -> list[str]:
    """The addresses of one ``--mail-to`` (several may be separated by commas)."""
    found = [a.strip() for a in text.split(",") if a.strip()]
    bad = [a for a in found if not _is_address(a)]
    if bad or not found:
        raise InvalidParameter(
            f"{', '.join(map(repr, bad)) or repr(text)} is not a mail address such as "
            "ops@college.example",
            parameter="mail_to",
        )
    return found


def _is_address(text: str) -> bool:
    if any(c in text for c in "\r\n\0"):
        return False
    _, address = parseaddr(text)
    local, at, domain = address.rpartition("@")
    return bool(at and local and "." in domain.strip(".") and " " not in address)


def _safe_url(url: str) -> str:
    """``url`` without its path and query, which may hold its token (Slack's do)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "(a malformed URL)"
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}/..." if host.isprintable() else "(a malformed URL)"
