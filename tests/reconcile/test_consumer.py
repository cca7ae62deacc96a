"""The consumer side: every state, duplicates and document problems, from a crafted store."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from tests.reconcile.builders import NOW, STUDENT, Partner, transcript_flat
from workbench import reconcile

BRENDAN = {"source_org_id": "354540", "source_org_name": "St. Brendan's College"}
LAKESHORE = {"source_org_id": "354100", "source_org_name": "Lakeshore College"}


@pytest.fixture(scope="module")
def received(module_partner: Callable[[], Partner]) -> pd.DataFrame:
    p = module_partner()
    other = {"student_oen": "987654321", "student_ocas_account": None,
             "student_ocas_application": None, "student_last_name": "Nguyen"}  # fmt: skip
    p.transcript("T-WAIT", days=7, flat=transcript_flat("T-WAIT", **BRENDAN, **other))
    p.transcript(
        "T-FRESH",
        days=1,
        flat=transcript_flat("T-FRESH", **LAKESHORE, **other, student_birth_date="2001-01-01"),
    )
    p.transcript("T-ACK", days=4, flat=transcript_flat("T-ACK", **BRENDAN))
    # the same student (OEN) from the same school, later: a duplicate of T-ACK
    p.transcript("T-AGAIN", days=2, flat=transcript_flat("T-AGAIN", **BRENDAN))
    # the same student from another school: not a duplicate
    p.transcript("T-ELSEWHERE", days=3, flat=transcript_flat("T-ELSEWHERE", **LAKESHORE))
    unsure = transcript_flat("T-UNSURE", **BRENDAN, **{**other, "student_oen": "246813579"})
    p.transcript("T-UNSURE", days=2, flat=unsure)
    p.transcript("T-BROKEN", days=1, flat={}, parse_error="malformed: a closing tag is lost",
                 validation={"status": "invalid", "note": "not parsed"})  # fmt: skip
    # same name and birth date as T-ELSEWHERE, same school, but another OEN: two students
    p.transcript("T-INVALID", days=1, validation={"status": "invalid", "errors": [
        "DocumentID: 36 characters, at most 35"]}, flat=transcript_flat(
        "T-INVALID", **LAKESHORE, student_oen="555000111", student_ocas_account="1",
        student_ocas_application="2"))  # fmt: skip
    p.list_transcripts(*p.dates)
    p.acknowledge("T-ACK")
    p.acknowledge("T-AGAIN")
    p.list_transcripts("T-WAIT", "T-FRESH", "T-UNSURE", "T-BROKEN", "T-INVALID")
    p.acknowledge("T-UNSURE", state="uncertain")  # no list requested since
    frame = reconcile.reconcile(reconcile.load(p.store), now=NOW, sla_days=5).transcripts
    return frame.set_index("transcript_id")


def test_every_consumer_state(received: pd.DataFrame) -> None:
    assert received["state"].astype(str).to_dict() == {
        "T-WAIT": "awaiting_ack",
        "T-FRESH": "awaiting_ack",
        "T-ACK": "acknowledged",
        "T-AGAIN": "acknowledged",
        "T-ELSEWHERE": "closed_elsewhere",
        "T-UNSURE": "ack_uncertain",
        "T-BROKEN": "awaiting_ack",
        "T-INVALID": "awaiting_ack",
    }


def test_awaiting_ack_has_its_age_and_sla(received: pd.DataFrame) -> None:
    assert received.loc["T-WAIT", "age_days"] == 7
    assert received.loc["T-WAIT", "age_bucket"] == "5-10"
    assert received["sla_breached"].to_dict() == {i: i == "T-WAIT" for i in received.index}


def test_acknowledged_keeps_our_totals(received: pd.DataFrame) -> None:
    row = received.loc["T-ACK"]
    assert (row["ack_award_total"], row["ack_course_total"]) == (2, 12)
    assert pd.notna(row["acknowledged_at"]) and pd.notna(row["ack_outbox_id"])
    assert received.loc["T-UNSURE", "ack_send_state"] == "uncertain"


def test_duplicates_same_student_same_source(received: pd.DataFrame) -> None:
    flagged = received[received["duplicate"]]
    assert flagged[["duplicate_of", "duplicate_key"]].astype(str).to_dict("index") == {
        "T-ACK": {"duplicate_of": "T-ACK", "duplicate_key": "oen"},
        "T-AGAIN": {"duplicate_of": "T-ACK", "duplicate_key": "oen"},
    }


def test_document_problems(received: pd.DataFrame) -> None:
    problems = received["document_problem"].dropna().astype(str).to_dict()
    assert problems == {"T-BROKEN": "parse_error", "T-INVALID": "schema_invalid"}
    assert received.loc["T-INVALID", "validation_error"] == "DocumentID: 36 characters, at most 35"


@pytest.mark.parametrize(
    ("second", "key"),
    [
        ({"student_oen": None}, "ocas_account"),
        ({"student_oen": None, "student_ocas_account": None}, "ocas_application"),
        ({"student_oen": None, "student_ocas_account": None, "student_ocas_application": None},
         "name_birth_date"),
        ({"student_oen": "111", "student_ocas_account": "2", "student_ocas_application": "3",
          "student_birth_date": "2000-01-01"}, None),
    ],
)  # fmt: skip
def test_duplicate_keys_strongest_first(second: dict, key: str | None) -> None:
    tables = reconcile.empty_tables()
    first = {"transcript_id": "T1", "request_date": NOW - pd.Timedelta(days=2), **BRENDAN,
             **STUDENT}  # fmt: skip
    later = {**first, "transcript_id": "T2", "request_date": NOW, **second}
    for column in ("student_oen", "student_ocas_account", "student_ocas_application"):
        if second.get(column, "x") is None:  # the first one lacks it too
            first[column] = None
    tables["transcripts"] = pd.DataFrame([later, first])  # the order of rows does not matter
    frame = reconcile.reconcile(tables, now=NOW).transcripts.set_index("transcript_id")
    if key is None:
        assert not frame["duplicate"].any()
    else:
        assert frame.loc["T2", ["duplicate_of", "duplicate_key"]].tolist() == ["T1", key]
