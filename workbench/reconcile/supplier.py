"""The supplier's side: one row per transcript request, with its lifecycle ``state`` (the
package docstring gives the states' precedence)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from workbench.reconcile.inputs import (
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


def lifecycle(
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
