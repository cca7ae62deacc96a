"""The supplier lifecycle: every state from a crafted store, and the precedence between them."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from tests.reconcile.builders import NOW, Partner
from workbench import reconcile


def _by_id(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.set_index("request_id")


@pytest.fixture(scope="module")
def every_state(module_partner: Callable[[], Partner]) -> pd.DataFrame:
    """One request in each supplier state (and a few variants), as ``reconcile(...).requests``
    sees them."""
    p = module_partner()
    for rid, days in {
        "R-OPEN": 9.25, "R-FRESH": 1, "R-HOLD": 3, "R-SENT": 4, "R-ACK": 6, "R-MISMATCH": 6,
        "R-ELSEWHERE": 8, "R-UNCERTAIN": 2, "R-PENDING": 2, "R-INFERRED": 5, "R-FAILED": 7,
    }.items():  # fmt: skip
        p.request(rid, days=days)
    everyone = tuple(p.dates)
    p.list_requests(*everyone)
    p.send_transcript("R-INFERRED", state="uncertain")
    open_now = [i for i in everyone if i not in ("R-INFERRED", "R-ELSEWHERE")]
    settled = p.list_requests(*open_now).resolved
    assert [d["state"] for d in settled] == ["sent"]  # gone from the list: inferred sent

    p.respond("R-HOLD", "Hold", hold_reason="Financial", planned="2026-03-20")
    p.send_transcript("R-SENT", ack=None)  # the reply held no acknowledgment we could read
    p.respond("R-ACK")
    p.send_transcript("R-ACK", awards=2, courses=12, ack=(2, 12))
    p.send_transcript("R-MISMATCH", awards=3, courses=12, ack=(2, 12))
    p.send_transcript("R-PENDING", state="pending")
    p.respond("R-FAILED", state="failed")
    p.list_requests("R-OPEN", "R-FRESH", "R-FAILED")
    p.send_transcript("R-UNCERTAIN", state="uncertain")  # no list requested since
    return reconcile.reconcile(reconcile.load(p.store), now=NOW, sla_days=5).requests


def test_every_state_from_a_crafted_store(every_state: pd.DataFrame) -> None:
    states = _by_id(every_state)["state"].astype(str).to_dict()
    assert states == {
        "R-OPEN": "awaiting_response",
        "R-FRESH": "awaiting_response",
        "R-FAILED": "awaiting_response",  # a failed send did not take effect
        "R-HOLD": "responded",
        "R-SENT": "transcript_sent",
        "R-INFERRED": "transcript_sent",
        "R-ACK": "acknowledged",
        "R-MISMATCH": "ack_mismatch",
        "R-ELSEWHERE": "closed_elsewhere",
        "R-UNCERTAIN": "uncertain_send",
        "R-PENDING": "uncertain_send",
    }
    assert list(every_state["state"].cat.categories) == list(reconcile.SUPPLIER_STATES)


def test_awaiting_response_has_its_age_and_sla(every_state: pd.DataFrame) -> None:
    rows = _by_id(every_state)
    assert rows.loc["R-OPEN", "age_days"] == pytest.approx(9.2, abs=0.05)
    assert rows.loc["R-OPEN", "age_bucket"] == "5-10"
    assert rows.loc["R-FRESH", "age_bucket"] == "0-2"
    assert rows["sla_breached"].to_dict() == {
        i: i in ("R-OPEN", "R-FAILED") for i in rows.index
    }  # only awaiting requests can breach the response SLA
    assert rows.loc["R-OPEN", "on_list"]


def test_responded_carries_status_hold_and_release(every_state: pd.DataFrame) -> None:
    hold = _by_id(every_state).loc["R-HOLD"]
    assert (hold["response_status"], hold["hold_reason"], hold["planned_release_date"]) == (
        "Hold",
        "Financial",
        "2026-03-20",
    )
    assert pd.isna(hold["release_overdue_days"])  # the 20th is after NOW
    assert hold["left_reason"] == "outbox"
    assert _by_id(every_state).loc["R-ACK", "response_status"] == "TranscriptRequestReceived"


def test_acknowledgment_totals_against_what_we_sent(every_state: pd.DataFrame) -> None:
    rows = _by_id(every_state)
    columns = ["sent_award_count", "sent_course_count", "ack_award_total", "ack_course_total"]
    assert rows.loc["R-MISMATCH", columns].tolist() == [3, 12, 2, 12]
    assert rows.loc["R-ACK", columns].tolist() == [2, 12, 2, 12]
    assert pd.notna(rows.loc["R-ACK", "acknowledged_at"])
    assert pd.isna(rows.loc["R-SENT", "acknowledged_at"])


def test_inferred_and_unsettled_sends_say_so(every_state: pd.DataFrame) -> None:
    rows = _by_id(every_state)
    assert rows.loc["R-INFERRED", "transcript_inferred"]
    assert not rows.loc["R-SENT", "transcript_inferred"]
    assert rows.loc["R-UNCERTAIN", "unsettled_state"] == "uncertain"
    assert rows.loc["R-UNCERTAIN", "unsettled_operation"] == "send_transcript"
    assert "connection dropped" in rows.loc["R-UNCERTAIN", "unsettled_note"]
    assert rows.loc["R-PENDING", "unsettled_state"] == "pending"


# -- precedence, on hand-built tables ----------------------------------------------------------


def _tables(outbox: list[dict], acks: list[dict] = (), responses: list[dict] = (), **request):
    tables = reconcile.empty_tables()
    tables["requests"] = pd.DataFrame(
        [{"request_id": "R1", "request_date": NOW - pd.Timedelta(days=3), "on_list": False,
          "left_reason": "outbox", **request}]
    )  # fmt: skip
    tables["outbox"] = pd.DataFrame(outbox, columns=["outbox_id", "operation", "request_id",
                                                     "state", "sent_award_count",
                                                     "sent_course_count"])  # fmt: skip
    tables["acknowledgments"] = pd.DataFrame(list(acks))
    tables["responses"] = pd.DataFrame(list(responses))
    return tables


def _state(tables: dict) -> str:
    return str(reconcile.reconcile(tables, now=NOW).requests["state"].iloc[0])


def _entry(i: int, operation: str, state: str, awards=2, courses=12) -> dict:
    return {"outbox_id": i, "operation": operation, "request_id": "R1", "state": state,
            "sent_award_count": awards, "sent_course_count": courses}  # fmt: skip


def _ack(entry: int, awards, courses) -> dict:
    return {"outbox_id": entry, "direction": "received", "request_id": "R1",
            "recorded_at": NOW, "document_id": "ct-R1", "academic_award_total": awards,
            "course_total": courses}  # fmt: skip


def _response(entry: int, status: str = "TranscriptRequestReceived") -> dict:
    return {"outbox_id": entry, "request_id": "R1", "sent_at": NOW, "response_status": status}


@pytest.mark.parametrize(
    ("outbox", "acks", "responses", "listing", "expected"),
    [
        # an acknowledged transcript outranks a later forced response still uncertain
        ([_entry(1, "send_transcript", "sent"), _entry(2, "send_response", "uncertain")],
         [_ack(1, 2, 12)], [], {}, "acknowledged"),
        # a newer transcript send still uncertain outranks an older one sent unacknowledged
        ([_entry(1, "send_transcript", "sent"), _entry(2, "send_transcript", "uncertain")],
         [], [], {}, "uncertain_send"),
        # an uncertain entry superseded by a newer send of the same operation no longer counts
        ([_entry(1, "send_response", "uncertain"), _entry(2, "send_response", "sent")],
         [], [_response(2)], {}, "responded"),
        # a sent transcript outranks the response before it
        ([_entry(1, "send_response", "sent"), _entry(2, "send_transcript", "sent")],
         [], [_response(1)], {}, "transcript_sent"),
        # a response of ours outranks a departure the lists blamed on someone else
        ([_entry(1, "send_response", "sent")], [], [_response(1)],
         {"left_reason": "elsewhere"}, "responded"),
        # only failed sends, and gone: closed elsewhere
        ([_entry(1, "send_transcript", "failed")], [], [], {"left_reason": "elsewhere"},
         "closed_elsewhere"),
        # still listed, only a failed send: still awaiting a response
        ([_entry(1, "send_transcript", "failed")], [], [], {"on_list": True}, "awaiting_response"),
        # an acknowledgment that left its totals out is a mismatch
        ([_entry(1, "send_transcript", "sent")], [_ack(1, None, None)], [], {}, "ack_mismatch"),
        # Georgian-style 0/0 totals are a mismatch too
        ([_entry(1, "send_transcript", "sent")], [_ack(1, 0, 0)], [], {}, "ack_mismatch"),
        # our own counts unknown: a mismatch cannot be told
        ([_entry(1, "send_transcript", "sent", None, None)], [_ack(1, 2, 12)], [], {},
         "acknowledged"),
        # the acknowledgment of an older transcript does not acknowledge a newer one
        ([_entry(1, "send_transcript", "sent"), _entry(2, "send_transcript", "sent")],
         [_ack(1, 2, 12)], [], {}, "transcript_sent"),
        # answered, acknowledged even, and the last list still shows it: not open, its own
        ([_entry(1, "send_transcript", "sent")], [_ack(1, 2, 12)], [], {"on_list": True},
         "answered_still_listed"),
        ([_entry(1, "send_transcript", "sent")], [_ack(1, 0, 0)], [], {"on_list": True},
         "answered_still_listed"),
        ([_entry(1, "send_response", "sent")], [], [_response(1)], {"on_list": True},
         "answered_still_listed"),
        # ... unless a send of ours is in doubt, or it is cancelled
        ([_entry(1, "send_response", "sent"), _entry(2, "send_transcript", "uncertain")], [],
         [_response(1)], {"on_list": True}, "uncertain_send"),
        ([_entry(1, "send_response", "sent")], [], [_response(1)],
         {"on_list": True, "cancelled_at": NOW}, "cancelled"),
        # never listed (a row of a detail only) and nothing sent: awaiting a response
        ([], [], [], {"left_reason": None}, "awaiting_response"),
    ],
)  # fmt: skip
def test_precedence(outbox, acks, responses, listing, expected) -> None:
    assert _state(_tables(outbox, acks, responses, **listing)) == expected


def test_age_counts_from_first_sighting_without_a_request_date() -> None:
    tables = reconcile.empty_tables()
    tables["requests"] = pd.DataFrame(
        {"request_id": ["R1"], "first_seen_at": [NOW - pd.Timedelta(days=4)], "on_list": [True]}
    )
    row = reconcile.reconcile(tables, now=NOW).requests.iloc[0]
    assert (row["state"], row["age_days"], row["age_bucket"]) == ("awaiting_response", 4, "2-5")


def test_planned_release_passed_without_a_transcript() -> None:
    tables = _tables(
        [_entry(1, "send_response", "sent")],
        responses=[
            {**_response(1, "Hold"), "hold_reason": "Other", "planned_release_date": "2026-03-07"}
        ],
    )
    row = reconcile.reconcile(tables, now=NOW).requests.iloc[0]
    assert row["state"] == "responded"
    assert row["release_overdue_days"] == pytest.approx(3.4, abs=0.05)


def test_a_repeated_request_id_keeps_its_last_row() -> None:
    tables = reconcile.empty_tables()
    tables["requests"] = pd.DataFrame(
        {"request_id": ["R1", "R1"], "on_list": [True, False], "left_reason": [None, "elsewhere"]}
    )
    frame = reconcile.reconcile(tables, now=NOW).requests
    assert frame[["request_id", "state"]].astype(str).values.tolist() == [
        ["R1", "closed_elsewhere"]
    ]


def test_documents_without_their_outbox_entry_are_joined_by_request_id() -> None:
    tables = reconcile.empty_tables()
    tables["requests"] = pd.DataFrame({"request_id": ["R1", "R2"], "on_list": False})
    tables["responses"] = pd.DataFrame(
        {"outbox_id": [7], "request_id": ["R1"], "response_status": ["NoRecord"]}
    )
    frame = reconcile.reconcile(tables, now=NOW).requests.set_index("request_id")
    assert frame["state"].astype(str).to_dict() == {
        "R1": "responded",
        "R2": "awaiting_response",
    }
    assert frame.loc["R1", "response_status"] == "NoRecord"


def test_an_ack_mismatch_of_a_request_still_listed_is_still_an_exception() -> None:
    tables = _tables([_entry(1, "send_transcript", "sent")], [_ack(1, 2, 11)], on_list=True)
    rec = reconcile.reconcile(tables, now=NOW)
    assert rec.requests["state"].astype(str).tolist() == ["answered_still_listed"]
    assert rec.checks[rec.checks["check"] == "ack_totals"]["id"].tolist() == ["R1"]
    assert "ack_mismatch" in rec.exceptions["kind"].astype(str).tolist()
    assert rec.headline["ack_mismatches"] == 1
    assert rec.headline["answered_still_listed"] == 1
    assert rec.headline["open_requests"] == 0
