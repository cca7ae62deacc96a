"""Message types, versions and namespace families."""

from __future__ import annotations

import pytest

from workbench.pesc.builders import acknowledgment_version, namespace_for
from workbench.pesc.document import is_pesc_root, message_info
from workbench.pesc.schemas import nearest_version, parse_message_namespace
from workbench.spec import NS_V1_0_0, NS_V1_1_0


def test_message_info() -> None:
    assert message_info("{urn:org:pesc:message:TranscriptRequest:v1.1.0}TranscriptRequest") == (
        "TranscriptRequest",
        "1.1.0",
        "urn:org:pesc:message:TranscriptRequest:v1.1.0",
    )
    assert message_info("CollegeTranscript") == ("CollegeTranscript", None, None)
    assert message_info("{urn:other}X") == ("X", None, "urn:other")


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("{urn:org:pesc:message:CollegeTranscript:v1.3.0}CollegeTranscript", True),
        ("{urn:org:pesc:message:AcademicRecordBatch:v2.0.0}AcademicRecordBatch", True),
        ("CollegeTranscript", True),
        ("Acknowledgment", True),
        ("html", False),
        ("{http://evil.example/}CollegeTranscript", False),
    ],
)
def test_is_pesc_root(tag: str, expected: bool) -> None:
    assert is_pesc_root(tag) is expected


@pytest.mark.parametrize(
    "message", ["TranscriptRequest", "TranscriptResponse", "CollegeTranscript", "Acknowledgment"]
)
def test_namespace_families_follow_the_spec(message: str) -> None:
    assert namespace_for(message, "1.0.0") == NS_V1_0_0[message]
    version = NS_V1_1_0[message].rsplit(":v", 1)[1]
    assert namespace_for(message, version) == NS_V1_1_0[message]


def test_parse_message_namespace_maps_acknowledgment_back_to_its_root() -> None:
    assert parse_message_namespace("urn:org:pesc:message:TranscriptAcknowledgment:v1.3.0") == (
        "Acknowledgment",
        "1.3.0",
    )
    assert parse_message_namespace("urn:org:pesc:core:CoreMain:v1.14.0") is None


@pytest.mark.parametrize(
    ("wanted", "available", "expected"),
    [
        ("1.0.0", ["1.3.0", "1.4.0", "1.6.0"], "1.3.0"),
        ("1.4.0", ["1.3.0", "1.4.0", "1.6.0"], "1.4.0"),
        ("1.5.0", ["1.3.0", "1.4.0", "1.6.0"], "1.6.0"),  # a tie goes to the newer
        ("2.0.0", ["1.3.0", "1.4.0", "1.6.0"], "1.6.0"),
        ("1.1.0", ["1.2.0", "1.4.0"], "1.2.0"),
        ("1.2.0", ["1.1.0", "1.3.0"], "1.3.0"),
        ("1.10.0", ["1.9.0", "1.14.0"], "1.9.0"),  # numbers, not strings
        (None, ["1.1.0", "1.3.0"], "1.3.0"),
        ("x.y", ["1.1.0", "1.3.0"], "1.3.0"),
        ("1.0.0", [], None),
    ],
)
def test_nearest_version(wanted: str | None, available: list[str], expected: str | None) -> None:
    assert nearest_version(wanted, available) == expected


@pytest.mark.parametrize(
    ("transcript", "acknowledgment"),
    [
        (None, "1.0.0"),
        ("1.0.0", "1.0.0"),
        ("1.3.0", "1.1.0"),
        ("1.4.0", "1.2.0"),
        ("1.6.0", "1.3.0"),
        ("1.9.0", "1.3.0"),
    ],
)
def test_acknowledgment_version_follows_the_transcript_family(
    transcript: str | None, acknowledgment: str
) -> None:
    assert acknowledgment_version(transcript) == acknowledgment
