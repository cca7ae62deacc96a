"""Stores of each older schema version, built from that version's frozen DDL (never a binary
file), with a few rows of every kind: what an archived store looks like."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.store.test_migrations_v3 import v2_database
from tests.store.test_migrations_v4 import v3_database
from tests.store.test_schema import V1_DDL, V1_ROWS

OLD_VERSIONS = (1, 2, 3)


def old_store(path: Path, version: int) -> Path:
    """A store of schema ``version`` (1, 2 or 3) at ``path``; ``path``."""
    if version == 1:
        conn = sqlite3.connect(path)
        conn.executescript(V1_DDL + V1_ROWS)
        conn.close()
    else:
        {2: v2_database, 3: v3_database}[version](path)
    return path
