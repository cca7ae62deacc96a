"""Property: whatever sequence of lists the partner shows, the store's diffs, as_of and list
membership agree with plain set arithmetic."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.store.helpers import at, listed
from workbench.store import Store

lists = st.lists(st.lists(st.sampled_from("ABCDEFG"), unique=True, max_size=6), max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shown=lists)
def test_snapshots_agree_with_set_arithmetic(shown: list[list[str]]) -> None:
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "p.db") as store:
        before: list[str] = []
        ever: set[str] = set()
        for minute, ids in enumerate(shown):
            diff = store.record_snapshot(
                None, "supplier_requests", listed(*ids), taken_at=at(minute)
            )
            assert set(diff.appeared) == set(ids) - set(before)
            assert set(diff.vanished) == set(before) - set(ids)
            assert set(diff.unchanged) == set(ids) & set(before)
            assert set(diff.left) == (ever - set(ids)) & set(before)
            ever |= set(ids)
            before = ids
        for minute, ids in enumerate(shown):
            frame = store.as_of(at(minute))["supplier_requests"]
            assert frame["request_id"].tolist() == ids
        rows = store.table("transcript_requests")
        assert set(rows.loc[rows["on_list"], "request_id"]) == set(before)
        assert set(rows["request_id"]) == ever
        departures = store.table("departures")
        assert len(departures) == sum(len(set(a) - set(b)) for a, b in itertools.pairwise(shown))
