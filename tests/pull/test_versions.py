"""The pull and document versions: a detail is fetched again when its list item is new, has a
new RequestDate, or is back on the list after leaving it; never otherwise."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

import pandas as pd
import pytest

import workbench as wb
from tests.hostile.partner import HostilePartner, body
from tests.pesc.factories import Request, Transcript, make_request, make_transcript
from workbench import spec
from workbench.http.answers import request_path

D1, D2 = "2026-03-02T09:00:00Z", "2026-03-03T10:00:00Z"
TRANSCRIPT = request_path(spec.CONSUMER_TRANSCRIPT_PATH, "T-1")
REQUEST = request_path(spec.SUPPLIER_REQUEST_PATH, "R-1")


def _transcript(document_id: str, transmission: str = "Original") -> str:
    xml = make_transcript(Transcript(document_id=document_id))
    return xml.replace(">Original<", f">{transmission}<")


def _request(document_id: str, transmission: str = "Original") -> str:
    xml = make_request(Request(document_id=document_id))
    return xml.replace(">Original<", f">{transmission}<")


@pytest.fixture
def partner():
    with HostilePartner() as p:
        yield p


@pytest.fixture
def w(partner: HostilePartner, tmp_path: Path):
    with wb.connect(env=partner.env, db=tmp_path / "versions.sqlite") as w:
        yield w


def _offer(partner: HostilePartner, path: str, list_path: str, date: str | None, xml: str) -> None:
    """List T-1/R-1 at ``date`` (None: an empty list), its detail a bare object (the shape some
    partners send) under the ``RequestId`` spelling."""
    item_id = path.rsplit("/", 1)[-1]
    if date is None:
        partner.quiet()
    else:
        partner.answer("GET", list_path, body([{"RequestId": item_id, "RequestDate": date}]))
    partner.answer("GET", path, body({"RequestId": item_id, "RequestDate": date, "PESCXML": xml}))


def _detail_calls(partner: HostilePartner, path: str) -> int:
    return partner.requests.count(("GET", path))


def test_a_transcript_reissued_while_listed_is_a_new_version(partner, w) -> None:
    _offer(partner, TRANSCRIPT, spec.CONSUMER_PENDING_PATH, D1, _transcript("CT-1"))
    assert w.pull(progress=False).status == "ok"
    # Re-issued: a new RequestDate and document (sent XML-escaped, as some partners do).
    _offer(
        partner, TRANSCRIPT, spec.CONSUMER_PENDING_PATH, D2, escape(_transcript("CT-2", "Reissue"))
    )

    summary = w.pull(progress=False)

    assert summary.status == "ok" and summary.lists["consumer_transcripts"].details_fetched == 1
    versions = w.store.versions("T-1")
    assert versions["document_id"].tolist() == ["CT-1", "CT-2"]
    assert versions["transmission_type"].tolist() == ["Original", "Reissue"]
    row = w.store.table("transcripts_received").iloc[0]
    assert (row["document_id"], row["current_version"], row["version_count"]) == ("CT-2", 2, 2)
    assert row["request_date"] == pd.Timestamp(D2)
    assert w.store.document("T-1") == _transcript("CT-2", "Reissue")  # unescaped once
    assert w.store.document("T-1", version=1) == _transcript("CT-1")


def test_a_transcript_reissued_after_it_left_the_list_is_a_new_version(partner, w) -> None:
    _offer(partner, TRANSCRIPT, spec.CONSUMER_PENDING_PATH, D1, _transcript("CT-1"))
    w.pull(progress=False)
    _offer(partner, TRANSCRIPT, spec.CONSUMER_PENDING_PATH, None, _transcript("CT-1"))
    w.pull(progress=False)  # it left the list
    # Back, with the same RequestDate: only its return says the document may be new.
    _offer(partner, TRANSCRIPT, spec.CONSUMER_PENDING_PATH, D1, _transcript("CT-2", "Reissue"))

    assert w.pull(progress=False).status == "ok"

    assert _detail_calls(partner, TRANSCRIPT) == 2
    assert w.store.versions("T-1")["document_id"].tolist() == ["CT-1", "CT-2"]
    awaiting = w.store.table("transcripts_awaiting_ack")
    assert awaiting["document_id"].tolist() == ["CT-2"]


def test_a_cancellation_closes_the_request(partner, w) -> None:
    _offer(partner, REQUEST, spec.SUPPLIER_PENDING_PATH, D1, _request("DOC-1"))
    w.pull(progress=False)
    assert w.store.table("open_requests")["request_id"].tolist() == ["R-1"]
    _offer(partner, REQUEST, spec.SUPPLIER_PENDING_PATH, D2, _request("DOC-2", "Cancellation"))

    assert w.pull(progress=False).status == "ok"

    row = w.store.table("transcript_requests").iloc[0]
    assert row["transmission_type"] == "Cancellation" and not pd.isna(row["cancelled_at"])
    assert w.store.table("open_requests").empty
    assert w.store.versions("R-1")["transmission_type"].tolist() == ["Original", "Cancellation"]


def test_an_unchanged_list_makes_no_detail_call(partner, w) -> None:
    _offer(partner, TRANSCRIPT, spec.CONSUMER_PENDING_PATH, D1, _transcript("CT-1"))
    w.pull(progress=False)

    for _ in range(2):
        summary = w.pull(progress=False)
        assert summary.status == "ok" and summary.lists["consumer_transcripts"].details_fetched == 0

    assert _detail_calls(partner, TRANSCRIPT) == 1
    assert len(w.store.versions("T-1")) == 1


@pytest.mark.parametrize("id_scheme", ["tracking", "guid"])
def test_the_sandbox_clock_s_new_documents_become_versions(
    sandbox_factory, tmp_path: Path, id_scheme: str
) -> None:
    sb = sandbox_factory(
        id_scheme=id_scheme, reissue_per_hour=2, resubmission_per_hour=1, cancellation_per_hour=1
    )
    with wb.connect(env=sb.env, db=tmp_path / "sandbox.sqlite") as w:
        w.pull(progress=False)
        state = sb.state
        pulled = {*state.requests, *state.transcripts}
        sb.advance(2)  # 4 re-issues, 2 resubmissions, 2 cancellations
        assert w.pull(progress=False).status == "ok"
        expected = {  # (an item that arrived during those hours is first seen re-issued)
            (i.id, i.transmission_type)
            for i in [*state.requests.values(), *state.transcripts.values()]
            if i.version > 1 and i.id in pulled
        }
        got = set()
        for item_id, _ in expected:
            versions = w.store.versions(item_id)
            assert versions["version"].tolist() == [1, 2]
            got.add((item_id, versions["transmission_type"].iloc[-1]))
        assert got == expected
        assert {kind for _, kind in expected} == {"Reissue", "Resubmission", "Cancellation"}
        # every cancelled request, one first seen with its Cancellation among them
        cancelled = {i.id for i in state.requests.values() if i.transmission_type == "Cancellation"}
        assert {i for i, kind in expected if kind == "Cancellation"} <= cancelled
        requests = w.store.table("transcript_requests").set_index("request_id")
        assert set(requests.index[requests["cancelled_at"].notna()]) == cancelled
        assert not cancelled & set(w.store.table("open_requests")["request_id"])
