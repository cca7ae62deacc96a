"""Fixtures of the store tests: a fresh store file per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store.helpers import SECRETS
from workbench.store import Store


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "workbench.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    s = Store(db_path, secrets=SECRETS, busy_timeout_s=5)
    yield s
    s.close()
