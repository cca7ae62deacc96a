"""Every document the sandbox serves, or answers with, validates against the PESC schemas."""

from __future__ import annotations

import pytest
from lxml import etree

from tests.sandbox.schemas import schema_errors
from tests.sandbox.wire import exchange, path, pescxml
from workbench import spec
from workbench.sandbox import generator


def _served(sb, template, ids, role):
    with exchange(sb, role) as client:
        return [pescxml(client.get(path(template, i)).json()[0]) for i in ids]


@pytest.mark.parametrize("namespaces", ["v1.0.0", "v1.1.0"])
def test_served_requests_and_transcripts_validate(sandbox_factory, schemas, namespaces):
    sb = sandbox_factory(
        namespaces=namespaces, escaped_share=0.5, initial_requests=20, initial_transcripts=20
    )
    sb.advance(12)  # documents made by the moving clock too
    documents = _served(sb, spec.SUPPLIER_REQUEST_PATH, sb.pending_request_ids(), "supplier")
    documents += _served(sb, spec.CONSUMER_TRANSCRIPT_PATH, sb.pending_transcript_ids(), "consumer")
    assert len(documents) > 40
    for xml in documents:
        root = etree.fromstring(xml.encode())
        assert etree.QName(root).namespace in spec.NAMESPACE_FAMILIES[namespaces].values()
        assert schema_errors(schemas, root) == []


@pytest.mark.parametrize("namespaces", ["v1.0.0", "v1.1.0"])
def test_the_acknowledgment_of_a_sent_transcript_validates(sandbox_factory, schemas, namespaces):
    sb = sandbox_factory(namespaces=namespaces)
    request_id = sb.pending_request_ids()[0]
    transcript = generator.college_transcript_xml(
        99, 3, request_id=request_id, created=sb.state.now, namespaces=namespaces
    )
    with exchange(sb, "supplier") as client:
        body = client.post(
            path(spec.SUPPLIER_TRANSCRIPTS_PATH, request_id), json={"PESCXML": transcript}
        ).json()
    ack = etree.fromstring(body["PESCXML"].encode())
    assert etree.QName(ack).namespace == spec.NAMESPACE_FAMILIES[namespaces]["Acknowledgment"]
    assert schema_errors(schemas, ack) == []
    sent = etree.fromstring(transcript.encode())
    courses = len(sent.xpath("//*[local-name()='Course']"))
    assert ack.xpath("string(//*[local-name()='CourseTotal'])") == str(courses)


def test_invalid_share_serves_documents_that_fail_the_schema(sandbox_factory, schemas):
    sb = sandbox_factory(invalid_share=1.0, escaped_share=0.0, initial_requests=6)
    documents = _served(sb, spec.SUPPLIER_REQUEST_PATH, sb.pending_request_ids(), "supplier")
    assert len(documents) == 6  # every one checked below
    for xml in documents:
        assert schema_errors(schemas, etree.fromstring(xml.encode())) != []
