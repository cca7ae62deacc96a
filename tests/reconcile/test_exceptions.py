"""The exceptions table: every kind, from a crafted store, with its id, side and severity."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pandas as pd
import pytest

from tests.reconcile.builders import NOW, Partner, days_ago, request_flat, transcript_flat
from tests.store.helpers import store_detail
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
    ("implausible_date", "R-EPOCH", "supplier", "low"),
    ("implausible_date", "T-NEVER", "consumer", "low"),
}
YEAR_ONE = datetime(1, 1, 1, 9, tzinfo=UTC)


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
    # A RequestDate of year 1 and one of 9999, as a partner may send them: kept, not used.
    for item, list_name, flat, dated in (
        ("R-EPOCH", "supplier_requests", request_flat("R-EPOCH"), YEAR_ONE),
        ("T-NEVER", "consumer_transcripts", transcript_flat("T-NEVER", **student()),
         datetime(9999, 12, 31, 9, tzinfo=UTC)),
    ):  # fmt: skip
        store_detail(
            p.store,
            list_name,
            item,
            request_date=dated,
            seen_at=days_ago(1),
            flat=flat,
            detail={"RequestID": item, "PESCXML": "<x/>"},
            validation={"status": "valid"},
        )
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
         "Send a TranscriptResponse (Hold or TranscriptRequestReceived): `workbench send "
         "response --status TranscriptRequestReceived R-LATE` — open 8.0 days, SLA 5"),
        ("ack_overdue", "T-LATE", "awaited our acknowledgment for 6.0 days (SLA 5)",
         "`workbench send ack T-LATE` (Python: `w.consumer.send_acknowledgment('T-LATE')`) — "
         "waiting 6.0 days, SLA 5"),
        ("identity_mismatch", "R-WHO", "OEN (request: 123456789 · transcript sent: 000000000)",
         "withdraw it"),
        ("identity_mismatch", "R-NAME", "last name (request: Tremblay · transcript sent: Smith)",
         "registrar"),
        ("tracking_id_mismatch", "R-TRK",
         "RequestTrackingID (request: C1 · acknowledgment received: C2)",
         "`workbench bundle R-TRK`"),
        ("tracking_id_mismatch", "R-OURS", "RequestTrackingID (request: R-OURS · response sent: "
         "R-SOMEONE)", "(`workbench troubleshoot R-OURS`) and tell the partner"),
        ("ack_mismatch", "R-TOTALS", "awards (transcript sent: 2 · acknowledgment received: 1)",
         "`workbench send transcript --force R-TOTALS FILE` (Python: "
         "`w.supplier.send_transcript('R-TOTALS', xml, force=True)`)"),
        ("ack_mismatch", "T-TOTALS", "courses (transcript received: 12 · acknowledgment sent: 10)",
         "`workbench send ack --force T-TOTALS` "
         "(Python: `w.consumer.send_acknowledgment('T-TOTALS', force=True)`)"),
        ("uncertain_send", "R-UNSURE", "send_response is uncertain since",
         "`workbench send response --status STATUS --force R-UNSURE`"),
        ("uncertain_send", "T-UNSURE", "send_acknowledgment is uncertain",
         "run `workbench pull`"),
        ("parse_error", "T-BROKEN", "does not parse: malformed: a raw &", "well-formed"),
        ("hold_overdue", "R-HOLD", "Response Hold (reason: TranscriptFee) planned release "
         "2026-03-05, 5.4 days ago", "new PlannedReleaseDate"),
        ("transcript_unacknowledged", "R-NOACK", "no acknowledgment of it is recorded",
         "we sent 2 awards, 12 courses"),
        ("reissued_after_ack", "T-REISSUED", "Version 2 (Reissue) arrived after our "
         "acknowledgment of version 1", "`workbench troubleshoot T-REISSUED`"),
        ("duplicate_transcript", "T-AGAIN", "Same student (oen: Tremblay, Emma) and source "
         "(St. Brendan's College) as transcript T-FIRST",
         "acknowledge both (`workbench send ack T-AGAIN`"),
        ("response_overdue", "R-VERY-LATE", "dated 2026-02-26 09:00 UTC",
         "`workbench send response --status TranscriptRequestReceived R-VERY-LATE`"),
        ("implausible_date", "R-EPOCH", "RequestDate is 0001-01-01 09:00 UTC, outside the "
         "plausible dates", "`workbench bundle R-EPOCH`"),
        ("implausible_date", "T-NEVER", "RequestDate is 9999-12-31 09:00 UTC", "as they sent it"),
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


def test_an_implausible_request_date_is_kept_and_taken_as_missing(
    rec: reconcile.Reconciliation,
) -> None:
    """Year 1 is not 739,000 days overdue, nor is 9999 "dated after the as-of time": both
    count from when we first saw them, their value beside."""
    rows = rec.requests.set_index("request_id")
    assert pd.isna(rows.loc["R-EPOCH", "request_date"])
    assert rows.loc["R-EPOCH", "implausible_request_date"].year == 1
    assert rows.loc["R-EPOCH", "age_days"] == 1.0  # seen a day ago (the builder's seen_at)
    transcripts = rec.transcripts.set_index("transcript_id")
    assert transcripts.loc["T-NEVER", "implausible_request_date"].year == 9999
    assert pd.isna(transcripts.loc["T-NEVER", "request_date"])
    assert rows["implausible_request_date"].notna().sum() == 1


@pytest.mark.parametrize(
    ("item", "shell", "python"),
    [
        ("C 12", "'C 12'", "'C 12'"),
        ("-a1", "-- -a1", "'-a1'"),
        ("O'Brien", "'O'\"'\"'Brien'", '"O\'Brien"'),
        ("abc-1", "abc-1", "'abc-1'"),
    ],
)
def test_commands_quote_the_id(item: str, shell: str, python: str) -> None:
    """An id the shell or Python would split, or read as an option, is quoted in the command."""
    day = pd.Timedelta(days=1)
    tables = reconcile.empty_tables()
    tables["transcripts"] = pd.DataFrame(
        {"transcript_id": [item], "on_list": [True], "request_date": [pd.Timestamp(NOW) - 9 * day]}
    )
    ex = reconcile.reconcile(tables, now=NOW, sla_days=5).exceptions
    action = ex.loc[ex["kind"] == "ack_overdue", "suggested_action"].iloc[0]
    assert f"`workbench send ack {shell}`" in action
    assert f"`w.consumer.send_acknowledgment({python})`" in action
