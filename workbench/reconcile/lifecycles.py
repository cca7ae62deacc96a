"""The two sides' lifecycles: one row per transcript request (supplier) and per transcript
received (consumer), each with its ``state`` (the precedence: ``docs/reconcile.md``)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from workbench.reconcile.inputs import (
    ACK_OPERATION,
    COUNT,
    FLAG,
    SUPPLIER_OPERATIONS,
    TEXT,
    TIME,
    UNSETTLED,
    aged,
    days_between,
    newest_acknowledgments,
    overdue,
    states,
    typed,
    utc_times,
)

SUPPLIER_STATES = (
    "awaiting_response", "answered_still_listed", "responded", "transcript_sent", "acknowledged",
    "ack_mismatch", "closed_elsewhere", "cancelled", "uncertain_send",
)  # fmt: skip
# ResponseStatus values that promise a transcript later (a planned release date can pass).
DEFERRING = ("Hold", "TranscriptRequestReceived", "OfflineRecordSearch")

REQUEST_COLUMNS: dict[str, str | None] = {
    "request_id": TEXT, "state": None, "request_date": TIME, "implausible_request_date": TIME,
    "age_days": "Float64", "age_bucket": None, "sla_breached": FLAG, "on_list": FLAG,
    "left_at": TIME, "left_reason": TEXT, "transmission_type": TEXT, "process_code": TEXT,
    "current_version": COUNT, "version_count": COUNT, "cancelled_at": TIME, "source_org_id": TEXT,
    "source_org_name": TEXT, "student_first_name": TEXT, "student_last_name": TEXT,
    "response_outbox_id": COUNT, "response_status": TEXT, "hold_reason": TEXT,
    "planned_release_date": TEXT, "release_overdue_days": "Float64", "responded_at": TIME,
    "response_inferred": FLAG, "transcript_outbox_id": COUNT, "transcript_version": COUNT,
    "transcript_sent_at": TIME, "transcript_inferred": FLAG, "sent_award_count": COUNT,
    "sent_course_count": COUNT, "acknowledged_at": TIME, "ack_award_total": COUNT,
    "ack_course_total": COUNT, "ack_totals_differ": FLAG, "unsettled_outbox_id": COUNT,
    "unsettled_operation": TEXT, "unsettled_state": TEXT, "unsettled_since": TIME,
    "unsettled_note": TEXT, "detail_error": TEXT, "parse_error": TEXT, "validation_status": TEXT,
    "validation_error": TEXT,
}  # fmt: skip
# The outbox columns the lifecycle reads (a row filter copies every column it keeps).
_SENDS = ["request_id", "operation", "outbox_id", "state", "updated_at", "resolved_at",
          "resolution", "error", "sent_award_count", "sent_course_count"]  # fmt: skip

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


def supplier_side(
    t: Mapping[str, pd.DataFrame], *, now: pd.Timestamp, sla_days: float, grace_days: float = 0
) -> pd.DataFrame:
    """The ``requests`` of ``prepared`` tables; overdue past ``sla_days + grace_days``."""
    outbox = t["outbox"]
    ours = outbox.loc[outbox["operation"].isin(SUPPLIER_OPERATIONS), _SENDS]

    # The latest send of each operation per request; of those, the newest unsettled one.
    latest = ours.drop_duplicates(["request_id", "operation"], keep="last")
    unsettled = latest[latest["state"].isin(UNSETTLED)].drop_duplicates("request_id", keep="last")
    unsettled = unsettled.assign(
        since=unsettled["updated_at"], note=unsettled["resolution"].fillna(unsettled["error"])
    ).set_index("request_id")[["outbox_id", "operation", "state", "since", "note"]]
    unsettled = unsettled.add_prefix("unsettled_")

    # The newest transcript sent (its version: how many were sent), and its acknowledgment.
    sent = ours[(ours["operation"] == "send_transcript") & (ours["state"] == "sent")]
    version = sent.groupby("request_id", dropna=False)["request_id"].transform("size")
    sent = sent.drop_duplicates("request_id", keep="last")
    sent = sent.join(newest_acknowledgments(t["acknowledgments"], "received"), on="outbox_id")
    sent = pd.DataFrame(
        {
            "transcript_outbox_id": sent["outbox_id"],
            "transcript_version": version[sent.index],
            "transcript_sent_at": sent["resolved_at"].fillna(sent["updated_at"]),
            "transcript_inferred": sent["resolved_at"].notna().astype(FLAG),
            "sent_award_count": sent["sent_award_count"],
            "sent_course_count": sent["sent_course_count"],
            "acknowledged_at": sent["recorded_at"],
            "ack_award_total": sent["academic_award_total"],
            "ack_course_total": sent["course_total"],
            "acked": sent["acked"].fillna(False),
        }
    ).set_axis(sent["request_id"])

    # The newest TranscriptResponse we sent.
    responses = t["responses"].sort_values("outbox_id", kind="stable")
    responses = responses.drop_duplicates("answers", keep="last")
    responses = pd.DataFrame(
        {
            "response_outbox_id": responses["outbox_id"],
            "response_status": responses["response_status"],
            "hold_reason": responses["hold_reason"],
            "planned_release_date": responses["planned_release_date"],
            "responded_at": responses["sent_at"],
            "response_inferred": responses["inferred"],
            "responded": pd.Series(True, index=responses.index, dtype=FLAG),
        }
    ).set_axis(responses["answers"])

    # Joined one by one on the requests' index, whose hash table pandas keeps (a join of a list
    # of frames first unites their indexes).
    frame = t["requests"].join(unsettled).join(sent).join(responses).reset_index()
    since = aged(frame, now, sla_days=sla_days)
    acked = frame["acked"].fillna(False)
    known = frame["sent_award_count"].notna() & frame["sent_course_count"].notna()
    differs = _differs(frame["ack_award_total"], frame["sent_award_count"]) | _differs(
        frame["ack_course_total"], frame["sent_course_count"]
    )
    listed = frame["on_list"].fillna(False)
    left = ~listed & (frame["left_at"].notna() | frame["left_reason"].notna())  # never listed: not
    cancelled = frame["cancelled_at"].notna() | (frame["transmission_type"] == "Cancellation")
    unsettled = frame["unsettled_outbox_id"].notna()
    sent = frame["transcript_outbox_id"].notna()
    answered = sent | frame["responded"].fillna(False)
    frame["ack_totals_differ"] = acked & known & differs  # in any state (ack_totals check)
    frame["state"] = states(
        [
            ("answered_still_listed", listed & ~cancelled & answered & ~unsettled),
            ("ack_mismatch", frame["ack_totals_differ"]),
            ("acknowledged", acked),
            ("cancelled", cancelled),
            ("uncertain_send", unsettled),
            ("transcript_sent", sent),
            ("responded", frame["responded"]),
            ("closed_elsewhere", left),
        ],
        default="awaiting_response",
        order=SUPPLIER_STATES,
    )
    late = overdue(frame, since, now, sla_days=sla_days, grace_days=grace_days)
    frame["sla_breached"] = (frame["state"] == "awaiting_response") & late
    deferring = (
        frame["state"].isin(["responded", "answered_still_listed"])
        & ~sent
        & frame["response_status"].isin(DEFERRING)
    )
    release = utc_times(frame["planned_release_date"].where(deferring.fillna(False)))
    frame["release_overdue_days"] = days_between(release, now).where((release < now).fillna(False))
    return typed(frame, REQUEST_COLUMNS)


def _differs(found: pd.Series, expected: pd.Series) -> pd.Series:
    """Found differs from expected, a missing ``found`` included (a total the partner left out)."""
    return (found != expected).fillna(True) & expected.notna()


def consumer_side(
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
    """Per transcript, the earliest one of the same student and source (itself included;
    missing without a twin), and the key that matched (``docs/reconcile.md``)."""
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
    """The version each acknowledgment of ours (an outbox row: ``request_id``,
    ``sent_document_id``, ``created_at``) acknowledges, missing where none is known (the rule:
    ``docs/reconcile.md``)."""
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
