"""The exceptions table: every kind, from a crafted store, with its id, side and severity."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from tests.reconcile.builders import NOW, Partner, request_flat, transcript_flat
from workbench import reconcile

EXPECTED = {
    ("identity_mismatch", "R-WHO", "supplier", "critical"),
    ("identity_mismatch", "R-NAME", "supplier", "high"),
    ("tracking_id_mismatch", "R-TRK", "supplier", "high"),
    ("tracking_id_mismatch", "R-OURS", "supplier", "high"),
    ("ack_mismatch", "R-TOTALS", "supplier", "high"),
    ("ack_mismatch", "T-TOTALS", "consumer", "medium"),
    ("uncertain_send", "R-UNSURE", "supplier", "high"),
    ("uncertain_send", "T-UNSURE", "consumer", "high"),
    ("parse_error", "R-BROKEN", "supplier", "high"),
    ("parse_error", "T-BROKEN", "consumer", "high"),
    ("response_overdue", "R-LATE", "supplier", "medium"),
    ("response_overdue", "R-VERY-LATE", "supplier", "high"),
    ("ack_overdue", "T-LATE", "consumer", "medium"),
    ("hold_overdue", "R-HOLD", "supplier", "medium"),
    ("transcript_unacknowledged", "R-NOACK", "supplier", "medium"),
    ("duplicate_transcript", "T-AGAIN", "consumer", "medium"),
    ("reissued_after_ack", "T-REISSUED", "consumer", "medium"),
    ("detail_missing", "R-FAIL", "supplier", "medium"),
    ("closed_elsewhere", "R-GONE", "supplier", "low"),
    ("closed_elsewhere", "T-GONE", "consumer", "low"),
    ("schema_invalid", "T-INVALID", "consumer", "low"),
}


@pytest.fixture(scope="module")
def rec(module_partner: Callable[[], Partner]) -> reconcile.Reconciliation:
    p = module_partner()
    unique = iter(range(100_000_000, 100_000_100))

    def student() -> dict:  # a student no other transcript names
        return {"student_oen": str(next(unique)), "student_last_name": f"N{next(unique)}"}

    p.request("R-WHO")
    p.send_transcript("R-WHO", student_oen="000000000")
    p.request("R-NAME")
    p.send_transcript("R-NAME", student_last_name="Smith")
    # The API id is not the tracking id (fine); the partner's acknowledgment names another one.
    p.request("R-TRK", flat=request_flat("R-TRK", request_tracking_id="C1"))
    p.send_transcript("R-TRK", request_tracking_id="C1", ack_changes={"request_tracking_id": "C2"})
    p.request("R-OURS")
    ours = p.store.outbox.begin("send_response", "R-OURS", "<TranscriptResponse/>",
                                flat={"request_tracking_id": "R-SOMEONE"})  # fmt: skip
    p.store.outbox.mark_sent(ours, status=200, response_body="{}")
    p.request("R-TOTALS")
    p.send_transcript("R-TOTALS", awards=2, courses=12, ack=(1, 12))
    p.transcript("T-TOTALS", flat=transcript_flat("T-TOTALS", awards=1, courses=12, **student()))
    p.acknowledge("T-TOTALS", awards=1, courses=10)
    p.transcript("T-REISSUED", flat=transcript_flat("T-REISSUED", **student()))
    p.acknowledge("T-REISSUED")
    p.new_version("T-REISSUED", "Reissue")
    p.request("R-UNSURE")
    p.transcript("T-UNSURE", flat=transcript_flat("T-UNSURE", **student()))
    p.request("R-BROKEN", flat={}, parse_error="malformed: not well-formed (line 1)",
              validation={"status": "invalid", "note": "not parsed"})  # fmt: skip
    p.transcript("T-BROKEN", flat={}, parse_error="malformed: a raw &",
                 validation={"status": "invalid", "note": "not parsed"})  # fmt: skip
    p.request("R-LATE", days=8)
    p.request("R-VERY-LATE", days=12)
    p.transcript("T-LATE", days=6, flat=transcript_flat("T-LATE", **student()))
    p.request("R-HOLD", days=6)
    p.respond("R-HOLD", "Hold", hold_reason="TranscriptFee", planned="2026-03-05")
    p.request("R-NOACK")
    p.send_transcript("R-NOACK", ack=None)
    p.transcript("T-FIRST", days=3)
    p.acknowledge("T-FIRST")
    p.transcript("T-AGAIN", days=2)
    p.acknowledge("T-AGAIN")
    p.store.record_detail_failure("supplier_requests", "R-FAIL", "HTTP 503 from the partner")
    p.request("R-GONE")
    p.transcript("T-GONE", flat=transcript_flat("T-GONE", **student()))
    p.transcript("T-INVALID", validation={"status": "invalid", "errors": ["Birthday: '1210'"]},
                 flat=transcript_flat("T-INVALID", **student()))  # fmt: skip
    p.list_requests("R-TRK", "R-BROKEN", "R-LATE", "R-VERY-LATE", "R-GONE")
    p.list_transcripts("T-TOTALS", "T-UNSURE", "T-BROKEN", "T-LATE", "T-GONE", "T-INVALID")
    p.list_requests("R-TRK", "R-BROKEN", "R-LATE", "R-VERY-LATE")
    p.list_transcripts("T-UNSURE", "T-BROKEN", "T-LATE", "T-INVALID")
    p.respond("R-UNSURE", state="uncertain")  # no list requested since either
    p.acknowledge("T-UNSURE", state="uncertain")
    return reconcile.reconcile(reconcile.load(p.store), now=NOW, sla_days=5)


def test_every_exception_kind_with_its_rows(rec: reconcile.Reconciliation) -> None:
    found = {tuple(r) for r in rec.exceptions[["kind", "id", "side", "severity"]].astype(str)
             .itertuples(index=False)}  # fmt: skip
    assert found == EXPECTED
    assert {kind for kind, *_ in EXPECTED} == set(reconcile.EXCEPTION_KINDS)


def test_worst_first_and_typed(rec: reconcile.Reconciliation) -> None:
    ex = rec.exceptions
    assert list(ex.columns) == list(reconcile.EXCEPTION_COLUMNS)
    assert ex["severity"].cat.ordered
    assert list(ex["severity"].cat.categories) == ["low", "medium", "high", "critical"]
    assert ex["severity"].is_monotonic_decreasing
    assert set(ex[ex["severity"] >= "high"]["kind"]) == {
        "identity_mismatch", "tracking_id_mismatch", "ack_mismatch", "uncertain_send",
        "parse_error", "response_overdue",
    }  # fmt: skip
    assert ex["id"].dtype == "string" and ex["detail"].notna().all()


def _row(rec: reconcile.Reconciliation, kind: str, item: str) -> pd.Series:
    ex = rec.exceptions
    return ex[(ex["kind"] == kind) & (ex["id"] == item)].iloc[0]


@pytest.mark.parametrize(
    ("kind", "item", "detail", "action"),
    [
        ("response_overdue", "R-LATE", "has had no response for 8.0 days (SLA 5)",
         "Send a TranscriptResponse (Hold or TranscriptRequestReceived) — open 8.0 days, SLA 5"),
        ("ack_overdue", "T-LATE", "awaited our acknowledgment for 6.0 days (SLA 5)",
         "w.consumer.send_acknowledgment('T-LATE') — waiting 6.0 days, SLA 5"),
        ("identity_mismatch", "R-WHO", "OEN 123456789 vs 000000000", "withdraw it"),
        ("identity_mismatch", "R-NAME", "last name Tremblay vs Smith", "registrar"),
        ("tracking_id_mismatch", "R-TRK", "acknowledgment received: RequestTrackingID C2, not C1",
         "`workbench bundle R-TRK`"),
        ("tracking_id_mismatch", "R-OURS", "response sent: RequestTrackingID R-SOMEONE, not "
         "R-OURS", "A document we sent names another request: check outbox entry"),
        ("ack_mismatch", "R-TOTALS", "awards 2 counted, 1 acknowledged", "force=True"),
        ("ack_mismatch", "T-TOTALS", "courses 12 counted, 10 acknowledged",
         "w.consumer.send_acknowledgment('T-TOTALS', force=True)"),
        ("uncertain_send", "R-UNSURE", "send_response is uncertain since", "Do not resend"),
        ("uncertain_send", "T-UNSURE", "send_acknowledgment is uncertain", "run a pull"),
        ("parse_error", "T-BROKEN", "does not parse: malformed: a raw &", "well-formed"),
        ("hold_overdue", "R-HOLD", "Response Hold (reason: TranscriptFee) planned release "
         "2026-03-05, 5.4 days ago", "new PlannedReleaseDate"),
        ("transcript_unacknowledged", "R-NOACK", "no acknowledgment of it is recorded",
         "we sent 2 awards, 12 courses"),
        ("reissued_after_ack", "T-REISSUED", "Version 2 (Reissue) arrived after our "
         "acknowledgment of version 1", "w.consumer.send_acknowledgment('T-REISSUED')."),
        ("duplicate_transcript", "T-AGAIN", "Same student (oen: Tremblay, Emma) and source "
         "(St. Brendan's College) as transcript T-FIRST", "acknowledge both"),
        ("detail_missing", "R-FAIL", "could not be fetched: HTTP 503 from the partner",
         "`workbench bundle R-FAIL`"),
        ("closed_elsewhere", "T-GONE", "Left the consumer list at", "nothing to send"),
        ("schema_invalid", "T-INVALID", "fails its PESC schema: Birthday: '1210'",
         "Usable as stored"),
    ],
)  # fmt: skip
def test_details_and_actions_an_analyst_can_act_on(rec, kind, item, detail, action) -> None:
    row = _row(rec, kind, item)
    assert detail in row["detail"]
    assert action in row["suggested_action"]


def test_the_pure_function_matches_reconcile(rec: reconcile.Reconciliation) -> None:
    again = reconcile.exceptions(rec.requests, rec.transcripts, rec.checks)
    pd.testing.assert_frame_equal(again, rec.exceptions)
