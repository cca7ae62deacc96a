"""Fixtures shared by every test: real sandboxes on loopback ports, a workbench on one, the
shared PESC folder."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests.watched import WatchedSandbox
from workbench.http.session import Exchange
from workbench.sandbox import Sandbox, SandboxSettings
from workbench.sandbox.runner import with_overrides

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
PESC_DIR = SHARED / "pesc"

# Retries fast enough for tests, patient enough for the fault rates they inject.
FAST = {
    "WORKBENCH_BACKOFF_INITIAL": "0.01",
    "WORKBENCH_BACKOFF_MAX": "0.05",
    "WORKBENCH_RETRY_AFTER_MAX": "0.05",
    "WORKBENCH_MAX_ATTEMPTS": "10",
}


# The longest modules, longest first: xdist (``--dist loadfile``, pyproject.toml) hands out
# whole modules in the order of the collection, so these start at once, on both workers, and
# the short modules fill in around them instead of waiting behind them at the end.
LONGEST = (
    "tests/examples/test_airflow.py",
    "tests/scheduler/test_jobs.py",
    "tests/partners/test_unknown_partners.py",
    "tests/partners/test_each_open_point.py",
)


@pytest.hookimpl(trylast=True)  # after pytest's own reordering, which keeps modules whole
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``LONGEST`` modules first, then those with slow tests, then the rest."""

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.partition("::")[0]
        if path in LONGEST:
            return LONGEST.index(path)
        return len(LONGEST) + (path not in slow)

    slow = {i.nodeid.partition("::")[0] for i in items if i.get_closest_marker("slow")}
    items.sort(key=rank)  # stable: each module's tests stay together, in their order


@pytest.fixture(autouse=True)
def _no_inherited_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI wraps its output at ``COLUMNS``; pytest-xdist's workers inherit ``COLUMNS=80``,
    so tests run without it unless they set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(autouse=True)
def _no_user_profiles(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: Any) -> None:
    """A profiles file in the developer's config folder (found from any folder) never reaches
    a test: the config folder is an empty one of the test's own."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture
def sandbox_factory() -> Iterator[Callable[..., WatchedSandbox]]:
    """Start sandboxes with SandboxSettings (or Faults) overrides; all stop at teardown."""
    started: list[WatchedSandbox] = []

    def make(**overrides: Any) -> WatchedSandbox:
        sb = WatchedSandbox(with_overrides(SandboxSettings(), **overrides)).start()
        started.append(sb)
        return sb

    yield make
    for sb in started:
        sb.stop()


@pytest.fixture
def sandbox(sandbox_factory: Callable[..., WatchedSandbox]) -> WatchedSandbox:
    """A fresh sandbox with default settings."""
    return sandbox_factory()


@pytest.fixture
def exchanges() -> list[Exchange]:
    """Every exchange the workbenches of ``connect_to`` record, in order."""
    return []


@pytest.fixture
def connect_to(exchanges: list[Exchange], tmp_path: Path) -> Iterator[Callable[..., wb.Workbench]]:
    """``connect_to(sb, db=None, settings=None, **env)``: a Workbench on sandbox ``sb`` with
    ``FAST`` retries, ``env`` overriding its variables and ``settings`` its tuning; all are
    closed at teardown. Without ``db`` (or ``WORKBENCH_DB``), its calls are recorded in
    ``tmp_path / "connect_to.db"``, never in the working folder."""
    opened: list[wb.Workbench] = []

    def make(
        sb: Sandbox, *, db: Path | None = None, settings: dict[str, Any] | None = None, **env: str
    ) -> wb.Workbench:
        environ = {**sb.env, **FAST, **env}
        if db is None and "WORKBENCH_DB" not in environ:
            db = tmp_path / "connect_to.db"
        w = wb.connect(env=environ, db=db, recorder=exchanges.append, **(settings or {}))
        opened.append(w)
        return w

    yield make
    for w in opened:
        w.close()


@pytest.fixture(scope="session")
def xsd_dir() -> Path:
    """The official PESC schemas; tests that need them skip when the folder is absent."""
    path = PESC_DIR / "xsd"
    if not path.is_dir():
        pytest.skip(f"PESC schemas not found at {path} (shared/pesc/xsd is absent)")
    return path


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    path = PESC_DIR / "samples"
    if not path.is_dir():
        pytest.skip(f"PESC samples not found at {path} (shared/pesc/samples is absent)")
    return path


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """cwd in tmp, no WORKBENCH_* setting of the developer's: the embedded sandbox would be
    the partner."""
    for name in list(os.environ):
        if name.startswith("WORKBENCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path
