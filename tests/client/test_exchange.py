"""Transcript exchange (spec §4.4, §7), supplier and consumer, as DataFrames.

Every test runs under both of the sandbox's id schemes: the API id is the document's
RequestTrackingID (``tracking``), or a GUID distinct from it (``guid``).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

import workbench as wb
from tests.students import of_student, request_xml
from workbench import pesc
from workbench.sandbox import Sandbox

from .conftest import exchange_hits
from .documents import acknowledgment_xml, response_xml, retarget


@pytest.fixture(params=["tracking", "guid"])
def id_scheme(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sandbox(sandbox_factory: Callable[..., Sandbox], id_scheme: str) -> Sandbox:
    """A fresh sandbox with default settings, under each id scheme."""
    return sandbox_factory(id_scheme=id_scheme)


def tracking_of(w: wb.Workbench, request_id: str, *, role: str = "supplier") -> str:
    """The RequestTrackingID of a request's (or a transcript's) document."""
    detail = (
        w.supplier.request(request_id) if role == "supplier" else w.consumer.transcript(request_id)
    )
    tracking = str(detail["request_tracking_id"].iloc[0])
    assert (tracking == request_id) == (len(request_id) != 36)  # a GUID is no tracking id
    return tracking


# -- supplier -------------------------------------------------------------------------------


def test_pending_requests(sandbox: Sandbox, w: wb.Workbench) -> None:
    df = w.supplier.pending_requests()
    assert list(df.columns) == ["request_id", "request_date"]
    assert list(df["request_id"]) == sandbox.pending_request_ids()
    assert df["request_id"].dtype == "string"
    assert str(df["request_date"].dt.tz) == "UTC"
    assert df.attrs["operation"] == "supplier.pending_requests"


def test_no_requests_found_is_an_empty_frame(sandbox_factory, connect_to, id_scheme) -> None:
    sb = sandbox_factory(initial_requests=0, id_scheme=id_scheme)
    df = connect_to(sb).supplier.pending_requests()
    assert df.empty
    assert list(df.columns) == ["request_id", "request_date"]
    assert df["request_id"].dtype == "string"
    assert str(df["request_date"].dt.tz) == "UTC"


@pytest.mark.parametrize("escaped_share", [0.0, 1.0])
def test_request_detail(sandbox_factory, connect_to, id_scheme, escaped_share: float) -> None:
    sb = sandbox_factory(escaped_share=escaped_share, id_scheme=id_scheme)
    request_id = sb.pending_request_ids()[0]
    df = connect_to(sb).supplier.request(request_id)
    row = df.iloc[0]
    assert len(df) == 1
    assert list(df.columns[:2]) == ["request_id", "request_date"]
    assert list(df.columns[-2:]) == ["pescxml", "parse_error"]
    assert row["request_id"] == request_id
    assert row["pescxml"].lstrip().startswith("<")  # unescaped once, whatever was sent
    assert row["message_type"] == "TranscriptRequest"
    assert (row["request_tracking_id"] == request_id) == (id_scheme == "tracking")
    assert 0 < len(row["request_tracking_id"]) <= 35
    assert row["student_last_name"]
    assert pd.isna(row["parse_error"])
    assert str(df["request_date"].dt.tz) == "UTC"
    assert df.attrs["operation"] == "supplier.request"


@pytest.mark.parametrize("key", ["PESCXml", "pescxml"])
def test_pescxml_key_is_matched_whatever_its_case(sandbox_factory, connect_to, key) -> None:
    sb = sandbox_factory(pescxml_key=key)
    request_id = sb.pending_request_ids()[0]
    row = connect_to(sb).supplier.request(request_id).iloc[0]
    assert row["message_type"] == "TranscriptRequest"
    assert "pesc_xml" not in row.index


def test_escaped_xml_is_unescaped_exactly_once(sandbox_factory, connect_to, id_scheme) -> None:
    sb = sandbox_factory(escaped_share=1.0, id_scheme=id_scheme)
    w = connect_to(sb)
    xml = w.supplier.request(sb.pending_request_ids()[0])["pescxml"].iloc[0]
    assert "&lt;" not in xml
    # An ampersand inside the document stays an entity: unescaping twice would break the XML.
    names = w.supplier.requests(sb.pending_request_ids())
    assert names["parse_error"].isna().all()


def test_malformed_document_keeps_its_row(sandbox_factory, connect_to, id_scheme) -> None:
    sb = sandbox_factory(malformed_share=1.0, id_scheme=id_scheme)
    request_id = sb.pending_request_ids()[0]
    row = connect_to(sb).supplier.request(request_id).iloc[0]
    assert row["request_id"] == request_id
    assert row["parse_error"]
    assert row["pescxml"]


@pytest.mark.parametrize("operation", ["request", "send_response", "send_transcript"])
def test_unknown_request_id_is_not_found(sandbox: Sandbox, w: wb.Workbench, operation) -> None:
    unknown = "0123456789abcdef0123456789abcdef"
    call = {
        "request": lambda: w.supplier.request(unknown),
        "send_response": lambda: w.supplier.send_response(unknown, response_xml(unknown)),
        "send_transcript": lambda: w.supplier.send_transcript(unknown, _transcript(w, unknown)),
    }[operation]
    with pytest.raises(wb.NotFound, match="Cannot find transcript request ID") as info:
        call()
    assert info.value.status == 400
    assert unknown in str(info.value)


def test_invalid_value_carries_the_partners_message(w: wb.Workbench) -> None:
    with pytest.raises(wb.InvalidValue, match="not valid for RequestID") as info:
        w.supplier.request("not_a_guid")  # fine for us, refused by the partner
    assert info.value.status == 400


def test_send_response(sandbox: Sandbox, w: wb.Workbench) -> None:
    request_id = sandbox.pending_request_ids()[0]
    tracking = tracking_of(w, request_id)
    df = w.supplier.send_response(request_id, response_xml(tracking))
    row = df.iloc[0]
    assert row["request_id"] == request_id
    assert row["request_tracking_id"] == tracking
    assert row["message_type"] == "TranscriptResponse"
    assert df.attrs["operation"] == "supplier.send_response"
    assert [(r["operation"], r["request_id"]) for r in sandbox.received] == [
        ("send_response", request_id)
    ]
    assert request_id not in list(w.supplier.pending_requests()["request_id"])


def test_send_response_built_from_the_request(sandbox: Sandbox, w: wb.Workbench) -> None:
    request_id = sandbox.pending_request_ids()[1]
    request = w.supplier.request(request_id)["pescxml"].iloc[0]
    response = pesc.build_response(request, status="Hold", hold_reason="Financial")
    row = w.supplier.send_response(request_id, response).iloc[0]
    assert (row["response_status"], row["hold_reason"]) == ("Hold", "Financial")


def test_send_transcript_returns_the_acknowledgment(sandbox: Sandbox, w: wb.Workbench) -> None:
    request_id = sandbox.pending_request_ids()[0]
    tracking = tracking_of(w, request_id)
    transcript = of_student(_transcript(w, tracking), request_xml(sandbox, request_id))
    df = w.supplier.send_transcript(request_id, transcript.encode())  # bytes are fine too
    row = df.iloc[0]
    assert row["message_type"] == "Acknowledgment"
    assert row["request_tracking_id"] == tracking
    assert pd.isna(row["parse_error"])
    assert [r["operation"] for r in sandbox.received] == ["send_transcript"]


@pytest.mark.parametrize(
    ("document", "match"),
    [
        (lambda rid: acknowledgment_xml(rid), "expected a TranscriptResponse"),
        (lambda rid: response_xml("another-request"), "belongs to another request"),
        (lambda rid: "<not closed", "malformed|well-formed|XML"),
        (lambda rid: "   ", "empty"),
    ],
)
def test_sends_refuse_bad_documents_before_sending(sandbox: Sandbox, w, document, match):
    request_id = sandbox.pending_request_ids()[0]
    tracking = tracking_of(w, request_id)
    sandbox.hits.clear()
    with pytest.raises(wb.WorkbenchError, match=match):
        w.supplier.send_response(request_id, document(tracking))
    hits = [
        (method, path.rsplit("/", 1)[-1], n) for (method, path), n in exchange_hits(sandbox).items()
    ]
    # Another request's document is told by the request's own document, fetched: no POST.
    assert hits == ([("GET", request_id, 1)] if "another" in match else [])
    assert sandbox.received == []


def test_read_only_profile_refuses_sends(sandbox: Sandbox, connect_to) -> None:
    w = connect_to(sandbox, WORKBENCH_READ_ONLY="true")
    request_id = sandbox.pending_request_ids()[0]
    transcript_id = sandbox.pending_transcript_ids()[0]
    with pytest.raises(wb.ConfigError, match="read-only"):
        w.supplier.send_response(request_id, response_xml("any"))
    with pytest.raises(wb.ConfigError, match="read-only"):
        w.consumer.send_acknowledgment(transcript_id)
    assert exchange_hits(sandbox) == {}
    assert len(w.supplier.pending_requests()) > 0  # reads still work


# -- consumer -------------------------------------------------------------------------------


def test_pending_transcripts(sandbox: Sandbox, w: wb.Workbench) -> None:
    df = w.consumer.pending_transcripts()
    assert list(df.columns) == ["request_id", "request_date"]
    assert list(df["request_id"]) == sandbox.pending_transcript_ids()
    assert df.attrs["operation"] == "consumer.pending_transcripts"


def test_no_transcripts_found_is_an_empty_frame(sandbox_factory, connect_to, id_scheme) -> None:
    sb = sandbox_factory(initial_transcripts=0, id_scheme=id_scheme)
    df = connect_to(sb).consumer.pending_transcripts()
    assert df.empty
    assert list(df.columns) == ["request_id", "request_date"]


def test_transcript_detail(sandbox: Sandbox, w: wb.Workbench) -> None:
    transcript_id = sandbox.pending_transcript_ids()[0]
    df = w.consumer.transcript(transcript_id)
    row = df.iloc[0]
    assert row["request_id"] == transcript_id
    assert row["message_type"] == "CollegeTranscript"
    assert row["course_count"] >= 0
    assert row["pescxml"].lstrip().startswith("<")
    assert df.attrs["operation"] == "consumer.transcript"


@pytest.mark.parametrize("operation", ["transcript", "send_acknowledgment"])
def test_unknown_transcript_id_is_not_found(w: wb.Workbench, operation: str) -> None:
    unknown = "0123456789abcdef0123456789abcdef"
    call = {
        "transcript": lambda: w.consumer.transcript(unknown),
        "send_acknowledgment": lambda: w.consumer.send_acknowledgment(
            unknown, acknowledgment_xml(unknown)
        ),
    }[operation]
    with pytest.raises(wb.NotFound, match="Cannot find transcript by ID"):
        call()


def test_send_acknowledgment_given(sandbox: Sandbox, w: wb.Workbench) -> None:
    transcript_id = sandbox.pending_transcript_ids()[0]
    tracking = tracking_of(w, transcript_id, role="consumer")
    df = w.consumer.send_acknowledgment(transcript_id, acknowledgment_xml(tracking))
    assert df.iloc[0]["message_type"] == "Acknowledgment"
    assert df.iloc[0]["request_tracking_id"] == tracking
    assert [(r["operation"], r["request_id"]) for r in sandbox.received] == [
        ("send_acknowledgment", transcript_id)
    ]
    assert transcript_id not in list(w.consumer.pending_transcripts()["request_id"])


def test_send_acknowledgment_built_from_the_transcript(sandbox: Sandbox, w: wb.Workbench) -> None:
    transcript_id = sandbox.pending_transcript_ids()[0]
    transcript = w.consumer.transcript(transcript_id).iloc[0]
    row = w.consumer.send_acknowledgment(transcript_id).iloc[0]
    assert row["message_type"] == "Acknowledgment"
    assert row["request_tracking_id"] == tracking_of(w, transcript_id, role="consumer")
    assert row["course_total"] == transcript["course_count"]
    assert [r["operation"] for r in sandbox.received] == ["send_acknowledgment"]


def test_roles_do_not_mix(sandbox: Sandbox, connect_to) -> None:
    c = sandbox.credentials
    w = connect_to(
        sandbox,
        WORKBENCH_CONSUMER_CLIENT_ID=c.supplier_client_id,
        WORKBENCH_CONSUMER_CLIENT_SECRET=c.supplier_client_secret,
    )
    with pytest.raises(wb.PartnerError, match="consumer") as info:
        w.consumer.pending_transcripts()
    assert info.value.status == 403


def _transcript(w: wb.Workbench, tracking_id: str) -> str:
    """A CollegeTranscript for the request tracked as ``tracking_id``: one the consumer side
    holds, retargeted."""
    served = w.consumer.transcript(w.consumer.pending_transcripts()["request_id"].iloc[0])
    return retarget(served["pescxml"].iloc[0], tracking_id)
