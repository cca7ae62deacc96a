"""Cross-checks between documents: one row per failed comparison (``docs/reconcile.md``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from workbench.pesc.fields import comparable
from workbench.reconcile.inputs import (
    COUNT,
    IDENTITY,
    SUPPLIER_OPERATIONS,
    TEXT,
    UNSETTLED,
    by_entry,
    text,
)

CHECKS = ("tracking_id", "student_identity", "sla", "ack_totals")
CHECK_COLUMNS: dict[str, str] = {
    "check": TEXT, "side": TEXT, "id": TEXT, "subject": TEXT, "field": TEXT, "expected": TEXT,
    "found": TEXT, "outbox_id": COUNT,
}  # fmt: skip
_SENT = {
    "send_response": ("supplier", "response sent"),
    "send_transcript": ("supplier", "transcript sent"),
    "send_acknowledgment": ("consumer", "acknowledgment sent"),
}  # operation -> (side, subject)
_MAY_HAVE_REACHED = ("sent", *UNSETTLED)


def checks(
    t: Mapping[str, pd.DataFrame],
    requests: pd.DataFrame,
    transcripts: pd.DataFrame,
    *,
    sla_days: float,
) -> pd.DataFrame:
    """``reconcile``'s ``checks`` from ``prepared`` tables and their lifecycle frames."""
    parts = [
        *_tracking(t),
        *_identity(t),
        *_sla(requests, transcripts, sla_days),
        *_ack_totals(requests, transcripts),
    ]
    frames = [p for p in parts if len(p)] or [pd.DataFrame(columns=[*CHECK_COLUMNS])]
    out = pd.concat(frames, ignore_index=True)
    out = pd.DataFrame({c: out[c].astype(d) for c, d in CHECK_COLUMNS.items()})
    out = out.assign(rank=out["check"].map(CHECKS.index)).sort_values(
        ["rank", "side"], kind="stable"
    )
    return out.drop(columns="rank").reset_index(drop=True)


def _rows(check: str, side: Any, ids: Any, subject: Any, field: str, expected: Any, found: Any,
          outbox_id: Any = pd.NA) -> pd.DataFrame:  # fmt: skip
    """Failed checks of one kind, one per id."""
    values = dict(check=check, side=side, id=ids, subject=subject, field=field,
                  expected=expected, found=found, outbox_id=outbox_id)  # fmt: skip
    return pd.DataFrame({k: v.to_numpy(dtype=object, na_value=None) if isinstance(v, pd.Series)
                         else v for k, v in values.items()})  # fmt: skip


def _differ(ours: pd.Series, theirs: pd.Series) -> pd.Series:
    """Rows where both columns have a value and the values differ."""
    return (ours != theirs).fillna(False).astype(bool)


def _tracking(t: Mapping[str, pd.DataFrame]) -> list[pd.DataFrame]:
    """Documents that contradict what they answer (``tracking_id`` in ``docs/reconcile.md``)."""
    parts = []
    ob = t["outbox"]
    of_request = t["requests"]["request_tracking_id"]
    of_transcript = t["transcripts"]["request_tracking_id"]
    # Only what may have reached the partner and names a tracking id can contradict it.
    reached = ob["state"].isin(_MAY_HAVE_REACHED) & ob["sent_request_tracking_id"].notna()
    sent = ob.loc[reached, ["operation", "request_id", "outbox_id", "sent_request_tracking_id"]]
    # A supplier's send answers a request; an acknowledgment, a transcript.
    supplier = sent["operation"].isin(SUPPLIER_OPERATIONS)
    answered = (
        sent["request_id"].map(of_request).where(supplier, sent["request_id"].map(of_transcript))
    )
    wrong = _differ(answered.astype(TEXT), sent["sent_request_tracking_id"])
    if wrong.any():
        contradicting = sent[wrong]
        side_subject = contradicting["operation"].map(lambda op: _SENT.get(op, ("supplier", op)))
        parts.append(_rows("tracking_id", side_subject.str[0], contradicting["request_id"],
                           side_subject.str[1], "request_tracking_id", answered[wrong],
                           contradicting["sent_request_tracking_id"],
                           contradicting["outbox_id"]))  # fmt: skip
    acks = t["acknowledgments"]
    received = acks[(acks["direction"] == "received").fillna(False)]
    expected = received["answers"].map(of_request).astype(TEXT)
    bad = _differ(expected, received["request_tracking_id"])
    parts.append(_rows("tracking_id", "supplier", received["request_id"][bad],
                       "acknowledgment received", "request_tracking_id", expected[bad],
                       received["request_tracking_id"][bad],
                       received["outbox_id"][bad]))  # fmt: skip
    sent_document = received["outbox_id"].map(by_entry(ob, "sent_document_id")).astype(TEXT)
    echo = _differ(sent_document, received["document_id"])
    echoed = received[echo]
    parts.append(_rows("tracking_id", "supplier", echoed["request_id"],
                       "acknowledgment received", "document_id", sent_document[echo],
                       echoed["document_id"], echoed["outbox_id"]))  # fmt: skip
    return parts


def _identity(t: Mapping[str, pd.DataFrame]) -> list[pd.DataFrame]:
    """The student of each request against the newest transcript we sent for it."""
    ob = t["outbox"]
    sent = ob.loc[
        (ob["operation"] == "send_transcript") & ob["state"].isin(_MAY_HAVE_REACHED),
        ["request_id", "outbox_id", *(f"sent_{c}" for c in IDENTITY)],
    ]
    sent = sent.drop_duplicates("request_id", keep="last")
    # A send for a request we do not hold finds its student missing: it compares nothing.
    students = t["requests"][list(IDENTITY)].reindex(sent["request_id"])
    pairs = sent.join(students.set_axis(sent.index))
    parts = []
    for column in IDENTITY:
        # Only the rows that differ as stored can differ once normalised: normalise those.
        differ = _differ(pairs[column], pairs[f"sent_{column}"])
        if not differ.any():
            continue
        rows = pairs[differ]
        ours, theirs = (_comparable(rows[c], column) for c in (column, f"sent_{column}"))
        rows = rows[(ours != theirs).fillna(False)]
        parts.append(_rows("student_identity", "supplier", rows["request_id"], "transcript sent",
                           column, rows[column], rows[f"sent_{column}"],
                           rows["outbox_id"]))  # fmt: skip
    return parts


def _comparable(values: pd.Series, column: str) -> pd.Series:
    """Identity values as compared; missing or blank ones are missing, and compare nothing."""
    return values.map(lambda v: comparable(v, column), na_action="ignore").astype(TEXT)


def _sla(requests: pd.DataFrame, transcripts: pd.DataFrame, sla_days: float) -> list[pd.DataFrame]:
    limit = f"<= {sla_days:g}"
    late = requests.loc[requests["sla_breached"].fillna(False), ["request_id", "age_days"]]
    waiting = transcripts.loc[
        transcripts["sla_breached"].fillna(False), ["transcript_id", "age_days"]
    ]
    return [
        _rows("sla", "supplier", late["request_id"], "request", "age_days", limit,
              pd.Series(text(late["age_days"]))),
        _rows("sla", "consumer", waiting["transcript_id"], "transcript received", "age_days",
              limit, pd.Series(text(waiting["age_days"]))),
    ]  # fmt: skip


def _ack_totals(requests: pd.DataFrame, transcripts: pd.DataFrame) -> list[pd.DataFrame]:
    parts = []
    theirs = requests[requests["ack_totals_differ"].fillna(False)]  # in any state
    mine = transcripts[
        (transcripts["state"] == "acknowledged")
        & (transcripts["ack_award_total"].notna() | transcripts["ack_course_total"].notna())
    ]
    pairs = (
        ("academic_award_total", "sent_award_count", "ack_award_total", "award_count"),
        ("course_total", "sent_course_count", "ack_course_total", "course_count"),
    )
    for field, sent, acked, counted in pairs:
        rows = theirs[(theirs[acked] != theirs[sent]).fillna(True)]
        parts.append(_rows("ack_totals", "supplier", rows["request_id"], "acknowledgment received",
                           field, rows[sent].astype("string"), rows[acked].astype("string"),
                           rows["transcript_outbox_id"]))  # fmt: skip
        rows = mine[mine[counted].notna() & (mine[acked] != mine[counted]).fillna(True)]
        parts.append(_rows("ack_totals", "consumer", rows["transcript_id"], "acknowledgment sent",
                           field, rows[counted].astype("string"), rows[acked].astype("string"),
                           rows["ack_outbox_id"]))  # fmt: skip
    return parts
