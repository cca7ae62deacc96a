"""One store, one partner: whom a store holds, recorded in its ``meta`` table (issue #11).

A store records, per side of the partner it talks to, the base and identity-server URLs:
``partner_gateway_url`` and ``partner_gateway_auth_url`` (international, domestic),
``partner_exchange_url`` and ``partner_exchange_auth_url`` (supplier, consumer), and the
``partner_profile`` that first wrote them. :attr:`workbench.Workbench.store` records them when it
creates or opens the file, before any call or send is written to it. URLs are compared
normalised (:func:`workbench.config.normal_url`). The rule:

- any profile may read any store (``report --no-pull``, bundles, the explorer, ``w.store``);
- a profile writes (pull, send, recorded calls) only to a store whose known sides it matches; a
  side the store has not seen yet (a college adding domestic credentials) is recorded then;
- a side whose URL differs is another partner: the store is only read, nothing is written.

The profile's name is not compared (it may be renamed harmlessly). The embedded sandbox is
recorded as ``embedded-sandbox`` on both sides (its port changes every run). A store written by
this issue's first build (one ``partner_auth_url``) is read as the side it belonged to.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path

from workbench.config import normal_url
from workbench.errors import ConfigError
from workbench.store.connection import Connection

PARTNER_KEYS = (
    "partner_profile",
    "partner_gateway_url",
    "partner_gateway_auth_url",
    "partner_exchange_url",
    "partner_exchange_auth_url",
)
_URL_KEYS = PARTNER_KEYS[1:]
_FORMER_AUTH = "partner_auth_url"  # before the sides: the first auth URL of the profile


def read_partner(conn: sqlite3.Connection) -> dict[str, str]:
    """The ``partner_*`` keys an open store records, URLs normalised ({} when none, or no
    ``meta`` table)."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if not has_meta:
        return {}
    keys = (*PARTNER_KEYS, _FORMER_AUTH)
    marks = ", ".join("?" * len(keys))
    rows = conn.execute(
        f"SELECT key, value FROM meta WHERE key IN ({marks})",  # noqa: S608 - placeholders only
        keys,
    ).fetchall()
    found = {str(k): str(v) for k, v in rows if v}
    former = found.pop(_FORMER_AUTH, None)
    if former:  # the gateway's auth URL came first when the store recorded a gateway
        side = "gateway" if found.get("partner_gateway_url") else "exchange"
        found.setdefault(f"partner_{side}_auth_url", former)
    return {k: normal_url(v) if k in _URL_KEYS else v for k, v in found.items()}


def stored_partner(path: str | Path) -> dict[str, str]:
    """Whom the database at ``path`` holds, read without creating or changing any file ({}
    when there is no file yet, or it records nobody)."""
    if not Path(path).is_file():
        return {}
    c = Connection(path, busy_timeout_s=30.0, read_only=True)
    try:
        with c.translated():
            return read_partner(c.conn)
    finally:
        c.close()


def check_partner(
    path: str | Path,
    recorded: Mapping[str, str],
    wanted: Mapping[str, str],
    *,
    fix: str = "Pass another --db (or WORKBENCH_DB, or the profile's db) for this profile.",
) -> None:
    """``ConfigError`` (saying ``fix``) when the store at ``path`` records another partner than
    ``wanted``: a URL of a side both know differs."""
    differ = [
        k
        for k in _URL_KEYS
        if recorded.get(k) and wanted.get(k) and normal_url(recorded[k]) != normal_url(wanted[k])
    ]
    if not differ:
        return
    held = ", ".join(recorded[k] for k in differ)
    asked = ", ".join(wanted[k] for k in differ)
    before, now = recorded.get("partner_profile", "?"), wanted.get("partner_profile", "?")
    raise ConfigError(
        f"The database {path} holds another partner's data ({held}, pulled with profile "
        f"{before!r}); profile {now!r} talks to {asked}. Mixing the two would mark its items "
        "changed and gone, so nothing was written: a profile may only read another "
        f"partner's store (w.store, report --no-pull, bundle, explorer), never pull or send "
        f"into it. {fix}"
    )


def claim_partner(conn: sqlite3.Connection, path: str | Path, wanted: Mapping[str, str]) -> None:
    """Record ``wanted`` (a profile's ``identity()``) where the store records nothing yet, in
    the open write transaction ``conn``; ``ConfigError``, writing nothing, when it holds another
    partner. A store of the former keys gets the sided ones."""
    recorded = read_partner(conn)
    check_partner(path, recorded, wanted)
    physical = {str(r[0]) for r in conn.execute("SELECT key FROM meta WHERE value != ''")}
    rows = {k: v for k, v in recorded.items() if k not in physical}  # migrated former keys
    rows.update({k: v for k, v in wanted.items() if v and k not in recorded})
    if rows:
        conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", rows.items())
