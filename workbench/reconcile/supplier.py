"""The supplier's side: one row per transcript request, with its lifecycle ``state``.

See the package docstring for the states and their precedence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from workbench.reconcile.inputs import (
    COUNT,
    FLAG,
    SUPPLIER_OPERATIONS,
    TEXT,
    TIME,
    UNSETTLED,
    age_bucket,
    conform,
    days_between,
    resolve_now,
    states,
    typed,
    utc_times,
)
from workbench.reconcile.links import Links, last_per, link, pick, scatter

SUPPLIER_STATES = (
    "awaiting_response",
    "responded",
    "transcript_sent",
    "acknowledged",
    "ack_mismatch",
    "closed_elsewhere",
    "cancelled",
    "uncertain_send",
)
# ResponseStatus values that promise a transcript later (a planned release date can pass).
DEFERRING = ("Hold", "TranscriptRequestReceived", "OfflineRecordSearch")

REQUEST_COLUMNS: dict[str, str | None] = {
    "request_id": TEXT,
    "state": None,
    "request_date": TIME,
    "age_days": "Float64",
    "age_bucket": None,
    "sla_breached": FLAG,
    "on_list": FLAG,
    "left_at": TIME,
    "left_reason": TEXT,
    "transmission_type": TEXT,
    "current_version": COUNT,
    "version_count": COUNT,
    "cancelled_at": TIME,
    "source_org_id": TEXT,
    "source_org_name": TEXT,
    "student_first_name": TEXT,
    "student_last_name": TEXT,
    "response_outbox_id": COUNT,
    "response_status": TEXT,
    "hold_reason": TEXT,
    "planned_release_date": TEXT,
    "release_overdue_days": "Float64",
    "responded_at": TIME,
    "response_inferred": FLAG,
    "transcript_outbox_id": COUNT,
    "transcript_sent_at": TIME,
    "transcript_inferred": FLAG,
    "sent_award_count": COUNT,
    "sent_course_count": COUNT,
    "acknowledged_at": TIME,
    "ack_award_total": COUNT,
    "ack_course_total": COUNT,
    "unsettled_outbox_id": COUNT,
    "unsettled_operation": TEXT,
    "unsettled_state": TEXT,
    "unsettled_since": TIME,
    "unsettled_note": TEXT,
    "detail_error": TEXT,
    "parse_error": TEXT,
    "validation_status": TEXT,
    "validation_error": TEXT,
}


def supplier_lifecycle(
    tables: Mapping[str, pd.DataFrame], *, now: Any = None, sla_days: float = 5
) -> pd.DataFrame:
    """One row per transcript request: its ``state`` and what supports it.

    >>> requests = supplier_lifecycle(tables, now="2026-03-10", sla_days=5)  # doctest: +SKIP
    >>> requests[requests.state == "awaiting_response"].sort_values("age_days")  # doctest: +SKIP
    """
    return lifecycle(link(conform(tables)), now=resolve_now(now, tables), sla_days=sla_days)


def lifecycle(links: Links, *, now: pd.Timestamp, sla_days: float) -> pd.DataFrame:
    """``supplier_lifecycle`` on linked tables."""
    requests, outbox = links.requests, links.outbox
    n = len(requests)
    columns = {c: requests[c] for c in REQUEST_COLUMNS if c in requests.columns}

    operation, state = links.operation, links.state
    target = outbox["target"].to_numpy()
    transcript = operation.mask("send_transcript")
    ours = operation.mask(*SUPPLIER_OPERATIONS) & (target >= 0)

    # The newest entry per request and operation; of those, the newest unsettled one.
    newest = last_per(np.where(ours, target * 2 + transcript, -1))
    unsettled = newest[state.mask(*UNSETTLED)[newest]]
    unsettled = unsettled[last_per(target[unsettled])]
    at = target[unsettled]
    columns["unsettled_outbox_id"] = scatter(n, at, outbox["outbox_id"].iloc[unsettled])
    columns["unsettled_operation"] = scatter(n, at, outbox["operation"].iloc[unsettled])
    columns["unsettled_state"] = scatter(n, at, outbox["state"].iloc[unsettled])
    columns["unsettled_since"] = scatter(n, at, outbox["updated_at"].iloc[unsettled])
    note = outbox["resolution"].iloc[unsettled].fillna(outbox["error"].iloc[unsettled])
    columns["unsettled_note"] = scatter(n, at, note)

    # The newest transcript that was sent, and the partner's acknowledgment of it.
    sent = np.flatnonzero(ours & transcript & state.mask("sent"))
    sent = sent[last_per(target[sent])]
    at = target[sent]
    resolved = outbox["resolved_at"].iloc[sent]
    columns["transcript_outbox_id"] = scatter(n, at, outbox["outbox_id"].iloc[sent])
    columns["transcript_sent_at"] = scatter(n, at, resolved.fillna(outbox["updated_at"].iloc[sent]))
    columns["transcript_inferred"] = scatter(n, at, resolved.notna().astype(FLAG))
    columns["sent_award_count"] = scatter(n, at, outbox["sent_award_count"].iloc[sent])
    columns["sent_course_count"] = scatter(n, at, outbox["sent_course_count"].iloc[sent])
    acks = links.acknowledgments
    ack_of_entry = acknowledgment_of_entry(links, "received")
    row = np.full(n, -1, dtype=np.intp)
    row[at] = ack_of_entry[sent]
    columns["acknowledged_at"] = pick(acks["recorded_at"], row)
    columns["ack_award_total"] = pick(acks["academic_award_total"], row)
    columns["ack_course_total"] = pick(acks["course_total"], row)

    # The newest TranscriptResponse we sent.
    responses = links.responses
    order = np.argsort(responses["outbox_id"].to_numpy(dtype="float64", na_value=np.nan),
                       kind="stable")  # fmt: skip
    newest = last_per(responses["target"].to_numpy(), order)
    at = responses["target"].to_numpy()[newest]
    for column, source in (
        ("response_outbox_id", "outbox_id"),
        ("response_status", "response_status"),
        ("hold_reason", "hold_reason"),
        ("planned_release_date", "planned_release_date"),
        ("responded_at", "sent_at"),
        ("response_inferred", "inferred"),
    ):
        columns[column] = scatter(n, at, responses[source].iloc[newest])
    responded = np.zeros(n, dtype=bool)
    responded[at] = True

    frame = pd.DataFrame(columns, copy=False)
    listed_since = requests["request_date"].fillna(requests["first_seen_at"])
    frame["age_days"] = days_between(listed_since, now)
    frame["age_bucket"] = age_bucket(frame["age_days"])
    has_transcript = frame["transcript_outbox_id"].notna()
    acked = has_transcript & pd.Series(row >= 0)
    known = frame["sent_award_count"].notna() & frame["sent_course_count"].notna()
    differs = _differs(frame["ack_award_total"], frame["sent_award_count"]) | _differs(
        frame["ack_course_total"], frame["sent_course_count"]
    )
    left_elsewhere = ~frame["on_list"].fillna(False) & (frame["left_reason"] == "elsewhere")
    cancelled = frame["cancelled_at"].notna() | (frame["transmission_type"] == "Cancellation")
    frame["state"] = states(
        [
            ("ack_mismatch", acked & known & differs),
            ("acknowledged", acked),
            ("cancelled", cancelled),
            ("uncertain_send", frame["unsettled_outbox_id"].notna()),
            ("transcript_sent", has_transcript),
            ("responded", pd.Series(responded)),
            ("closed_elsewhere", left_elsewhere),
        ],
        default="awaiting_response",
        order=SUPPLIER_STATES,
    )
    awaiting = frame["state"] == "awaiting_response"
    frame["sla_breached"] = awaiting & (frame["age_days"] > sla_days).fillna(False)
    release = utc_times(frame["planned_release_date"])
    deferring = (frame["state"] == "responded") & frame["response_status"].isin(DEFERRING)
    frame["release_overdue_days"] = days_between(release, now).where(
        deferring.fillna(False) & (release < now).fillna(False)
    )
    out = typed(frame, REQUEST_COLUMNS)
    out.attrs.update(operation="reconcile.supplier_lifecycle", now=now, sla_days=sla_days)
    return out


def acknowledgment_of_entry(links: Links, direction: str) -> np.ndarray:
    """For each outbox row, the row of its newest readable acknowledgment of ``direction``
    (or -1)."""
    acks, entries = links.acknowledgments, len(links.outbox)
    mine = links.direction.mask(direction) & links.ack_readable
    entry = np.where(mine, acks["entry"].to_numpy(), -1)
    newest = last_per(entry, links.ack_order)
    found = np.full(entries, -1, dtype=np.intp)
    found[entry[newest]] = newest
    return found


def _differs(found: pd.Series, expected: pd.Series) -> pd.Series:
    """Found differs from expected, a missing ``found`` included (a total the partner left out)."""
    return (found != expected).fillna(True) & expected.notna()
