"""Values SQLite does not bind (dates, decimals, containers, str subclasses) in PESC fields and
child records: stored as ``cells.scalar`` makes them, whatever else the same rows hold."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal

from tests.store.helpers import at, store_detail
from workbench.store import Store


class Tagged(str):
    """A str subclass, as lxml hands out (``_ElementUnicodeResult``)."""


def test_flat_fields_of_any_type_become_cells(store: Store) -> None:
    flat = {
        "document_id": Tagged("DOC-1"),
        "created_at": datetime(2026, 3, 1, 8, 0, tzinfo=UTC),
        "student_birth_date": date(1815, 12, 10),
        "request_count": Decimal("2"),
        "release_authorized": True,
        "note": {"text": "hello", "lines": [1, 2]},
        "transcript_type": None,
    }
    store_detail(
        store, "supplier_requests", "R-1", seen_at=at(0), detail={"PESCXML": "<TR/>"}, flat=flat
    )
    row = store.db.execute(
        "SELECT document_id, created_at, student_birth_date, request_count, "
        "release_authorized, note, transcript_type FROM transcript_requests"
    ).fetchone()
    assert row == (
        "DOC-1",
        "2026-03-01T08:00:00+00:00",
        "1815-12-10",
        2,  # the column is INTEGER: SQLite converts the text
        1,
        json.dumps({"lines": [1, 2], "text": "hello"}),
        None,
    )


def test_child_rows_mixing_plain_and_other_values_keep_each_as_a_cell(store: Store) -> None:
    courses = [
        {"course_title": "Calculus", "credit_value": 3.0, "grade": "A", "repeat": False},
        {"course_title": Tagged("Poetry"), "credit_value": Decimal("1.5"), "grade": None},
        {"course_title": "Logic", "credit_value": 2, "ended": date(2024, 12, 20)},
        {"course_title": "Art", "credit_value": 1.0, "grade": ["A", "B"], "repeat": True},
    ]
    store_detail(
        store,
        "consumer_transcripts",
        "T-1",
        seen_at=at(0),
        detail={"PESCXML": "<CT/>"},
        children={"courses": courses},
    )
    rows = store.db.execute(
        "SELECT position, course_title, credit_value, grade, repeat, ended "
        "FROM courses ORDER BY position"
    ).fetchall()
    # Each field becomes a column when first seen, typed by sqlite-utils from these values:
    # credit_value, holding a Decimal's text among the floats, is TEXT.
    assert rows == [
        (0, "Calculus", "3.0", "A", 0, None),
        (1, "Poetry", "1.5", None, None, None),
        (2, "Logic", "2", None, None, "2024-12-20"),
        (3, "Art", "1.0", '["A", "B"]', 1, None),
    ]
