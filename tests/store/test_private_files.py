"""Store files hold students' personal data: created for their owner only, like reports."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.store import Store


def _modes(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_a_new_store_its_wal_and_its_shm_are_0600_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    folder = tmp_path / "data"
    previous = os.umask(umask)
    try:
        with Store(folder / "wb.db") as store:
            store.set_meta("written", "yes")  # the -wal and -shm exist while it is open
            modes = _modes(folder)
    finally:
        os.umask(previous)
    assert modes == {"wb.db": 0o600, "wb.db-wal": 0o600, "wb.db-shm": 0o600}


def test_an_existing_store_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "wb.db"
    Store(path).close()
    path.chmod(0o640)  # an owner's choice (a group that reads it) is theirs to make
    with Store(path) as store:
        store.set_meta("written", "yes")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_store_every_user_could_read_is_closed_to_them_when_opened(tmp_path, caplog) -> None:
    path = tmp_path / "wb.db"
    with Store(path) as store:
        store.set_meta("written", "yes")
    path.chmod(0o644)  # as every store was made before they were private
    with Store(path) as store:
        store.set_meta("written", "again")
        modes = _modes(tmp_path)
    assert modes["wb.db"] == 0o640 and all(m & 0o007 == 0 for m in modes.values())
    assert "could be read by every user" in caplog.text


def test_the_warning_prints_as_the_cli_prints_wrapped_and_escaped(tmp_path: Path) -> None:
    path = tmp_path / "wb\x1b[2Jstore.db"  # a name holding a control character
    Store(path).close()
    path.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    env.update(COLUMNS="50", XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    done = subprocess.run(  # the console script's process: the embedded sandbox, pulled
        [sys.executable, "-m", "workbench.cli", "pull", "--db", str(path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if "could be read by every user" in line)
    warning = lines[first : first + 3]
    assert "\x1b" not in done.stderr and warning[0].startswith("wb\\x1b[2Jstore.db could")
    assert all(len(line) <= 50 for line in warning), warning  # wrapped at COLUMNS
    assert " ".join(w.strip() for w in warning).endswith("(it holds students' data).")
