"""Transcripts of a sandbox request's student (or of a student changed on purpose), for tests
that send them: a send refuses another student's transcript."""

from __future__ import annotations

import copy
import html

from lxml import etree

from workbench.sandbox import Sandbox


def _first(root: etree._Element, *path: str) -> etree._Element:
    found = root.xpath("/*/" + "/".join(f"*[local-name()='{p}']" for p in path))
    assert found, path
    return found[0]


def request_xml(sb: Sandbox, request_id: str) -> str:
    """The current document of the sandbox's request ``request_id``, unescaped."""
    return html.unescape(sb.state.document("request", sb.state.requests[request_id]))


def of_student(transcript_xml: str, request: str) -> str:
    """``transcript_xml`` with its student replaced by the one the TranscriptRequest asks for."""
    transcript = etree.fromstring(transcript_xml.encode())
    theirs = _first(etree.fromstring(request.encode()), "Request", "RequestedStudent", "Person")
    ours = _first(transcript, "Student", "Person")
    ours.getparent().replace(ours, copy.deepcopy(theirs))
    return etree.tostring(transcript, encoding="unicode")


def with_person(transcript_xml: str, **texts: str) -> str:
    """``transcript_xml`` with the text of Person elements changed: ``LastName="Roy"``,
    ``BirthDate="1999-04-15"``, ``OEN`` (an AgencyIdentifier's number) ..."""
    transcript = etree.fromstring(transcript_xml.encode())
    person = _first(transcript, "Student", "Person")
    for name, text in texts.items():
        found = person.xpath(f".//*[local-name()='{name}']")
        assert found, name
        found[0].text = text
    return etree.tostring(transcript, encoding="unicode")


def with_text_replaced(transcript_xml: str, old: str, new: str) -> str:
    """``transcript_xml`` with the Person element whose text is ``old`` given ``new``."""
    transcript = etree.fromstring(transcript_xml.encode())
    found = _first(transcript, "Student", "Person").xpath(f".//*[text()='{old}']")
    assert len(found) == 1, old
    found[0].text = new
    return etree.tostring(transcript, encoding="unicode")
