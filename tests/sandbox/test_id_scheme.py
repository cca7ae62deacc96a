"""The sandbox keys its API either way real partners do; sends are checked by tracking id."""

from __future__ import annotations

import re

import pytest
from lxml import etree

from tests.sandbox.helpers import (
    ack_for,
    pending_from_env,
    response_for,
    start_cli,
    stop_cli,
    transcript_for,
    xpath_text,
)
from tests.sandbox.wire import exchange, gateway, path, pescxml
from workbench import spec
from workbench.sandbox import SandboxSettings

GUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _detail(client, template, item_id):
    answer = client.get(path(template, item_id))
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_tracking_scheme_keys_the_api_by_the_tracking_id(sandbox_factory):
    sb = sandbox_factory(id_scheme="tracking")
    with exchange(sb, "supplier") as client:
        items = client.get(spec.SUPPLIER_PENDING_PATH).json()[:5]
        assert len(items) == 5  # every one checked below
        for item in items:
            xml = pescxml(_detail(client, spec.SUPPLIER_REQUEST_PATH, item["RequestID"])[0])
            assert xpath_text(xml, "RequestTrackingID") == item["RequestID"]
            assert 1 <= len(item["RequestID"]) <= 35


def test_guid_scheme_keys_the_api_by_a_guid_distinct_from_the_tracking_id(sandbox_factory):
    sb = sandbox_factory(id_scheme="guid")
    for role, pending, detail in (
        ("supplier", spec.SUPPLIER_PENDING_PATH, spec.SUPPLIER_REQUEST_PATH),
        ("consumer", spec.CONSUMER_PENDING_PATH, spec.CONSUMER_TRANSCRIPT_PATH),
    ):
        with exchange(sb, role) as client:
            items = client.get(pending).json()
            trackings = set()
            for item in items:
                assert re.fullmatch(GUID, item["RequestID"]), item
                body = _detail(client, detail, item["RequestID"])
                assert body[0]["RequestID"] == item["RequestID"]
                tracked = xpath_text(pescxml(body[0]), "RequestTrackingID")
                assert re.fullmatch(r"C\d{13,}", tracked) and len(tracked) <= 35, tracked
                trackings.add(tracked)
            assert len(trackings) == len(items)


def test_guid_scheme_sends_are_checked_against_the_tracking_id(sandbox_factory):
    sb = sandbox_factory(id_scheme="guid")
    request_id = sb.pending_request_ids()[0]
    tracking = sb.state.requests[request_id].tracking
    with exchange(sb, "supplier") as client:
        refused = client.post(
            path(spec.SUPPLIER_RESPONSES_PATH, request_id),
            json={"PESCXML": response_for(request_id)},
        )
        assert refused.status_code == 400
        assert "invalid" in refused.json()["Message"]
        transcript = transcript_for(tracking, courses=3, awards=1)
        sent = client.post(
            path(spec.SUPPLIER_TRANSCRIPTS_PATH, request_id), json={"PESCXML": transcript}
        )
        assert sent.status_code == 200, sent.text
    ack = sent.json()["PESCXML"]
    assert xpath_text(ack, "RequestTrackingID") == tracking
    assert xpath_text(ack, "DocumentID") == "CT-DOC-1"  # echoes the transcript's DocumentID
    transcript_id = sb.pending_transcript_ids()[0]
    transcript_tracking = sb.state.transcripts[transcript_id].tracking
    with exchange(sb, "consumer") as client:
        wrong = client.post(
            path(spec.CONSUMER_ACKNOWLEDGMENT_PATH, transcript_id),
            json={"PESCXML": ack_for(transcript_id)},
        )
        assert wrong.status_code == 400 and "invalid" in wrong.json()["Message"]
        right = client.post(
            path(spec.CONSUMER_ACKNOWLEDGMENT_PATH, transcript_id),
            json={"PESCXML": ack_for(transcript_tracking)},
        )
        assert right.status_code == 200, right.text
    assert transcript_id not in sb.pending_transcript_ids()


def test_max_peek_count_bounds_the_domestic_peek(sandbox_factory):
    sb = sandbox_factory(max_peek_count=20)
    with gateway(sb, "domestic") as client:
        refused = client.get(spec.PEEK_EVENTS_PATH, params={"Count": 21})
        assert refused.status_code == 400
        assert "1..20" in refused.json()["Message"]
        accepted = client.get(spec.PEEK_EVENTS_PATH, params={"Count": 20})
        assert accepted.status_code == 200 and len(accepted.json()) == 20


def test_detail_as_an_object_with_request_id_spelled_requestid(sandbox_factory):
    sb = sandbox_factory(detail_shape="object", id_key="RequestId")
    with exchange(sb, "supplier") as client:
        items = client.get(spec.SUPPLIER_PENDING_PATH).json()
        assert all(set(i) == {"RequestId", "RequestDate"} for i in items)
        body = _detail(client, spec.SUPPLIER_REQUEST_PATH, items[0]["RequestId"])
    assert isinstance(body, dict) and body["RequestId"] == items[0]["RequestId"]
    assert etree.fromstring(pescxml(body).encode()) is not None
    assert sb.pending_request_ids() == [i["RequestId"] for i in items]


@pytest.mark.parametrize(
    "changes",
    [{"id_scheme": "uuid"}, {"detail_shape": "list"}, {"id_key": "id"}, {"max_peek_count": 0}],
)
def test_unknown_settings_are_refused(changes):
    with pytest.raises(ValueError):
        SandboxSettings(**changes)


def test_the_sandbox_command_refuses_an_unknown_id_scheme():
    from typer.testing import CliRunner

    from workbench.cli import app

    result = CliRunner().invoke(app, ["sandbox", "--port", "0", "--set", "id_scheme=uuid"])
    assert result.exit_code == 2
    assert "tracking" in result.output and "guid" in result.output


@pytest.mark.slow
def test_the_sandbox_command_serves_the_guid_scheme():
    proc, env = start_cli("--set", "id_scheme=guid", "--set", "max_peek_count=5")
    try:
        listing = pending_from_env(env).json()
        assert len(listing) == SandboxSettings().initial_requests and all(
            re.fullmatch(GUID, i["RequestID"]) for i in listing
        )
    finally:
        _, err = stop_cli(proc)
    assert proc.returncode == 0, err
