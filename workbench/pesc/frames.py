"""PESC messages as pandas DataFrames (DESIGN §5), typed by column name so that an empty table
has the dtypes of a full one; unreadable values are NA.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from workbench.pesc.document import PescDocument, as_document
from workbench.pesc.elements import names
from workbench.pesc.fields import flatten
from workbench.pesc.tables import TABLES, records

TIME_COLUMNS = frozenset({"created_at", "request_created_at", "response_created_at"})
FLOAT_COLUMNS = frozenset(
    names(
        "credit_value credit_earned quality_points gpa credit_hours_attempted credit_hours_earned "
        "total_quality_points"
    )
)
INT_COLUMNS = frozenset({"academic_award_total", "course_total", "transcript_copies"})
BOOL_COLUMNS = frozenset({"release_authorized", "current_enrollment", "completion_indicator"})
TIME_DTYPE = "datetime64[ns, UTC]"


def to_frames(doc_or_xml: PescDocument | str | bytes) -> dict[str, pd.DataFrame]:
    """``{"document": flatten's row, <table>: records' rows, ...}``, attrs naming the message."""
    doc = as_document(doc_or_xml)
    row = flatten(doc)
    attrs = {"message_type": doc.message_type, "document_id": row["document_id"]}
    frames = {"document": frame([row], tuple(row))}
    for name, rows in records(doc).items():
        frames[name] = frame(rows, TABLES[name])
    for df in frames.values():
        df.attrs.update(attrs)
    return frames


def dtype_of(column: str) -> str:
    """The dtype a column of this name gets."""
    if column in TIME_COLUMNS:
        return TIME_DTYPE
    if column in FLOAT_COLUMNS:
        return "Float64"
    if column in BOOL_COLUMNS:
        return "boolean"
    if column in INT_COLUMNS or column.endswith(("_index", "_count")):
        return "Int64"
    return "string"


def frame(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """A DataFrame of ``rows`` with exactly ``columns``, typed by ``dtype_of``."""
    data = {column: _array([row.get(column) for row in rows], column) for column in columns}
    return pd.DataFrame(data, columns=list(columns))


def _array(values: list[Any], column: str) -> Any:
    dtype = dtype_of(column)
    if dtype == TIME_DTYPE:  # xs:dateTime; no offset: UTC
        values = pd.to_datetime(
            pd.Series(values, dtype=object), errors="coerce", utc=True, format="ISO8601"
        )
    elif dtype == "Float64":
        values = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
    return pd.array(values, dtype=dtype)
