"""The consumer's side: one row per transcript received, with its ``state`` and flags.

See the package docstring for the states and their precedence. ``duplicate`` and
``document_problem`` are flags beside the state: a duplicate still needs its acknowledgment.
Our acknowledgment counts for the version it acknowledges (``versions``): a transcript
re-issued after it awaits our acknowledgment again (``reissued_after_ack``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from workbench.reconcile.inputs import (
    COUNT,
    FLAG,
    TEXT,
    TIME,
    UNSETTLED,
    age_bucket,
    conform,
    days_between,
    resolve_now,
    states,
    typed,
)
from workbench.reconcile.links import ACK_OPERATION, Links, last_per, link, pick, scatter
from workbench.reconcile.supplier import acknowledgment_of_entry
from workbench.reconcile.versions import acknowledged_versions

CONSUMER_STATES = ("awaiting_ack", "ack_uncertain", "acknowledged", "closed_elsewhere")
DOCUMENT_PROBLEMS = ("parse_error", "schema_invalid")
# Student keys, strongest first: a transcript is a duplicate when one of them, and the source
# organisation, match an earlier transcript's.
DUPLICATE_KEYS = ("oen", "ocas_account", "ocas_application", "name_birth_date")

TRANSCRIPT_COLUMNS: dict[str, str | None] = {
    "transcript_id": TEXT,
    "state": None,
    "request_date": TIME,
    "age_days": "Float64",
    "age_bucket": None,
    "sla_breached": FLAG,
    "on_list": FLAG,
    "left_at": TIME,
    "left_reason": TEXT,
    "document_id": TEXT,
    "request_tracking_id": TEXT,
    "transmission_type": TEXT,
    "current_version": COUNT,
    "version_count": COUNT,
    "source_org_id": TEXT,
    "source_org_name": TEXT,
    "student_first_name": TEXT,
    "student_last_name": TEXT,
    "student_birth_date": TEXT,
    "student_oen": TEXT,
    "award_count": COUNT,
    "course_count": COUNT,
    "ack_outbox_id": COUNT,
    "acknowledged_at": TIME,
    "ack_award_total": COUNT,
    "ack_course_total": COUNT,
    "ack_send_state": TEXT,
    "ack_note": TEXT,
    "acknowledged_version": COUNT,
    "reissued_after_ack": FLAG,
    "duplicate": FLAG,
    "duplicate_of": TEXT,
    "duplicate_key": TEXT,
    "document_problem": None,
    "detail_error": TEXT,
    "parse_error": TEXT,
    "validation_status": TEXT,
    "validation_error": TEXT,
}


def consumer_status(
    tables: Mapping[str, pd.DataFrame], *, now: Any = None, sla_days: float = 5
) -> pd.DataFrame:
    """One row per transcript received: ``state``, age, our acknowledgment, duplicate and
    document flags.

    >>> transcripts = consumer_status(tables, now="2026-03-10")  # doctest: +SKIP
    >>> transcripts[transcripts.duplicate]  # doctest: +SKIP
    """
    return status(link(conform(tables)), now=resolve_now(now, tables), sla_days=sla_days)


def status(links: Links, *, now: pd.Timestamp, sla_days: float) -> pd.DataFrame:
    """``consumer_status`` on linked tables."""
    transcripts, outbox = links.transcripts, links.outbox
    n = len(transcripts)
    columns = {c: transcripts[c] for c in TRANSCRIPT_COLUMNS if c in transcripts.columns}
    operation, state = links.operation, links.state
    target = outbox["target"].to_numpy()
    ours = operation.mask(ACK_OPERATION) & (target >= 0)

    tried = np.flatnonzero(ours)
    tried = tried[last_per(target[tried])]
    at = target[tried]
    columns["ack_send_state"] = scatter(n, at, outbox["state"].iloc[tried])
    note = outbox["resolution"].iloc[tried].fillna(outbox["error"].iloc[tried])
    columns["ack_note"] = scatter(n, at, note)

    sent = np.flatnonzero(ours & state.mask("sent"))
    sent = sent[last_per(target[sent])]
    at = target[sent]
    columns["ack_outbox_id"] = scatter(n, at, outbox["outbox_id"].iloc[sent])
    acks = links.acknowledgments
    row = np.full(n, -1, dtype=np.intp)
    row[at] = acknowledgment_of_entry(links, "sent")[sent]
    sent_at = scatter(n, at, outbox["updated_at"].iloc[sent])
    columns["acknowledged_at"] = pick(acks["recorded_at"], row).fillna(sent_at)
    columns["ack_award_total"] = pick(acks["academic_award_total"], row)
    columns["ack_course_total"] = pick(acks["course_total"], row)
    version = acknowledged_versions(outbox.iloc[sent], links.versions)
    columns["acknowledged_version"] = scatter(n, at, version)
    # Our newest acknowledgment is of an older version than the current one: re-issued since.
    older = (columns["acknowledged_version"] < transcripts["current_version"]).fillna(False)
    acknowledged = np.zeros(n, dtype=bool)
    acknowledged[at] = True
    columns["reissued_after_ack"] = pd.Series(acknowledged) & older
    acknowledged &= ~older.to_numpy(dtype=bool)

    frame = pd.DataFrame(columns, copy=False)
    frame["age_days"] = days_between(
        transcripts["request_date"].fillna(transcripts["first_seen_at"]), now
    )
    frame["age_bucket"] = age_bucket(frame["age_days"])
    left_elsewhere = ~frame["on_list"].fillna(False) & (frame["left_reason"] == "elsewhere")
    frame["state"] = states(
        [
            ("acknowledged", pd.Series(acknowledged)),
            ("ack_uncertain", frame["ack_send_state"].isin(UNSETTLED)),
            ("closed_elsewhere", left_elsewhere),
        ],
        default="awaiting_ack",
        order=CONSUMER_STATES,
    )
    awaiting = frame["state"] == "awaiting_ack"
    frame["sla_breached"] = awaiting & (frame["age_days"] > sla_days).fillna(False)
    first, matched = duplicates(transcripts)
    frame["duplicate"] = first.notna()
    frame["duplicate_of"] = first
    frame["duplicate_key"] = matched
    problem = np.select(
        [
            frame["parse_error"].notna().to_numpy(dtype=bool),
            (frame["validation_status"] == "invalid").fillna(False).to_numpy(dtype=bool),
        ],
        [0, 1],
        default=-1,
    )
    frame["document_problem"] = pd.Categorical.from_codes(problem, list(DOCUMENT_PROBLEMS))
    out = typed(frame, TRANSCRIPT_COLUMNS)
    out.attrs.update(operation="reconcile.consumer_status", now=now, sla_days=sla_days)
    return out


def duplicates(frame: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Per transcript, the earliest transcript (by ``request_date``) with the same student and
    source organisation, itself included (missing when it has no twin), and the student key
    that matched (``DUPLICATE_KEYS``, the first that matches).

    A weaker key does not match where a stronger one tells the students apart (same name and
    birth date, different OENs: two students). Values compare exactly: one source writes one
    student the same way each time.
    """
    n = len(frame)
    first = np.full(n, -1, dtype=np.intp)
    matched = np.full(n, None, dtype=object)
    if n == 0:
        return _as_ids(frame, first), pd.Series(matched, dtype=TEXT)
    order = np.argsort(frame["request_date"].to_numpy(dtype="datetime64[us]"), kind="stable")
    organisation = _codes(frame["source_org_id"].fillna(frame["source_org_name"]))
    keys = {
        "oen": _codes(frame["student_oen"]),
        "ocas_account": _codes(frame["student_ocas_account"]),
        "ocas_application": _codes(frame["student_ocas_application"]),
        "name_birth_date": _combined(
            _combined(_codes(frame["student_last_name"]), _codes(frame["student_first_name"])),
            _codes(frame["student_birth_date"]),
        ),
    }
    for strength, name in enumerate(DUPLICATE_KEYS):
        key = _combined(organisation, keys[name])[order]
        twins = pd.Series(key).duplicated(keep=False).to_numpy() & (key >= 0)
        if not twins.any():
            continue
        rows = order[twins]
        groups = pd.DataFrame({"key": key[twins], "row": rows})
        for stronger in DUPLICATE_KEYS[:strength]:
            codes = keys[stronger][rows]
            groups[stronger] = np.where(codes >= 0, codes, np.nan)
        grouped = groups.groupby("key", sort=False)
        earliest = grouped["row"].transform("first").to_numpy()
        alike = np.ones(len(rows), dtype=bool)
        for stronger in DUPLICATE_KEYS[:strength]:
            alike &= grouped[stronger].transform("nunique").to_numpy() <= 1
        fresh = alike & (first[rows] < 0)
        first[rows[fresh]] = earliest[fresh]
        matched[rows[fresh]] = name
    return _as_ids(frame, first), pd.Series(matched, dtype=TEXT)


def _as_ids(frame: pd.DataFrame, rows: np.ndarray) -> pd.Series:
    return pick(frame["transcript_id"], rows).astype(TEXT)


def _codes(series: pd.Series) -> np.ndarray:
    """Integer codes of the values (-1: missing)."""
    return pd.factorize(series)[0]


def _combined(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One code per pair of codes (-1 when either is missing)."""
    both = (a >= 0) & (b >= 0)
    pairs = np.where(both, a.astype(np.int64) * (int(b.max(initial=0)) + 1) + b, -1)
    return np.where(both, pd.factorize(pairs)[0], -1)
