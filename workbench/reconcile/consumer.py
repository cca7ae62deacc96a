"""The consumer's side: one row per transcript received, with its ``state`` and flags.

The package docstring gives the states' precedence. ``duplicate`` and ``document_problem`` are
flags beside the state: a duplicate still needs its acknowledgment. Our acknowledgment counts
for the version it acknowledges (:func:`acknowledged_versions`): a transcript re-issued after it
awaits our acknowledgment again (``reissued_after_ack``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from workbench.reconcile.inputs import (
    ACK_OPERATION,
    COUNT,
    FLAG,
    TEXT,
    TIME,
    UNSETTLED,
    aged,
    newest_acknowledgments,
    overdue,
    states,
    typed,
)

CONSUMER_STATES = ("awaiting_ack", "ack_uncertain", "acknowledged", "closed_elsewhere")
DOCUMENT_PROBLEMS = ("parse_error", "schema_invalid")
# Student keys, strongest first: a transcript is a duplicate when one of them, and the source
# organisation, match an earlier transcript's.
DUPLICATE_KEYS = ("oen", "ocas_account", "ocas_application", "name_birth_date")
_KEY_COLUMNS = {
    "oen": ("student_oen",),
    "ocas_account": ("student_ocas_account",),
    "ocas_application": ("student_ocas_application",),
    "name_birth_date": ("student_last_name", "student_first_name", "student_birth_date"),
}

TRANSCRIPT_COLUMNS: dict[str, str | None] = {
    "transcript_id": TEXT, "state": None, "request_date": TIME, "implausible_request_date": TIME,
    "age_days": "Float64", "age_bucket": None, "sla_breached": FLAG, "on_list": FLAG,
    "left_at": TIME, "left_reason": TEXT, "document_id": TEXT, "request_tracking_id": TEXT,
    "transmission_type": TEXT, "process_code": TEXT, "current_version": COUNT,
    "version_count": COUNT, "source_org_id": TEXT, "source_org_name": TEXT,
    "student_first_name": TEXT, "student_last_name": TEXT, "student_birth_date": TEXT,
    "student_oen": TEXT, "award_count": COUNT, "course_count": COUNT, "ack_outbox_id": COUNT,
    "acknowledged_at": TIME, "ack_award_total": COUNT, "ack_course_total": COUNT,
    "ack_send_state": TEXT, "ack_note": TEXT, "acknowledged_version": COUNT,
    "reissued_after_ack": FLAG, "duplicate": FLAG, "duplicate_of": TEXT, "duplicate_key": TEXT,
    "document_problem": None, "detail_error": TEXT, "parse_error": TEXT, "validation_status": TEXT,
    "validation_error": TEXT,
}  # fmt: skip
# The outbox columns the consumer side reads (a row filter copies every column it keeps).
_ACKS = ["request_id", "outbox_id", "state", "created_at", "updated_at", "resolution", "error",
         "sent_document_id"]  # fmt: skip


def status(
    t: Mapping[str, pd.DataFrame], *, now: pd.Timestamp, sla_days: float, grace_days: float = 0
) -> pd.DataFrame:
    """The ``transcripts`` of ``prepared`` tables; overdue past ``sla_days + grace_days``."""
    outbox = t["outbox"]
    ours = outbox.loc[outbox["operation"] == ACK_OPERATION, _ACKS]

    # Our latest acknowledgment of each transcript, whatever became of it.
    tried = ours.drop_duplicates("request_id", keep="last")
    tried = pd.DataFrame(
        {"ack_send_state": tried["state"], "ack_note": tried["resolution"].fillna(tried["error"])}
    ).set_axis(tried["request_id"])

    # Our newest acknowledgment that was sent, what it said, and the version it acknowledges.
    sent = ours[ours["state"] == "sent"].drop_duplicates("request_id", keep="last")
    version = acknowledged_versions(sent, t["versions"])
    sent = sent.join(newest_acknowledgments(t["acknowledgments"], "sent"), on="outbox_id")
    sent = pd.DataFrame(
        {
            "ack_outbox_id": sent["outbox_id"],
            "acknowledged_at": sent["recorded_at"].fillna(sent["updated_at"]),
            "ack_award_total": sent["academic_award_total"],
            "ack_course_total": sent["course_total"],
            "acknowledged_version": version.array,
            "acked": pd.Series(True, index=sent.index, dtype=FLAG),
        }
    ).set_axis(sent["request_id"])

    frame = t["transcripts"].join(tried).join(sent).reset_index()
    # Our newest acknowledgment is of an older version than the current one: re-issued since.
    since = aged(frame, now, sla_days=sla_days)
    acked = frame["acked"].fillna(False)
    older = (frame["acknowledged_version"] < frame["current_version"]).fillna(False)
    frame["reissued_after_ack"] = acked & older
    acknowledged = acked & ~older
    left = frame["left_at"].notna() | frame["left_reason"].notna()  # a row never listed: not
    frame["state"] = states(
        [
            ("acknowledged", acknowledged),
            ("ack_uncertain", frame["ack_send_state"].isin(UNSETTLED)),
            ("closed_elsewhere", ~frame["on_list"].fillna(False) & left),
        ],
        default="awaiting_ack",
        order=CONSUMER_STATES,
    )
    late = overdue(frame, since, now, sla_days=sla_days, grace_days=grace_days)
    frame["sla_breached"] = (frame["state"] == "awaiting_ack") & late
    first, matched = duplicates(frame)
    frame["duplicate"] = first.notna()
    frame["duplicate_of"] = first
    frame["duplicate_key"] = matched
    problems = [
        frame["parse_error"].notna(),
        (frame["validation_status"] == "invalid").fillna(False),
    ]
    codes = np.select([p.to_numpy(dtype=bool) for p in problems], [0, 1], default=-1)
    frame["document_problem"] = pd.Categorical.from_codes(codes, list(DOCUMENT_PROBLEMS))
    return typed(frame, TRANSCRIPT_COLUMNS)


def duplicates(frame: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Per transcript, the earliest transcript (by ``request_date``) with the same student and
    source organisation, itself included (missing when it has no twin), and the student key
    that matched (``DUPLICATE_KEYS``, the first that matches).

    A weaker key does not match where a stronger one tells the students apart (same name and
    birth date, different OENs: two students). Values compare exactly: one source writes one
    student the same way each time.
    """
    first = pd.Series(pd.NA, index=frame.index, dtype=TEXT)
    matched = pd.Series(pd.NA, index=frame.index, dtype=TEXT)
    # Each value as an integer code (missing: NaN), so that every key groups on numbers: the
    # text is hashed once per column, not once per key and step (bench/reconcile.py, 200,000
    # requests: consumer status 1.4 s, 2.4 s on the text).
    values = {
        "organisation": frame["source_org_id"].fillna(frame["source_org_name"]),
        **{c: frame[c] for name in DUPLICATE_KEYS for c in _KEY_COLUMNS[name]},
    }
    codes = {c: pd.factorize(v)[0] for c, v in values.items()}
    ordered = pd.DataFrame(
        {c: np.where(code >= 0, code, np.nan) for c, code in codes.items()}
        | {"transcript_id": frame["transcript_id"], "request_date": frame["request_date"]},
        index=frame.index,
    ).sort_values("request_date", kind="stable")
    for strength, name in enumerate(DUPLICATE_KEYS):
        key = ["organisation", *_KEY_COLUMNS[name]]
        twins = ordered.dropna(subset=key)
        twins = twins[twins.duplicated(key, keep=False)]
        if twins.empty:
            continue
        groups = twins.groupby(key, sort=False)
        alike = pd.Series(True, index=twins.index)
        for stronger in DUPLICATE_KEYS[:strength]:
            (column,) = _KEY_COLUMNS[stronger]
            alike &= groups[column].transform("nunique") <= 1
        fresh = alike & first[twins.index].isna()
        first[fresh[fresh].index] = groups["transcript_id"].transform("first")[fresh]
        matched[fresh[fresh].index] = name
    return first, matched


def later_copies(transcripts: pd.DataFrame, id_column: str) -> pd.Series:
    """Which transcripts are duplicates of an earlier one (not the first of their group)."""
    later = transcripts["duplicate"] & (transcripts["duplicate_of"] != transcripts[id_column])
    return later.fillna(False)


def acknowledged_versions(acks: pd.DataFrame, versions: pd.DataFrame) -> pd.Series:
    """The version of a transcript received each acknowledgment of ours acknowledges (an
    outbox row: ``request_id``, ``sent_document_id``, ``created_at``), missing where none is known.

    An acknowledgment copies the DocumentID it acknowledges (``pesc/NOTES.md`` §6), which a
    re-issue may reuse (§2): of the versions received before it, the latest with its DocumentID,
    else the latest of any; when none was received before it (acknowledged from a fetched detail
    before a pull stored it), the first with its DocumentID.
    """
    sent = acks[["request_id", "sent_document_id", "created_at"]].assign(row=range(len(acks)))
    received = versions.loc[versions["entity"] == "transcripts_received",
                            ["item_id", "version", "document_id", "first_seen_at"]]  # fmt: skip
    pairs = sent.merge(received, left_on="request_id", right_on="item_id")
    # Missing DocumentIDs would match each other: only named documents are compared.
    named = (pairs["sent_document_id"] == pairs["document_id"]).fillna(False).astype(bool)
    before = (pairs["first_seen_at"] <= pairs["created_at"]).fillna(False).astype(bool)
    by_document = pairs[named & before].groupby("row")["version"].max()
    latest_before = pairs[before].groupby("row")["version"].max()
    first_named = pairs[named].groupby("row")["version"].min()
    version = by_document.combine_first(latest_before).combine_first(first_named)
    version = version.reindex(pd.RangeIndex(len(acks)))
    return pd.Series(version.to_numpy(), index=acks.index).astype(COUNT)
