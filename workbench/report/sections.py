"""HTML blocks a report notebook displays: headline figures, exceptions, versions,
organisations, charts; every value escaped, each figure readable by a browser or a test as
``<div class="wb-figure" data-figure="open_requests" data-value="36">``."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
from IPython.display import HTML

from workbench.pesc.schemas import NOT_VALIDATED, SCHEMAS_VARIABLE
from workbench.reconcile import CONSUMER_STATES, SEVERITIES, SUPPLIER_STATES, Reconciliation
from workbench.report.charts import LABELS
from workbench.report.markup import (
    MAX_ROWS,
    breakable,
    heading,
    moment,
    page,
    paragraph,
    table,
    text,
)

WORST_FIRST = tuple(reversed(SEVERITIES))
EXCEPTION_TABLE = {
    "id": "id", "kind": "kind", "side": "side", "detail": "detail",
    "suggested_action": "suggested action",
}  # fmt: skip


def bucket_key(bucket: str) -> str:
    """An age bucket as a key fragment: ``0-2`` -> ``0_2``, ``>10`` -> ``over_10``."""
    return bucket.replace(">", "over_").replace("-", "_").replace(".", "_")


def _tile(key: str, value: Any, label: str, sub: str = "", *, alert: bool = False) -> str:
    """A card: a big number, its label and ``sub`` (HTML already escaped)."""
    sub = f'<div class="wb-sub">{sub}</div>' if sub else ""
    return (f'<div class="wb-figure{" wb-alert" * alert}" data-figure="{text(key)}" '
            f'data-value="{text(value)}"><div class="wb-value">{text(value)}</div>'
            f'<div class="wb-label">{text(label)}</div>{sub}</div>')  # fmt: skip


def _parts(prefix: str, counts: dict[str, int]) -> str:
    """Small figures inside a tile (``data-figure="<prefix>_<key>"``)."""
    return " · ".join(
        f'<span data-figure="{text(prefix + "_" + bucket_key(k))}" data-value="{text(v)}">'
        f"{breakable(k)}: {text(v)}</span>"
        for k, v in counts.items()
    )


def as_of_line(rec: Reconciliation, *, tz: str | None = None) -> str:
    """The moment every figure is measured at, the SLA and the data's environment."""
    zone = f" ({tz}; stored in UTC)" if tz and tz != "UTC" else ""
    grace = f" + {rec.grace_hours:g} h grace" if rec.grace_hours else ""
    environment = str(rec.headline.get("environment", "not stated"))
    return (
        f'<p class="wb-meta" data-as-of="{text(rec.now.isoformat())}" '
        f'data-sla-days="{text(float(rec.sla_days))}" data-tz="{text(tz or "UTC")}" '
        f'data-grace-hours="{text(float(rec.grace_hours))}" '
        f'data-environment="{text(environment)}">'
        f"As of {text(moment(rec.now, tz))}{text(zone)} · SLA "
        f"{text(float(rec.sla_days))} days{text(grace)} · environment (DocumentProcessCode): "
        f"{text(environment)}</p>"
    )


def not_validated_note(rec: Reconciliation) -> str:
    """How many current documents were never validated, and how to validate them."""
    count = sum(
        int(((f["validation_status"] == NOT_VALIDATED) & f["parse_error"].isna()).sum())
        for f in (rec.requests, rec.transcripts)
    )
    if not count:
        why = "every document was validated"
    elif os.environ.get(SCHEMAS_VARIABLE):
        why = f"{SCHEMAS_VARIABLE} has no schema for their message"
    else:
        why = (f"set {SCHEMAS_VARIABLE} to a folder of PESC XSDs and report again "
               "(--no-pull is enough) to validate them")  # fmt: skip
    return (
        f'<span data-figure="documents_not_validated" data-value="{count}">'
        f"not validated: {count} ({breakable(why)})</span>"
    )


def headline_section(rec: Reconciliation, *, tz: str | None = None) -> HTML:
    """The headline figures as cards (``data-figure="<key>"``) under the as-of line."""
    h = rec.headline
    by_status = h["responses_by_status"]
    severity = h["exceptions_by_severity"]
    sides = {"supplier": h["requests_by_state"]["uncertain_send"]}
    sides["consumer"] = h["uncertain_sends"] - sides["supplier"]
    tiles = [
        _tile("requests", h["requests"], LABELS["requests"]),
        _tile("open_requests", h["open_requests"], "open requests (awaiting our response)",
              "age in days: " + _parts("open_age", h["open_by_age"])),
        _tile("open_over_sla", h["open_over_sla"], "open requests over SLA",
              alert=h["open_over_sla"] > 0),
        _tile("answered", h["answered"], LABELS["answered"],
              text("with a TranscriptResponse or a transcript, whatever became of it since")),
        _tile("answered_still_listed", h["answered_still_listed"],
              LABELS["answered_still_listed"],
              text("on the partner's list at its last read: pull to see")),
        _tile("responses", sum(by_status.values()), "answered with a TranscriptResponse",
              _parts("responses", by_status) if by_status else "none yet"),
        _tile("transcripts_sent", h["transcripts_sent"], LABELS["transcripts_sent"]),
        _tile("transcripts_acknowledged", h["transcripts_acknowledged"],
              LABELS["transcripts_acknowledged"], "by the partner"),
        _tile("transcripts_unacknowledged", h["transcripts_unacknowledged"],
              "transcripts sent, not acknowledged"),
        _tile("ack_mismatches", h["ack_mismatches"], LABELS["ack_mismatches"],
              text("acknowledgments whose totals differ from what we sent"),
              alert=h["ack_mismatches"] > 0),
        _tile("uncertain_sends", h["uncertain_sends"], LABELS["uncertain_sends"],
              "do not resend blindly; " + _parts("uncertain", sides),
              alert=h["uncertain_sends"] > 0),
        _tile("transcripts_received", h["transcripts_received"], LABELS["transcripts_received"]),
        _tile("transcripts_acknowledged_by_us", h["transcripts_acknowledged_by_us"],
              LABELS["transcripts_acknowledged_by_us"]),
        _tile("transcripts_awaiting_ack", h["transcripts_awaiting_ack"],
              LABELS["transcripts_awaiting_ack"],
              "age in days: " + _parts("awaiting_age", h["awaiting_ack_by_age"])),
        _tile("awaiting_ack_over_sla", h["awaiting_ack_over_sla"],
              "awaiting our ack over SLA", alert=h["awaiting_ack_over_sla"] > 0),
        _tile("duplicate_transcripts", h["duplicate_transcripts"], LABELS["duplicate_transcripts"]),
        _tile("document_problems", h["document_problems"], "documents that fail to parse or "
              "validate", not_validated_note(rec)),
        _tile("exceptions", h["exceptions"], "exceptions",
              _parts("exceptions", {s: severity.get(s, 0) for s in WORST_FIRST}),
              alert=any(severity.get(s, 0) for s in ("critical", "high"))),
    ]  # fmt: skip
    return page(as_of_line(rec, tz=tz), f'<div class="wb-grid">{"".join(tiles)}</div>')


def exception_counts(rec: Reconciliation) -> pd.DataFrame:
    """Exceptions counted per kind and severity (critical first), with a total column."""
    ex = rec.exceptions
    counts = pd.crosstab(ex["kind"].astype(str), ex["severity"].astype(str))
    counts = counts.reindex(columns=list(WORST_FIRST), fill_value=0)
    counts["total"] = counts.sum(axis=1)
    counts = counts.rename_axis(index="kind", columns=None).reset_index()
    order = [*WORST_FIRST, "kind"]
    return counts.sort_values(order, ascending=[False] * len(WORST_FIRST) + [True],
                              ignore_index=True)  # fmt: skip


def exceptions_section(rec: Reconciliation, *, max_rows: int = MAX_ROWS) -> HTML:
    """Exception counts per kind, then each severity's table, critical first."""
    ex = rec.exceptions
    if ex.empty:
        return page(paragraph("No exceptions: nothing needs an analyst.", "wb-empty"))
    severity = ex["severity"].astype(str)
    parts = [paragraph("Exceptions per kind, worst first (the headline counts them per "
                       "severity):"), table(exception_counts(rec))]  # fmt: skip
    for s in WORST_FIRST:
        rows = ex[severity == s]
        if rows.empty:
            continue
        parts.append(heading(f"{s.capitalize()} ({len(rows)})", 4))
        parts.append(table(rows.assign(severity=severity[severity == s]), EXCEPTION_TABLE,
                           max_rows=max_rows, row_class="severity"))  # fmt: skip
    return page(*parts)


def organisations_section(rec: Reconciliation, *, max_rows: int = MAX_ROWS) -> HTML:
    """Counts per counterpart organisation, one table per side."""
    orgs = rec.by_organisation
    if orgs.empty:
        return page(paragraph("No organisations: the store holds no requests or transcripts.",
                              "wb-empty"))  # fmt: skip
    common = {"organisation_name": "organisation", "organisation_id": "id", "items": "items",
              "open": "open", "sla_breached": "over SLA"}  # fmt: skip
    tail = {"exceptions": "exceptions", "high_or_worse": "high or worse"}
    supplier = {**common, **{s: s.replace("_", " ") for s in SUPPLIER_STATES}, **tail}
    consumer = {**common, **{s: s.replace("_", " ") for s in CONSUMER_STATES},
                "duplicates": "duplicates", **tail}  # fmt: skip
    return page(
        heading("Requests, by the organisation that sent them", 4),
        table(orgs[orgs["side"] == "supplier"], supplier, max_rows=max_rows,
              empty="No transcript requests."),
        heading("Transcripts received, by the school that sent them", 4),
        table(orgs[orgs["side"] == "consumer"], consumer, max_rows=max_rows,
              empty="No transcripts received."),
    )  # fmt: skip
