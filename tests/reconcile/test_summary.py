"""Headline figures and the per-organisation breakdown, on hand-built tables."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.reconcile.builders import NOW
from workbench import reconcile


def _day(days: float) -> pd.Timestamp:
    return pd.Timestamp(NOW) - pd.Timedelta(days=days)


@pytest.fixture
def rec() -> reconcile.Reconciliation:
    tables = reconcile.empty_tables()
    ages = {"A0": 0.5, "A2": 2.9, "A3": 3.0, "A5": 5.5, "A7": 7, "A10": 10.9, "A11": 11, "A30": 30}
    requests = [
        {"request_id": rid, "request_date": _day(age), "on_list": True,
         "source_org_id": "OCAS", "source_org_name": "OCAS"}
        for rid, age in ages.items()
    ] + [
        {"request_id": rid, "request_date": _day(1), "on_list": False, "left_reason": "outbox",
         "source_org_id": "OUAC", "source_org_name": "OUAC"}
        for rid in ("H1", "H2", "S1", "M1", "K1")
    ]  # fmt: skip
    tables["requests"] = pd.DataFrame(requests)
    outbox = [
        ("H1", "send_response", "sent"), ("H2", "send_response", "sent"),
        ("S1", "send_response", "sent"), ("S1", "send_transcript", "sent"),
        ("M1", "send_transcript", "sent"), ("K1", "send_transcript", "sent"),
        ("T2", "send_acknowledgment", "uncertain"),
    ]  # fmt: skip
    tables["outbox"] = pd.DataFrame(
        [{"outbox_id": i, "request_id": r, "operation": o, "state": s, "sent_award_count": 1,
          "sent_course_count": 5} for i, (r, o, s) in enumerate(outbox, 1)]
    )  # fmt: skip
    tables["responses"] = pd.DataFrame(
        {"outbox_id": [1, 2, 3], "request_id": ["H1", "H2", "S1"],
         "response_status": ["Hold", "Hold", "TranscriptRequestReceived"]}
    )  # fmt: skip
    tables["acknowledgments"] = pd.DataFrame(
        {"outbox_id": [5, 6], "direction": "received", "request_id": ["M1", "K1"],
         "academic_award_total": [1, 1], "course_total": [4, 5]}
    )  # fmt: skip
    tables["transcripts"] = pd.DataFrame(
        {"transcript_id": ["T1", "T2", "T3"], "request_date": [_day(1), _day(4), _day(8)],
         "on_list": True, "source_org_id": [None, "354100", "354100"],
         "source_org_name": ["Nowhere College", "Lakeshore", "Lakeshore"],
         "student_oen": ["1", "2", "2"]}
    )  # fmt: skip
    return reconcile.reconcile(tables, now=NOW, sla_days=5)


def test_headline_figures(rec: reconcile.Reconciliation) -> None:
    h = rec.headline
    assert h["requests"] == 13
    assert h["open_requests"] == 8
    # each bucket holds ages above its lower edge, up to its upper one (the SLA, 5, is one)
    assert h["open_by_age"] == {"0-2": 1, "2-5": 2, "5-10": 2, ">10": 3}
    assert h["open_over_sla"] == 5
    assert h["requests_by_state"] == {
        "awaiting_response": 8, "answered_still_listed": 0, "responded": 2,
        "transcript_sent": 1, "acknowledged": 1, "ack_mismatch": 1, "closed_elsewhere": 0,
        "cancelled": 0, "uncertain_send": 0,
    }  # fmt: skip
    assert h["responses_by_status"] == {"Hold": 2, "TranscriptRequestReceived": 1}
    assert (h["transcripts_sent"], h["ack_mismatches"], h["uncertain_sends"]) == (3, 1, 1)
    assert (h["transcripts_received"], h["transcripts_awaiting_ack"]) == (3, 2)
    assert h["awaiting_ack_by_age"] == {"0-2": 1, "2-5": 0, "5-10": 1, ">10": 0}
    assert h["duplicate_transcripts"] == 1
    assert h["exceptions"] == len(rec.exceptions)
    assert sum(h["exceptions_by_severity"].values()) == len(rec.exceptions)
    assert list(h["exceptions_by_severity"]) == ["critical", "high", "medium", "low"]
    assert h["now"] == pd.Timestamp(NOW) and h["sla_days"] == 5


def test_by_organisation(rec: reconcile.Reconciliation) -> None:
    frame = rec.by_organisation
    assert list(frame.columns) == list(reconcile.ORGANISATION_COLUMNS)
    rows = {(r.side, r.organisation_name): r for r in frame.itertuples(index=False)}
    ocas = rows["supplier", "OCAS"]
    assert (ocas.items, ocas.open, ocas.sla_breached, ocas.awaiting_response) == (8, 8, 5, 8)
    assert ocas.exceptions == 5  # one response_overdue per breach
    ouac = rows["supplier", "OUAC"]
    assert (ouac.items, ouac.responded, ouac.acknowledged, ouac.ack_mismatch) == (5, 2, 1, 1)
    assert (ouac.exceptions, ouac.high_or_worse) == (2, 1)  # S1 unacknowledged, M1 mismatch
    lakeshore = rows["consumer", "Lakeshore"]
    assert lakeshore.organisation_id == "354100"
    assert (lakeshore.items, lakeshore.ack_uncertain, lakeshore.awaiting_ack) == (2, 1, 1)
    assert (lakeshore.duplicates, lakeshore.sla_breached) == (1, 1)
    nowhere = rows["consumer", "Nowhere College"]
    assert pd.isna(nowhere.organisation_id) and nowhere.items == 1
    assert frame["items"].dtype == "Int64"
