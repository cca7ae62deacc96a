"""Fixtures of the explorer tests: one populated database per module, an explorer per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.explorer.populate import populate
from workbench.explorer import Explorer
from workbench.store import Store

HOSTILE = "<script>alert('x')</script> & <b>bold</b>"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two pulls around a few sends, plus one event whose text is hostile HTML."""
    path = tmp_path_factory.mktemp("explorer") / "workbench.db"
    populate(path)
    with Store(path) as store:
        store.record_snapshot(None, "placement_events", [{"eventId": "hostile-1", "note": HOSTILE}])
    return path


@pytest.fixture
def explorer(db: Path) -> Iterator[Explorer]:
    ex = Explorer.open(db)
    yield ex
    ex.close()
