"""International and domestic interfaces (spec §4.2, §4.3) as DataFrames."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import workbench as wb
from workbench.api.frames import events_frame, snake
from workbench.errors import UnreadableAnswer
from workbench.sandbox import Sandbox
from workbench.store.frames import EVENT_COLUMNS

from .conftest import exchange_hits


def _stamped(df: pd.DataFrame, operation: str) -> None:
    assert df.attrs["operation"] == operation
    assert df.attrs["fetched_at"].tzinfo is not None
    assert isinstance(df.attrs["call_id"], int)  # recorded in the store (DESIGN §5)


def test_diagnostics_is_one_row(sandbox: Sandbox, w: wb.Workbench) -> None:
    df = w.diagnostics()
    c = sandbox.credentials
    assert list(df.columns) == ["name", "customer_code", "roles"]
    assert df.iloc[0].to_dict() == {
        "name": c.caller_name,
        "customer_code": c.customer_code,
        "roles": c.caller_role,
    }
    _stamped(df, "diagnostics")


def test_pending_placement_events(w: wb.Workbench) -> None:
    df = w.pending_placement_events()
    assert list(df.columns[:3]) == list(EVENT_COLUMNS)
    assert df.columns[-1] == "raw"
    assert len(df) > 0
    assert df["event_id"].dtype == "string"
    assert str(df["occurred_at"].dt.tz) == "UTC"
    first = json.loads(df["raw"].iloc[0])
    assert first["eventId"] == df["event_id"].iloc[0]
    # Nested payload fields are flattened to snake_case columns, none required.
    assert any(c.startswith("payload_") for c in df.columns)
    _stamped(df, "pending_placement_events")


def test_no_pending_placement_events_keeps_the_columns(sandbox_factory, connect_to) -> None:
    sb = sandbox_factory(initial_placement_events=0)
    df = connect_to(sb).pending_placement_events()
    assert df.empty
    assert list(df.columns) == [*EVENT_COLUMNS, "raw"]


@pytest.mark.parametrize("count", [1, 5, 100])
def test_peek_events_count(sandbox: Sandbox, w: wb.Workbench, count: int) -> None:
    df = w.peek_events(count=count)
    assert len(df) == min(count, 30)
    _stamped(df, "peek_events")
    assert ("GET", "/apply/domestic/api/v1/events/peek") in sandbox.hits


def test_peek_events_default_and_none(w: wb.Workbench) -> None:
    assert len(w.peek_events()) == 10
    assert len(w.peek_events(count=None)) == 10  # the partner's default


@pytest.mark.parametrize("count", [0, -1, 2.5, "3", True])
def test_peek_events_refuses_bad_counts_before_sending(sandbox: Sandbox, w, count) -> None:
    with pytest.raises(wb.InvalidValue, match="count must be a positive integer"):
        w.peek_events(count=count)
    assert exchange_hits(sandbox) == {}


def test_peek_events_surfaces_the_partners_bound(w: wb.Workbench) -> None:
    with pytest.raises(wb.InvalidValue, match=r"not valid for Count") as info:
        w.peek_events(count=101)
    assert info.value.status == 400
    assert "Message" in (info.value.body or "")


@pytest.mark.parametrize(
    "payload",
    [
        [{"eventId": "1", "kind": {"a": 1}}, {"eventId": "2", "extra": True}],
        {"events": [{"eventId": "1", "kind": {"a": 1}}, {"eventId": "2", "extra": True}]},
    ],
)
def test_events_of_any_shape(payload) -> None:
    df = events_frame(payload, operation="x")
    assert list(df["event_id"]) == ["1", "2"]
    assert "kind_a" in df.columns and "extra" in df.columns
    assert df["event_type"].isna().all()
    assert json.loads(df["raw"].iloc[1]) == {"eventId": "2", "extra": True}


def test_events_single_object_and_scalars() -> None:
    with pytest.raises(UnreadableAnswer):  # a feed is an array, or an object holding one
        events_frame({"eventId": "9"}, operation="x")
    df = events_frame(["a", 2], operation="x")
    assert list(df["value"]) == ["a", 2]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("customerCode", "customer_code"),
        ("RequestID", "request_id"),
        ("PESCXML", "pescxml"),
        ("payload.studentId", "payload_student_id"),
        ("occurredAt", "occurred_at"),
        ("already_snake", "already_snake"),
    ],
)
def test_snake(name: str, expected: str) -> None:
    assert snake(name) == expected
