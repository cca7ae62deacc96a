"""DataFrame contract and PESCXML handling, on plain data (no HTTP needed)."""

from __future__ import annotations

import pandas as pd

from workbench import pesc
from workbench.api.frames import frame, parse_pescxml
from workbench.store.details import pescxml_of

ROW = {"RequestID": "A1", "RequestDate": "2026-03-02T09:00:00.123Z", "NewField": {"x": 1}}


def test_unknown_fields_are_kept_after_the_known_ones() -> None:
    df = frame([ROW], columns=("request_id", "request_date"), operation="op", tail=("t",))
    assert list(df.columns) == ["request_id", "request_date", "new_field", "t"]
    assert df.loc[0, "new_field"] == {"x": 1}
    assert df["request_id"].dtype == "string"
    assert df.loc[0, "request_date"] == pd.Timestamp("2026-03-02T09:00:00.123Z")


def test_empty_frame_has_the_same_columns_and_dtypes() -> None:
    full = frame([ROW], columns=("request_id", "request_date"), operation="op")
    empty = frame([], columns=("request_id", "request_date"), operation="op")
    assert list(empty.columns) == list(full.columns[:2])  # full has the extra new_field
    assert empty["request_id"].dtype == full["request_id"].dtype == "string"
    assert str(empty["request_date"].dt.tz) == str(full["request_date"].dt.tz) == "UTC"


def test_times_that_are_not_iso_stay_text() -> None:
    df = frame([{"created_at": "yesterday"}], columns=("created_at",), operation="op")
    assert df.loc[0, "created_at"] == "yesterday"


def test_pescxml_key_any_case() -> None:
    for key in ("PESCXML", "PESCXml", "pescxml"):
        xml, rest = pescxml_of({"RequestID": "A", key: "<a/>"})
        assert (xml, rest) == ("<a/>", {"RequestID": "A"})


CT = '<CollegeTranscript xmlns="urn:org:pesc:message:CollegeTranscript:v1.3.0"/>'


def test_unescape_exactly_once() -> None:
    once = CT.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    twice = once.replace("&", "&amp;")
    assert pescxml_of({"PESCXML": once})[0] == once  # the value as sent: parse unescapes
    assert parse_pescxml(CT).xml == CT
    xml, document, error = parse_pescxml(once)
    assert (xml, error) == (CT, None)
    assert pesc.flatten(document)["message_type"] == "CollegeTranscript"
    xml, document, error = parse_pescxml(twice)  # never repaired by unescaping a second time
    assert xml == twice
    assert error


def test_parse_pescxml_never_raises() -> None:
    assert parse_pescxml("<not xml").error
    assert parse_pescxml(None).error == "no PESCXML in the answer"
