"""``load``: what it reads from a store, ``as_of`` a past moment, and the empty store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from tests.reconcile.builders import Partner, request_flat, transcript_flat
from tests.store.helpers import store_detail
from workbench import reconcile
from workbench.store import Store


def _states(tables: dict[str, pd.DataFrame]) -> dict[str, str]:
    rec = reconcile.reconcile(tables)
    return rec.requests.set_index("request_id")["state"].astype(str).to_dict()


def test_empty_store_gives_empty_frames_with_every_column(store: Store) -> None:
    tables = reconcile.load(store)
    for name, columns in reconcile.TABLES.items():
        assert list(tables[name].columns) == list(columns), name
        assert tables[name].empty
    rec = reconcile.reconcile(tables)
    assert list(rec.requests.columns) == list(reconcile.REQUEST_COLUMNS)
    assert list(rec.transcripts.columns) == list(reconcile.TRANSCRIPT_COLUMNS)
    assert list(rec.checks.columns) == list(reconcile.CHECK_COLUMNS)
    assert list(rec.exceptions.columns) == list(reconcile.EXCEPTION_COLUMNS)
    assert list(rec.by_organisation.columns) == list(reconcile.ORGANISATION_COLUMNS)
    for frame in (rec.requests, rec.transcripts, rec.checks, rec.exceptions, rec.by_organisation):
        assert frame.empty
    assert rec.headline["requests"] == 0
    assert rec.headline["open_by_age"] == dict.fromkeys(reconcile.age_labels(5), 0)
    assert rec.headline["exceptions_by_severity"] == {
        "critical": 0, "high": 0, "medium": 0, "low": 0,
    }  # fmt: skip
    assert "0 requests" in repr(rec)


def test_the_empty_dict_and_missing_columns_are_fine() -> None:
    rec = reconcile.reconcile({})
    assert rec.requests.empty and rec.exceptions.empty
    assert rec.requests["state"].dtype == "category"
    assert rec.requests["request_date"].dtype == "datetime64[us, UTC]"
    frame = reconcile.reconcile({"requests": pd.DataFrame({"request_id": ["R1"]})}).requests
    assert frame["state"].astype(str).tolist() == ["awaiting_response"]


def test_load_reads_documents_validation_and_what_we_sent(partner: Partner) -> None:
    partner.request("R1", flat=request_flat("R1", student_oen="111"))
    partner.send_transcript("R1", awards=3, courses=20, ack=(3, 20))
    partner.transcript("T1", validation={"status": "invalid", "errors": ["e1", "e2"]},
                       flat=transcript_flat("T1", awards=1, courses=9))  # fmt: skip
    tables = reconcile.load(partner.store)
    request = tables["requests"].iloc[0]
    assert (request["request_id"], request["student_oen"], request["validation_status"]) == (
        "R1",
        "111",
        "valid",
    )
    assert pd.isna(request["validation_error"])  # only an invalid document has one
    transcript = tables["transcripts"].iloc[0]
    assert (transcript["validation_status"], transcript["validation_error"]) == ("invalid", "e1")
    assert (transcript["award_count"], transcript["course_count"]) == (1, 9)
    sent = tables["outbox"].iloc[0]
    assert (sent["operation"], sent["state"], sent["sent_award_count"]) == (
        "send_transcript",
        "sent",
        3,
    )
    assert sent["sent_student_last_name"] == "Tremblay"
    ack = tables["acknowledgments"].iloc[0]
    assert (ack["direction"], ack["academic_award_total"], ack["course_total"]) == (
        "received",
        3,
        20,
    )
    assert tables["requests"]["request_id"].dtype == "string"
    assert tables["outbox"]["created_at"].dtype == "datetime64[us, UTC]"


def test_as_of_shows_what_was_known_then(store: Store) -> None:
    partner = Partner(store)
    start = datetime.now(UTC) - timedelta(hours=2)
    items = [{"RequestID": i, "RequestDate": (start - timedelta(days=2)).isoformat()}
             for i in ("R1", "R2", "R3")]  # fmt: skip
    store.record_snapshot(None, "supplier_requests", items, taken_at=start)
    for rid in ("R1", "R2", "R3"):
        store_detail(store, "supplier_requests", rid, flat=request_flat(rid), seen_at=start)
    before_sends = datetime.now(UTC)
    partner.respond("R1", "Hold", hold_reason="Financial")
    partner.send_transcript("R3", state="uncertain")
    while_uncertain = datetime.now(UTC)
    settled_at = datetime.now(UTC) + timedelta(seconds=1)
    store.record_snapshot(None, "supplier_requests", [], taken_at=settled_at)

    assert _states(reconcile.load(store)) == {
        "R1": "responded",
        "R2": "closed_elsewhere",
        "R3": "transcript_sent",  # settled from the list: inferred sent
    }
    assert _states(reconcile.load(store, as_of=before_sends)) == {
        "R1": "awaiting_response",
        "R2": "awaiting_response",
        "R3": "awaiting_response",
    }
    assert _states(reconcile.load(store, as_of=while_uncertain)) == {
        "R1": "answered_still_listed",  # the last list then still showed it
        "R2": "awaiting_response",
        "R3": "uncertain_send",
    }
    assert reconcile.load(store, as_of=start - timedelta(minutes=1))["requests"].empty


def test_as_of_is_the_default_now(store: Store) -> None:
    at = datetime(2026, 3, 5, 12, tzinfo=UTC)
    tables = reconcile.load(store, as_of=at)
    assert reconcile.reconcile(tables).now == pd.Timestamp(at)
    assert reconcile.reconcile(tables, now="2026-03-06").now == pd.Timestamp("2026-03-06", tz="UTC")
