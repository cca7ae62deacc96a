"""Cross-checks between documents: one row per failed comparison (a clean store gives none).

``check`` is one of:

- ``tracking_id``: a document against the one it answers, by ``RequestTrackingID`` (never by
  the API ``RequestID``, which may be a GUID): each document we sent against the request (or
  the transcript) it answers, and each acknowledgment the partner returned against the
  request; and that acknowledgment's ``DocumentID`` against the transcript we sent (``field``
  = ``document_id``). Only values present on both sides are compared;
- ``student_identity``: the student of a request against the transcript we sent for it
  (pending and uncertain sends included: they may have reached the partner), field by field:
  first and last name, birth date, OEN, OCAS account and application numbers, school-assigned
  id. Only values present on both sides are compared, after case-folding and trimming (ids
  also lose spaces and dashes; birth dates compare their first 10 characters);
- ``sla``: a request awaiting our response, or a transcript awaiting our acknowledgment,
  for more than ``sla_days``;
- ``ack_totals``: an acknowledgment's ``AcademicAwardTotal``/``CourseTotal`` against the
  transcript's counts: the partner's (``side`` supplier) against what we sent, a total it left
  out counting as a mismatch; ours (``side`` consumer) against the transcript we received.

``expected`` is what our side holds (the request's tracking id and student, the counts we sent),
``found`` what the other document says; both as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from workbench.reconcile.consumer import status
from workbench.reconcile.inputs import (
    COUNT,
    IDENTITY,
    TEXT,
    UNSETTLED,
    conform,
    normalised,
    resolve_now,
    text,
)
from workbench.reconcile.links import ACK_OPERATION, Links, last_per, link, pick
from workbench.reconcile.supplier import lifecycle

CHECKS = ("tracking_id", "student_identity", "sla", "ack_totals")
CHECK_COLUMNS: dict[str, str] = {
    "check": TEXT,
    "side": TEXT,
    "id": TEXT,
    "subject": TEXT,
    "field": TEXT,
    "expected": TEXT,
    "found": TEXT,
    "outbox_id": COUNT,
}
SENT_SUBJECT = {
    "send_response": ("supplier", "response sent"),
    "send_transcript": ("supplier", "transcript sent"),
    "send_acknowledgment": ("consumer", "acknowledgment sent"),
}
_MAY_HAVE_REACHED = ("sent", *UNSETTLED)
_IDS = frozenset(
    {
        "student_oen",
        "student_ocas_account",
        "student_ocas_application",
        "student_school_assigned_id",
    }
)


def cross_checks(
    tables: Mapping[str, pd.DataFrame], *, now: Any = None, sla_days: float = 5
) -> pd.DataFrame:
    """Every failed cross-check (columns ``CHECK_COLUMNS``); ``now``/``sla_days`` drive ``sla``.

    >>> checks = cross_checks(tables)  # doctest: +SKIP
    >>> checks[checks.check == "student_identity"]  # doctest: +SKIP
    """
    links = link(conform(tables))
    when = resolve_now(now, tables)
    requests = lifecycle(links, now=when, sla_days=sla_days)
    transcripts = status(links, now=when, sla_days=sla_days)
    return checks(links, requests, transcripts, sla_days=sla_days)


def checks(
    links: Links, requests: pd.DataFrame, transcripts: pd.DataFrame, *, sla_days: float
) -> pd.DataFrame:
    """``cross_checks`` on linked tables and their lifecycle frames."""
    parts = [
        *_tracking(links),
        *_identity(links),
        *_sla(requests, transcripts, sla_days),
        *_ack_totals(requests, transcripts),
    ]
    frames = [p for p in parts if len(p)]
    if not frames:
        return empty_checks()
    out = pd.concat(frames, ignore_index=True)
    out = pd.DataFrame({c: out[c].astype(d) for c, d in CHECK_COLUMNS.items()})
    order = out["check"].map({name: i for i, name in enumerate(CHECKS)})
    keys = pd.DataFrame({"o": order, "side": out["side"]})
    ranked = keys.sort_values(["o", "side"], kind="stable").index
    return out.loc[ranked].reset_index(drop=True)


def empty_checks() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in CHECK_COLUMNS.items()})


def _rows(
    check: str,
    side: Any,
    ids: Any,
    subject: Any,
    field: str,
    expected: Any,
    found: Any,
    outbox_id: Any = pd.NA,
) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "check": check,
            "side": side,
            "id": _values(ids),
            "subject": subject,
            "field": field,
            "expected": _values(expected),
            "found": _values(found),
            "outbox_id": _values(outbox_id),
        }
    )


def _values(value: Any) -> Any:
    return value.to_numpy(dtype=object, na_value=None) if isinstance(value, pd.Series) else value


def _differ(ours: pd.Series, theirs: pd.Series, *, both: bool = True) -> np.ndarray:
    """Rows where the two columns differ; ``both``: only where both have a value (else also
    where ``theirs`` is missing and ``ours`` is not). Only present values are compared, so the
    arrays are used as they are stored, missing markers and all."""
    a, b = np.asarray(ours.array, dtype=object), np.asarray(theirs.array, dtype=object)
    has_a, has_b = ours.notna().to_numpy(dtype=bool), theirs.notna().to_numpy(dtype=bool)
    present = np.flatnonzero(has_a & has_b)
    differ = np.zeros(len(a), dtype=bool)
    differ[present] = a[present] != b[present]
    return differ | (has_a & ~has_b) if not both else differ


def _tracking(links: Links) -> list[pd.DataFrame]:
    """Documents that contradict what they answer: each of ours, and each acknowledgment the
    partner returned, against the RequestTrackingID of the request (or transcript) it answers,
    and that acknowledgment's DocumentID against the transcript we sent. The API id is never
    compared: a partner may key its API by a GUID, distinct from any tracking id."""
    parts = []
    ob = links.outbox
    answered = _answered_tracking(
        links, ob["target"].to_numpy(), links.operation.mask(ACK_OPERATION)
    )
    reached = links.state.mask(*_MAY_HAVE_REACHED)
    wrong = reached & _differ(answered, ob["sent_request_tracking_id"])
    if wrong.any():
        side_subject = ob["operation"][wrong].map(lambda op: SENT_SUBJECT.get(op, ("supplier", op)))
        parts.append(
            _rows(
                "tracking_id",
                side_subject.str[0],
                ob["request_id"][wrong],
                side_subject.str[1],
                "request_tracking_id",
                answered[wrong],
                ob["sent_request_tracking_id"][wrong],
                ob["outbox_id"][wrong],
            )
        )
    acks = links.acknowledgments
    received = links.direction.mask("received")
    of_request = pick(links.requests["request_tracking_id"], np.where(received, acks["target"], -1))
    bad = _differ(of_request, acks["request_tracking_id"])
    parts.append(
        _rows(
            "tracking_id",
            "supplier",
            acks["request_id"][bad],
            "acknowledgment received",
            "request_tracking_id",
            of_request[bad],
            acks["request_tracking_id"][bad],
            acks["outbox_id"][bad],
        )
    )
    entry = np.where(received, acks["entry"].to_numpy(), -1)
    sent_document = pick(ob["sent_document_id"], entry)
    echo = _differ(sent_document, acks["document_id"])
    echoed = acks[echo]
    parts.append(
        _rows(
            "tracking_id",
            "supplier",
            echoed["request_id"],
            "acknowledgment received",
            "document_id",
            sent_document[echo],
            echoed["document_id"],
            echoed["outbox_id"],
        )
    )
    return parts


def _answered_tracking(links: Links, target: np.ndarray, of_transcript: np.ndarray) -> pd.Series:
    """The RequestTrackingID of what each row answers: the request at ``target``, or the
    transcript there where ``of_transcript`` (missing where we hold no document for it)."""
    request = pick(links.requests["request_tracking_id"], np.where(of_transcript, -1, target))
    transcript = pick(links.transcripts["request_tracking_id"], np.where(of_transcript, target, -1))
    return request.fillna(transcript)


def _identity(links: Links) -> list[pd.DataFrame]:
    ob = links.outbox
    target = ob["target"].to_numpy()
    sent = np.flatnonzero(
        links.operation.mask("send_transcript")
        & links.state.mask(*_MAY_HAVE_REACHED)
        & (target >= 0)
    )
    sent = sent[last_per(target[sent])]
    at = target[sent]
    requests = links.requests
    ids = requests["request_id"].iloc[at]
    parts = []
    for column in IDENTITY:
        ours = requests[column].take(at)
        theirs = ob[f"sent_{column}"].take(sent)
        differ = np.flatnonzero(_differ(ours, theirs))
        if not len(differ):
            continue
        a, b = ours.iloc[differ].reset_index(drop=True), theirs.iloc[differ].reset_index(drop=True)
        if column in _IDS:
            a, b = a.str.replace(r"[\s-]", "", regex=True), b.str.replace(r"[\s-]", "", regex=True)
        elif column == "student_birth_date":
            a, b = a.str.slice(0, 10), b.str.slice(0, 10)
        else:
            a, b = normalised(a), normalised(b)
        rows = differ[(a != b).fillna(False).to_numpy(dtype=bool)]
        parts.append(
            _rows(
                "student_identity",
                "supplier",
                ids.iloc[rows],
                "transcript sent",
                column,
                ours.iloc[rows],
                theirs.iloc[rows],
                ob["outbox_id"].iloc[sent[rows]],
            )
        )
    return parts


def _sla(requests: pd.DataFrame, transcripts: pd.DataFrame, sla_days: float) -> list[pd.DataFrame]:
    limit = f"<= {sla_days:g}"
    late = requests[requests["sla_breached"].fillna(False)]
    waiting = transcripts[transcripts["sla_breached"].fillna(False)]
    return [
        _rows(
            "sla",
            "supplier",
            late["request_id"],
            "request",
            "age_days",
            limit,
            pd.Series(text(late["age_days"])),
        ),
        _rows(
            "sla",
            "consumer",
            waiting["transcript_id"],
            "transcript received",
            "age_days",
            limit,
            pd.Series(text(waiting["age_days"])),
        ),
    ]


def _ack_totals(requests: pd.DataFrame, transcripts: pd.DataFrame) -> list[pd.DataFrame]:
    parts = []
    theirs = requests[requests["state"] == "ack_mismatch"]
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
        parts.append(
            _rows(
                "ack_totals",
                "supplier",
                rows["request_id"],
                "acknowledgment received",
                field,
                rows[sent].astype("string"),
                rows[acked].astype("string"),
                rows["transcript_outbox_id"],
            )
        )
        rows = mine[mine[counted].notna() & (mine[acked] != mine[counted]).fillna(True)]
        parts.append(
            _rows(
                "ack_totals",
                "consumer",
                rows["transcript_id"],
                "acknowledgment sent",
                field,
                rows[counted].astype("string"),
                rows[acked].astype("string"),
                rows["ack_outbox_id"],
            )
        )
    return parts
