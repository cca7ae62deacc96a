"""to_frames(): typed frames, the same columns empty or full."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.pesc.factories import needs_samples, sample
from tests.pesc.test_fields import RESPONSE
from workbench import pesc
from workbench.pesc.tables import TABLES, dtype_of


@needs_samples
def test_transcript_frames() -> None:
    frames = pesc.to_frames(sample("canpesc/Ontario_College_CollegeTranscript.xml"))
    assert list(frames) == ["document", *TABLES]
    document = frames["document"]
    assert len(document) == 1
    assert document.loc[0, "course_count"] == 58
    assert document.loc[0, "created_at"] == pd.Timestamp("2019-01-01T15:09:29Z")
    assert str(document["created_at"].dtype) == "datetime64[us, UTC]"
    assert document["document_id"].dtype == "string"
    courses = frames["courses"]
    assert courses.shape == (58, len(TABLES["courses"]))
    assert courses["credit_value"].dtype == "Float64"
    assert courses["course_index"].dtype == "Int64"
    assert courses["session_index"].isna().sum() == 1
    assert courses.groupby("session_designator").size()["2014-09"] == 6
    assert frames["sessions"]["gpa"].dtype == "Float64"
    assert frames["courses"].attrs == {
        "message_type": "CollegeTranscript",
        "document_id": "123456789123456789",
    }


@needs_samples
def test_empty_tables_keep_their_columns_and_types() -> None:
    transcript = pesc.to_frames(sample("canpesc/Ontario_College_CollegeTranscript.xml"))
    request = pesc.to_frames(sample("pesccds/v1_4_basic_002.xml"))
    assert transcript["recipients"].empty and not request["recipients"].empty
    assert request["courses"].empty and not transcript["courses"].empty
    for name in ("recipients", "courses", "attendance", "sessions"):
        assert list(transcript[name].columns) == list(request[name].columns) == list(TABLES[name])
        assert transcript[name].dtypes.equals(request[name].dtypes), name


def test_response_frames_and_unreadable_values() -> None:
    frames = pesc.to_frames(RESPONSE.replace("2024-03-01T09:00:00-05:00", "yesterday", 1))
    document = frames["document"]
    assert pd.isna(document.loc[0, "created_at"])  # unreadable: NaT, not an error
    assert document.loc[0, "response_created_at"] == pd.Timestamp("2024-03-01T14:00:00Z")
    assert document.loc[0, "response_status"] == "Hold"
    assert frames["holds"]["hold_index"].tolist() == [0, 1]


@pytest.mark.parametrize(
    ("column", "dtype"),
    [
        ("created_at", "datetime64[us, UTC]"),
        ("gpa", "Float64"),
        ("course_count", "Int64"),
        ("record_index", "Int64"),
        ("course_total", "Int64"),
        ("release_authorized", "boolean"),
        ("student_oen", "string"),
        ("student_birth_date", "string"),
    ],
)
def test_dtype_of(column: str, dtype: str) -> None:
    assert dtype_of(column) == dtype
