"""One id, many documents: the sandbox's clock re-issues, resubmits and cancels (issue #11)."""

from __future__ import annotations

import json

import pytest
from lxml import etree

from tests.sandbox.helpers import ack_for
from tests.sandbox.schemas import schema_errors
from tests.sandbox.wire import exchange, path, pescxml
from workbench import spec
from workbench.sandbox import SandboxSettings
from workbench.sandbox.runner import with_overrides
from workbench.sandbox.state import PartnerState

QUIET = {  # nothing moves but what a test turns on
    "requests_per_hour": 0,
    "transcripts_per_hour": 0,
    "closed_elsewhere_per_hour": 0,
    "reissue_per_hour": 0,
    "resubmission_per_hour": 0,
    "cancellation_per_hour": 0,
    "token_ttl": 24 * 3600,  # and tokens outlive the clock's moves
}


def _text(root: etree._Element, name: str) -> str:
    return str(root.xpath(f"string(*[local-name()='TransmissionData']/*[local-name()='{name}'])"))


def _listed(client, template):
    answer = client.get(template)
    return {i["RequestID"]: i["RequestDate"] for i in answer.json()} if answer.is_success else {}


def _document(client, template, item_id):
    return etree.fromstring(pescxml(client.get(path(template, item_id)).json()[0]).encode())


def test_a_transcript_reissued_after_its_acknowledgment_is_back_on_the_list(
    sandbox_factory, schemas
):
    sb = sandbox_factory(**{**QUIET, "initial_transcripts": 1, "reissue_per_hour": 1})
    (transcript_id,) = sb.pending_transcript_ids()
    with exchange(sb, "consumer") as client:
        before = _listed(client, spec.CONSUMER_PENDING_PATH)
        first = _document(client, spec.CONSUMER_TRANSCRIPT_PATH, transcript_id)
        tracking = _text(first, "RequestTrackingID")
        sent = client.post(
            path(spec.CONSUMER_ACKNOWLEDGMENT_PATH, transcript_id),
            json={"PESCXML": ack_for(tracking)},
        )
        assert sent.status_code == 200, sent.text
        assert _listed(client, spec.CONSUMER_PENDING_PATH) == {}
        sb.advance(1)
        after = _listed(client, spec.CONSUMER_PENDING_PATH)
        second = _document(client, spec.CONSUMER_TRANSCRIPT_PATH, transcript_id)
    assert list(after) == [transcript_id] and after[transcript_id] > before[transcript_id]
    assert _text(first, "TransmissionType") == "Original"
    assert _text(second, "TransmissionType") == "Reissue"
    assert _text(second, "DocumentID") != _text(first, "DocumentID")
    assert _text(second, "RequestTrackingID") == tracking
    assert schema_errors(schemas, second) == []


def test_a_request_is_resubmitted_while_listed(sandbox_factory, schemas):
    sb = sandbox_factory(**{**QUIET, "initial_requests": 1, "resubmission_per_hour": 1})
    (request_id,) = sb.pending_request_ids()
    with exchange(sb, "supplier") as client:
        before = _listed(client, spec.SUPPLIER_PENDING_PATH)
        first = _document(client, spec.SUPPLIER_REQUEST_PATH, request_id)
        sb.advance(1)
        after = _listed(client, spec.SUPPLIER_PENDING_PATH)
        second = _document(client, spec.SUPPLIER_REQUEST_PATH, request_id)
    assert list(after) == [request_id] and after[request_id] > before[request_id]
    assert _text(second, "TransmissionType") == "Resubmission"
    assert _text(second, "DocumentID") != _text(first, "DocumentID")
    assert _text(second, "CreatedDateTime") != _text(first, "CreatedDateTime")
    assert schema_errors(schemas, second) == []


def test_a_cancelled_request_is_listed_with_its_cancellation_until_the_next_advance(
    sandbox_factory, schemas
):
    sb = sandbox_factory(**{**QUIET, "initial_requests": 2, "cancellation_per_hour": 1})
    with exchange(sb, "supplier") as client:
        before = _listed(client, spec.SUPPLIER_PENDING_PATH)
        originals = {i: _document(client, spec.SUPPLIER_REQUEST_PATH, i) for i in before}
        sb.advance(1)
        listed = _listed(client, spec.SUPPLIER_PENDING_PATH)
        assert set(listed) == set(before)
        cancelled = [i for i in listed if listed[i] != before[i]]
        assert len(cancelled) == 1
        (gone,) = cancelled
        document = _document(client, spec.SUPPLIER_REQUEST_PATH, gone)
        sb.advance(0.5)
        assert set(_listed(client, spec.SUPPLIER_PENDING_PATH)) == set(before) - {gone}
    # A valid cancellation: TransmissionType MutuallyDefined, a TransmissionData NoteMessage.
    assert _text(document, "TransmissionType") == "MutuallyDefined"
    assert _text(document, "NoteMessage") == "Cancellation"
    assert _text(document, "DocumentID") != _text(originals[gone], "DocumentID")
    assert schema_errors(schemas, document) == []
    assert sb.state.requests[gone].closed_by == "cancellation"


def test_the_demo_s_eight_hours_show_every_kind_the_same_way_each_time():
    def run() -> tuple[dict[str, int], list[tuple[str, int, str, str]]]:
        state = PartnerState.create(SandboxSettings())
        added = state.advance(8)
        versions = [
            (i.id, i.version, i.transmission_type, i.date.isoformat())
            for items in (state.requests, state.transcripts)
            for i in items.values()
            if i.version > 1
        ]
        return added, versions

    added, versions = run()
    assert added["reissue"] >= 1 and added["resubmission"] >= 1 and added["cancellation"] >= 1
    kinds = {kind for _, _, kind, _ in versions}
    assert {"Reissue", "Resubmission", "Cancellation"} <= kinds
    assert run() == (added, versions)


def test_versions_survive_a_restart(tmp_path):
    settings = with_overrides(
        SandboxSettings(state_path=str(tmp_path / "state.json")), **{**QUIET, "reissue_per_hour": 2}
    )
    state = PartnerState.create(settings)
    state.advance(1)
    reissued = {i.id: i for i in state.transcripts.values() if i.version > 1}
    assert len(reissued) == 2
    again = PartnerState.create(settings)
    for item_id, item in reissued.items():
        loaded = again.transcripts[item_id]
        assert loaded == item
        assert again.document("transcript", loaded) == state.document("transcript", item)


def test_a_state_file_of_another_version_is_refused_with_what_to_do(tmp_path):
    settings = SandboxSettings(state_path=str(tmp_path / "state.json"))
    PartnerState.create(settings)
    data = json.loads((tmp_path / "state.json").read_text())
    data["version"] = 1
    (tmp_path / "state.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="delete it or pick another --state file"):
        PartnerState.create(settings)


def test_a_cancellation_can_be_written_the_way_ocas_names_it(sandbox_factory, schemas):
    sb = sandbox_factory(
        **{**QUIET, "initial_requests": 1, "cancellation_per_hour": 1},
        cancellation_as="transmission_type",
    )
    (request_id,) = sb.pending_request_ids()
    sb.advance(1)
    with exchange(sb, "supplier") as client:
        document = _document(client, spec.SUPPLIER_REQUEST_PATH, request_id)
    assert _text(document, "TransmissionType") == "Cancellation"
    assert _text(document, "NoteMessage") == ""
    (error,) = schema_errors(schemas, document)  # not in PESC's enumeration: the only error
    assert "TransmissionType" in error and "Cancellation" in error
