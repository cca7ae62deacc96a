"""Fixtures of the reconciliation tests: a fresh store per test (or per module, for the big
crafted states several tests read), and a partner to drive it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.reconcile.builders import Partner
from workbench.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "reconcile.db", busy_timeout_s=5)
    yield s
    s.close()


@pytest.fixture
def partner(store: Store) -> Partner:
    return Partner(store)


@pytest.fixture(scope="module")
def module_partner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], Partner]]:
    """Make partners on fresh stores that live as long as the test module."""
    stores: list[Store] = []

    def make() -> Partner:
        folder = tmp_path_factory.mktemp("reconcile")
        stores.append(Store(folder / "reconcile.db", busy_timeout_s=5))
        return Partner(stores[-1])

    yield make
    for s in stores:
        s.close()
