"""Delivering a written report's summary (figures, never a student's data, an id or a secret)
to a webhook and by mail; a failed delivery keeps the report and is one line of failures."""

from __future__ import annotations

import json
import smtplib
import socket
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from workbench.config import SmtpSettings, load_profile
from workbench.errors import ConfigError, InvalidParameter, WorkbenchError

if TYPE_CHECKING:
    from workbench.reconcile import Reconciliation
    from workbench.report.job import ReportJob


@dataclass(frozen=True)
class Delivery:
    """Where a report goes once written, as :func:`plan_delivery` checked it."""

    notify: str | None = None
    mail_to: tuple[str, ...] = ()
    smtp: SmtpSettings | None = None
    sender: str = ""

    def deliver(self, job: ReportJob, *, say: Callable[[str], None] = print) -> list[str]:
        """Post the summary, mail it; what failed (never raised), one line each."""
        failures: list[str] = []
        if not (self.notify or self.mail_to):
            return failures
        html = None if job.run is None else job.run.html_path.resolve()
        notice = summary(job.notebook, html)
        if html is not None:
            try:
                rec, fresh = job.figures
                notice = summary(job.notebook, html, rec, fresh.as_dict(job.max_age_hours))
            except (WorkbenchError, ValueError) as exc:
                failures.append(f"The figures could not be made ({type(exc).__name__}: {exc}); "
                                "the summary says only where the report is.")  # fmt: skip
        sends: dict[str, Callable[[], None]] = {}
        if url := self.notify:
            sends[f"webhook {_safe_url(url)}"] = lambda: post_webhook(url, notice)
        if self.mail_to and (smtp := self.smtp) is not None:
            message = notice_mail(notice, to=self.mail_to, sender=self.sender)
            sends[f"mail to {', '.join(self.mail_to)}"] = lambda: send_mail(message, smtp)
        for what, send in sends.items():
            try:
                send()
            except RuntimeError as exc:
                failures.append(f"The {what} failed: {exc}. The report is written.")
            else:
                say(f"Sent the summary: {what}.")
        return failures


def plan_delivery(
    *, notify: str | None = None, mail_to: Iterable[str] | None = None,
    profile: str | None = None, config_path: str | None = None,
) -> Delivery:  # fmt: skip
    """Check where a report will go before anything runs (``InvalidParameter``, ``ConfigError``)."""
    url = None if notify is None else _webhook_url(notify)
    addresses = tuple(a for text in mail_to or () for a in _addresses(text))
    if not addresses:
        return Delivery(url)
    smtp = load_profile(profile, config_path=config_path).smtp
    if not smtp.host:
        raise ConfigError(f"--mail-to needs a mail server: set {smtp.where} "
                          "(and its port, tls, username, password and from).")  # fmt: skip
    sender = smtp.sender or (smtp.username if "@" in (smtp.username or "") else None)
    if not sender or not _is_address(sender):
        raise ConfigError("--mail-to needs a From address: set WORKBENCH_SMTP_FROM "
                          f"(or from in the profile's [smtp] table); got {sender!r}.")  # fmt: skip
    return Delivery(url, addresses, smtp, sender)


def summary(
    notebook: str, report: Path | None, rec: Reconciliation | None = None,
    freshness: Mapping[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """What a webhook and a mail carry: ``text`` (what Slack and Teams show), Slack's
    ``blocks``, the figures as data; never a student, an id or the report itself. Without
    ``rec``: only where the report is, or (``report`` None) that none was written."""
    data: dict[str, Any] = {"version": 1, "notebook": notebook,
                            "report": None if report is None else str(report)}  # fmt: skip
    if report is None or rec is None or freshness is None:
        where = f"Workbench report {notebook} on {socket.gethostname()}"
        lines = [
            f"{where} FAILED: no report was written. See the log of the job that ran it."
            if report is None
            else f"{where} is written (its figures are not): {report}"
        ]
        data["failed"] = report is None
    else:
        lines = [*_figures(rec, freshness, data), f"Report: {report}"]
    text = "\n".join(lines)
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": escaped[:3000]}}]
    return {"text": text, "blocks": blocks, "workbench": data}


def _figures(rec: Reconciliation, fresh: Mapping[str, Any], data: dict[str, Any]) -> list[str]:
    """The summary's lines of figures; ``data`` gets them as data."""
    kinds = rec.exceptions["kind"].value_counts().sort_index()
    head = json.loads(json.dumps(rec.headline, default=lambda v: v.isoformat()))
    by_severity = rec.headline["exceptions_by_severity"]
    data.update({
        "as_of": rec.now.isoformat(), "sla_days": float(rec.sla_days),
        "exceptions": len(rec.exceptions), "exceptions_by_severity": by_severity,
        "exceptions_by_kind": {str(k): int(n) for k, n in kinds.items()},
        "headline": head, "freshness": dict(fresh),
    })  # fmt: skip
    lines = [
        f"Workbench report {data['notebook']} as of {_when(data['as_of'])}: "
        f"{len(rec.exceptions)} exceptions ({_pairs(by_severity)}).",
        f"By kind: {_pairs(data['exceptions_by_kind']) or 'none'}.",
        f"{head['open_requests']} open requests, {head['open_over_sla']} over the "
        f"{rec.sla_days:g}-day SLA; {head['transcripts_awaiting_ack']} transcripts await our "
        f"acknowledgment, {head['awaiting_ack_over_sla']} over the SLA.",
    ]
    if not fresh["last_pull_at"]:
        lines.append("No pull has finished in this store.")
    else:
        bits = [f"Last pull: {_when(fresh['last_pull_at'])}", fresh["last_pull_status"]]
        if n := fresh["items_not_fetched"]:
            bits.append(f"{n} items not fetched")
        if fresh["failed_lists"]:
            bits.append(f"failed: {', '.join(fresh['failed_lists'])}")
        lines.append(", ".join(bits) + ".")
    if unfinished := fresh["unfinished_pull"]:
        lines.append(f"Pull run {unfinished['run']} started {_when(unfinished['started_at'])} "
                     "and never finished (crashed or still running).")  # fmt: skip
    age = fresh["hours_old"]
    read = "a list in use was never read" if age is None else f"oldest read {age:g} h ago"
    lines.append(f"Stale: {'yes' if fresh['stale'] else 'no'} ({read}, limit "
                 f"{fresh['max_age_hours']:g} h).")  # fmt: skip
    return lines


def post_webhook(url: str, notice: Mapping[str, Any], *, timeout_s: float = 15.0) -> None:
    """POST ``notice``; ``RuntimeError`` naming nothing of the URL's path or the answer."""
    import httpx

    try:
        answer = httpx.post(url.strip(), json=notice, timeout=timeout_s)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise RuntimeError(f"{type(exc).__name__}: the receiver could not be reached") from None
    if not answer.is_success:
        raise RuntimeError(f"the receiver answered {answer.status_code}")


def notice_mail(notice: Mapping[str, Any], *, to: Iterable[str], sender: str) -> EmailMessage:
    """The summary as a mail: its first line the subject; never the report itself."""
    message = EmailMessage()
    message["Subject"] = notice["text"].splitlines()[0][:200]
    message["From"], message["To"] = sender, ", ".join(to)
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    figures = json.dumps(notice["workbench"], indent=2, sort_keys=True)
    message.set_content(f"{notice['text']}\n\nThe figures, as data:\n\n{figures}\n")
    return message


def send_mail(message: EmailMessage, smtp: SmtpSettings) -> None:
    """Send ``message`` through ``smtp`` (whose login never goes in clear to another machine)."""
    where = f"{smtp.host}:{smtp.port}"
    context = ssl.create_default_context()
    try:
        server = (
            smtplib.SMTP_SSL(smtp.host or "", smtp.port, timeout=smtp.timeout, context=context)
            if smtp.tls == "ssl"
            else smtplib.SMTP(smtp.host or "", smtp.port, timeout=smtp.timeout)
        )
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


def _webhook_url(text: str) -> str:
    """``text`` stripped if a usable http(s) URL, else ``InvalidParameter`` not repeating it."""
    import httpx  # only when a webhook is asked for

    url = text.strip()
    try:
        parts, _ = urlsplit(url), httpx.URL(url)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except (ValueError, httpx.InvalidURL):  # ValueError: a port out of range, a broken IPv6
        usable = False
    if not usable:
        raise InvalidParameter("the webhook's URL cannot be used: give its http(s) URL as the "
                               "receiver shows it, such as https://hooks.slack.com/services/...",
                               parameter="notify")  # fmt: skip
    return url


def _pairs(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())


def _when(iso: str) -> str:
    return f"{datetime.fromisoformat(iso).astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _addresses(text: str) -> list[str]:
    """The addresses of one ``--mail-to`` (several may be separated by commas)."""
    found = [a.strip() for a in text.split(",") if a.strip()]
    if not found or (bad := [a for a in found if not _is_address(a)]):
        shown = ", ".join(map(repr, bad)) if found else repr(text)
        raise InvalidParameter(f"{shown} is not a mail address such as ops@college.example",
                               parameter="mail_to")  # fmt: skip
    return found


def _is_address(text: str) -> bool:
    address = parseaddr(text)[1]
    local, at, domain = address.rpartition("@")
    safe = not any(c in text for c in "\r\n\0") and " " not in address
    return bool(safe and at and local and "." in domain.strip("."))


def _safe_url(url: str) -> str:
    """``url`` without its path and query, which may hold its token (Slack's do)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "(a malformed URL)"
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}/..." if host.isprintable() else "(a malformed URL)"
