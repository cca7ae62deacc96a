"""One store, one partner: whom a store holds, recorded in its ``meta`` table.

A store records, per side of the partner it talks to, the base and identity-server URLs:
``partner_gateway_url`` and ``partner_gateway_auth_url`` (international, domestic),
``partner_exchange_url`` and ``partner_exchange_auth_url`` (supplier, consumer), and the
``partner_profile`` that first wrote them. A side is recorded once a call of that side reached
the partner (:meth:`workbench.session.Session.call`: a 2xx with JSON, or the spec's "nothing
found"; any web server answers a 401, a 404 or an HTML page), or a send is first recorded in
its outbox (only that partner's lists may settle it, whatever became of it); never before: a
first pull against a mistyped URL leaves the store unbound, and the corrected profile then
binds it. URLs are compared normalised
(:func:`workbench.config.normal_url`). The rule:

- any profile may read any store (``report --no-pull``, bundles, the explorer, ``w.store``);
- a profile writes (pull, send, recorded calls) only to a store whose known sides it matches; a
  side the store has not seen yet (a college adding domestic credentials) is recorded then;
- a side whose URL differs is another partner: the store is only read, nothing is written.
  When it is the same partner at a new address, :func:`repoint` (``workbench store repoint``)
  records the profile's URLs instead, after asking, and files the change as a ``repoint`` run.

The profile's name is not compared (it may be renamed harmlessly). The embedded sandbox is
recorded as ``embedded-sandbox`` on both sides (its port changes every run). A store written by
an earlier build (one ``partner_auth_url``) is read as the side it belonged to.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path

from workbench._version import __version__
from workbench.config import EMBEDDED_SANDBOX, GATEWAY_ROLES, normal_url
from workbench.errors import ConfigError, StoreError
from workbench.store.cells import dumps, now_text
from workbench.store.connection import Connection, open_read_only
from workbench.store.migrations import read_version, refuse_newer

PARTNER_KEYS = (
    "partner_profile",
    "partner_gateway_url",
    "partner_gateway_auth_url",
    "partner_exchange_url",
    "partner_exchange_auth_url",
)
_URL_KEYS = PARTNER_KEYS[1:]
_FORMER_AUTH = "partner_auth_url"  # before the sides: the first auth URL of the profile
# What re-pointing changes: key -> (what the store recorded, None if nothing; the profile's).
Changes = dict[str, tuple[str | None, str]]


def side_of(role: str) -> str:
    """The side of the partner a role talks to: ``gateway`` or ``exchange``."""
    return "gateway" if role in GATEWAY_ROLES else "exchange"


def side_identity(wanted: Mapping[str, str], side: str) -> dict[str, str]:
    """The keys of ``wanted`` (a profile's ``identity()``) that one side records."""
    keys = ("partner_profile", f"partner_{side}_url", f"partner_{side}_auth_url")
    return {k: wanted[k] for k in keys if wanted.get(k)}


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
    try:  # sqlite3 alone: a report job's check of its store loads no sqlite-utils, no pandas
        conn = open_read_only(Path(path), busy_timeout_s=30.0)
        try:
            return read_partner(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"Cannot read {path} as a workbench database: {exc}.") from None


def data_source(recorded: Mapping[str, str]) -> str:
    """Whose data a store with ``recorded`` partner keys holds, in words: "data of the
    embedded sandbox", "data of https://...", or that it records no partner yet."""
    urls = [recorded[k] for k in ("partner_exchange_url", "partner_gateway_url") if recorded.get(k)]
    if not urls:
        return "no partner recorded yet"
    if any(url == EMBEDDED_SANDBOX for url in urls):
        return "data of the embedded sandbox"
    return "data of " + ", ".join(dict.fromkeys(urls))


# What a report, an export or a bundle of the embedded sandbox's data says in its title, so that
# no one takes it for a partner's.
SANDBOX_TITLE = "Embedded sandbox data (made up, not a partner's)"


def is_sandbox_data(recorded: Mapping[str, str]) -> bool:
    """Whether a store with ``recorded`` partner keys holds the embedded sandbox's data."""
    return EMBEDDED_SANDBOX in recorded.values()


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
        + (
            ""
            if is_sandbox_data(recorded) or is_sandbox_data(wanted)
            else f" If it is the same partner at a new address, `workbench store repoint --db "
            f"{path} --profile {now}` re-points the store to it."
        )
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


def repoint_changes(recorded: Mapping[str, str], wanted: Mapping[str, str]) -> Changes:
    """What re-pointing a store that records ``recorded`` to ``wanted`` changes: every URL
    ``wanted`` gives that the store records otherwise, or not at all; the profile's name too
    when anything else changes."""
    changes: Changes = {
        k: (recorded.get(k), wanted[k])
        for k in _URL_KEYS
        if wanted.get(k) and normal_url(recorded.get(k) or "") != normal_url(wanted[k])
    }
    name = wanted.get("partner_profile")
    if changes and name and recorded.get("partner_profile") != name:
        changes["partner_profile"] = (recorded.get("partner_profile"), name)
    return changes


def repoint(
    path: str | Path,
    wanted: Mapping[str, str],
    *,
    confirm: Callable[[Changes], bool] = lambda _changes: True,
) -> tuple[Changes, bool]:
    """Re-point the store at ``path`` to ``wanted`` (a profile's ``identity()``): the same
    partner at a new address. ``confirm`` is shown the changes first (:func:`repoint_changes`)
    and may decline. The changes and whether they were made (nothing to change: ``({},
    False)``, nothing asked). They are written in one transaction with a ``runs`` row of kind
    ``repoint`` whose summary holds them; the store is not migrated, nor the partner called.

    ``ConfigError`` when there is no workbench store at ``path``; ``StoreError`` when its
    partner changed between the question and the answer (nothing written: run it again).
    """
    where = Path(path)
    if not where.is_file():
        raise ConfigError(f"There is no database at {where}: nothing to re-point.")
    c = Connection(where, busy_timeout_s=30.0)
    try:
        with c.read() as conn:
            version = read_version(conn)
            if version == 0:
                raise ConfigError(f"{where} is not a workbench store: nothing to re-point.")
            refuse_newer(version, path=str(where), version=__version__)
            recorded = read_partner(conn)
            changes = repoint_changes(recorded, wanted)
        if changes and is_sandbox_data(recorded) != is_sandbox_data(wanted):
            made_up = (
                "holds the embedded sandbox's made-up data"
                if is_sandbox_data(recorded)
                else "holds a partner's data"
            )
            raise ConfigError(
                f"{where} {made_up}: it is never re-pointed to "
                f"{'a partner' if is_sandbox_data(recorded) else 'the embedded sandbox'}, "
                "whose records would mix with its own. Give the profile its own --db."
            )
        if not changes or not confirm(changes):
            return changes, False
        with c.write() as conn:
            if repoint_changes(read_partner(conn), wanted) != changes:
                raise StoreError(
                    f"The partner recorded in {where} changed while you were asked; nothing "
                    "was re-pointed. Run the command again."
                )
            conn.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [(k, new) for k, (_old, new) in changes.items()],
            )
            summary = {k: {"from": old, "to": new} for k, (old, new) in changes.items()}
            at = now_text()
            conn.execute(
                "INSERT INTO runs (kind, profile, started_at, finished_at, status, summary, "
                "workbench_version, pid, host) VALUES ('repoint', ?, ?, ?, 'ok', ?, ?, ?, ?)",
                (wanted.get("partner_profile"), at, at, dumps({"repointed": summary}),
                 __version__, os.getpid(), socket.gethostname()),
            )  # fmt: skip
        return changes, True
    finally:
        c.close()
