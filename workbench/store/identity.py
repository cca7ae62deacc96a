"""One store, one partner: each side's URLs, recorded in ``meta`` once a call reached it. Any
profile reads any store; one writes only to a store whose known sides it matches."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path

from workbench.config import EMBEDDED_SANDBOX, GATEWAY_ROLES, normal_url
from workbench.errors import ConfigError, StoreError
from workbench.store.connection import Connection, open_read_only
from workbench.store.migrations import read_version, refuse_newer
from workbench.store.schema import dumps, run_row

PARTNER_KEYS = (
    "partner_profile", "partner_gateway_url", "partner_gateway_auth_url",
    "partner_exchange_url", "partner_exchange_auth_url",
)  # fmt: skip
_URL_KEYS = PARTNER_KEYS[1:]
# What re-pointing changes: key -> (what the store recorded, None if nothing; the profile's).
Changes = dict[str, tuple[str | None, str]]
SANDBOX_TITLE = "Embedded sandbox data (made up, not a partner's)"


def side_of(role: str) -> str:
    return "gateway" if role in GATEWAY_ROLES else "exchange"


def side_identity(wanted: Mapping[str, str], side: str) -> dict[str, str]:
    """The keys of ``wanted`` (a profile's ``identity()``) one side records."""
    keys = ("partner_profile", f"partner_{side}_url", f"partner_{side}_auth_url")
    return {k: wanted[k] for k in keys if wanted.get(k)}


def read_partner(conn: sqlite3.Connection) -> dict[str, str]:
    """The ``partner_*`` keys an open store records."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        return {}
    rows = conn.execute("SELECT key, value FROM meta").fetchall()
    return {k: normal_url(v) if k in _URL_KEYS else v for k, v in rows if v and k in PARTNER_KEYS}


def stored_partner(path: str | Path) -> dict[str, str]:
    """Whom the database at ``path`` holds ({} if nobody), changing nothing."""
    if not Path(path).is_file():
        return {}
    try:
        with closing(open_read_only(Path(path), busy_timeout_s=30.0)) as conn:
            return read_partner(conn)
    except sqlite3.Error as exc:
        raise StoreError(f"Cannot read {path} as a workbench database: {exc}.") from None


def data_source(recorded: Mapping[str, str]) -> str:
    urls = [recorded[k] for k in ("partner_exchange_url", "partner_gateway_url") if recorded.get(k)]
    if not urls:
        return "no partner recorded yet"
    if EMBEDDED_SANDBOX in urls:
        return "data of the embedded sandbox"
    return "data of " + ", ".join(dict.fromkeys(urls))


def is_sandbox_data(recorded: Mapping[str, str]) -> bool:
    return EMBEDDED_SANDBOX in recorded.values()


def check_partner(
    path: str | Path,
    recorded: Mapping[str, str],
    wanted: Mapping[str, str],
    *,
    fix: str = "Pass another --db (or WORKBENCH_DB, or the profile's db) for this profile.",
) -> None:
    """``ConfigError`` (saying ``fix``) when a URL of a side both know differs."""
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
    """Record ``wanted`` where the store records nothing yet (``ConfigError``: another's)."""
    recorded = read_partner(conn)
    check_partner(path, recorded, wanted)
    rows = [(k, v) for k, v in wanted.items() if v and k not in recorded]
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", rows)


def repoint_changes(recorded: Mapping[str, str], wanted: Mapping[str, str]) -> Changes:
    """What re-pointing a store from ``recorded`` to ``wanted`` changes: URLs, then the name."""
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
    """Re-point the store to the same partner at a new address if ``confirm`` accepts; the
    changes, and whether they were made."""
    where = Path(path)
    if not where.is_file():
        raise ConfigError(f"There is no database at {where}: nothing to re-point.")
    with closing(Connection(where, busy_timeout_s=30.0)) as c:
        with c.read() as conn:
            version = read_version(conn)
            if version == 0:
                raise ConfigError(f"{where} is not a workbench store: nothing to re-point.")
            refuse_newer(version, path=where)
            recorded = read_partner(conn)
            changes = repoint_changes(recorded, wanted)
        if changes and is_sandbox_data(recorded) != is_sandbox_data(wanted):
            held, other = (
                ("the embedded sandbox's made-up data", "a partner")
                if is_sandbox_data(recorded)
                else ("a partner's data", "the embedded sandbox")
            )
            raise ConfigError(
                f"{where} holds {held}: it is never re-pointed to {other}, whose records would "
                "mix with its own. Give the profile its own --db."
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
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [(k, new) for k, (_old, new) in changes.items()],
            )
            summary = {k: {"from": old, "to": new} for k, (old, new) in changes.items()}
            run = run_row("repoint", wanted.get("partner_profile"), status="ok",
                          summary=dumps({"repointed": summary}))  # fmt: skip
            c.insert("runs", {**run, "finished_at": run["started_at"]})
        return changes, True
