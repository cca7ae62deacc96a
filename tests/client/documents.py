"""Small PESC documents for send tests, built from what the sandbox serves."""

from __future__ import annotations

from lxml import etree

from workbench.spec import NS_V1_0_0

_RESPONSE = """<?xml version="1.0" encoding="UTF-8"?>
<TrnResp:TranscriptResponse xmlns:TrnResp="{ns}">
  <TrnResp:TransmissionData>
    <DocumentID>RESP-{rid}</DocumentID>
    <CreatedDateTime>2026-03-02T09:00:00Z</CreatedDateTime>
    <DocumentTypeCode>Response</DocumentTypeCode>
    <TransmissionType>Original</TransmissionType>
    <RequestTrackingID>{rid}</RequestTrackingID>
  </TrnResp:TransmissionData>
  <TrnResp:Response>
    <CreatedDateTime>2026-03-02T09:00:00Z</CreatedDateTime>
    <RequestTrackingID>{rid}</RequestTrackingID>
    <ResponseStatus>TranscriptRequestReceived</ResponseStatus>
  </TrnResp:Response>
</TrnResp:TranscriptResponse>"""

_ACK = """<?xml version="1.0" encoding="UTF-8"?>
<Ack:Acknowledgment xmlns:Ack="{ns}">
  <TransmissionData>
    <DocumentID>ACK-{rid}</DocumentID>
    <CreatedDateTime>2026-03-02T09:00:00Z</CreatedDateTime>
    <DocumentTypeCode>Acknowledgment</DocumentTypeCode>
    <TransmissionType>Original</TransmissionType>
    <RequestTrackingID>{rid}</RequestTrackingID>
  </TransmissionData>
  <AcademicAwardTotal>0</AcademicAwardTotal>
  <CourseTotal>0</CourseTotal>
</Ack:Acknowledgment>"""


def response_xml(request_id: str) -> str:
    """A TranscriptResponse for ``request_id`` (status TranscriptRequestReceived)."""
    return _RESPONSE.format(ns=NS_V1_0_0["TranscriptResponse"], rid=request_id)


def acknowledgment_xml(request_id: str) -> str:
    """A TranscriptAcknowledgment for the transcript ``request_id``."""
    return _ACK.format(ns=NS_V1_0_0["Acknowledgment"], rid=request_id)


def retarget(xml: str, request_id: str) -> str:
    """``xml`` (a served document) with its RequestTrackingID set to ``request_id``."""
    root = etree.fromstring(xml.encode())
    found = root.xpath("*[local-name()='TransmissionData']/*[local-name()='RequestTrackingID']")
    found[0].text = request_id
    return etree.tostring(root, encoding="unicode")
