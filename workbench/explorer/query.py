"""What the explorer reads: its sources, and their rows filtered and sorted ignoring case and
accents in any alphabet (:func:`fold`: ``goncalves`` finds ``Gonçalves``).

Tables and views are filtered, sorted and capped inside SQLite (a ``calls`` table of raw bodies
never comes out whole); partner lists, read with ``store.as_of``, in pandas.

>>> load_rows(store, Source("view", "open_requests"), "gonçalves", limit=20).total
... # doctest: +SKIP
3
"""

from __future__ import annotations

import sqlite3
import unicodedata
from dataclasses import dataclass
from typing import Any, NamedTuple

import pandas as pd

from workbench.errors import StoreError
from workbench.report.markup import plain
from workbench.store import LIST_NAMES, Store

_CHUNK = 100  # arguments per SQL function call: SQLite's limit can be as low as 127


@dataclass(frozen=True)
class Source:
    """A ``view`` or ``table`` of the store, or a partner ``list`` as it stood after a run."""

    kind: str
    name: str

    @property
    def label(self) -> str:
        return f"{self.kind}: {self.name}"


class Rows(NamedTuple):
    """The first rows that match (at most the limit), and how many match."""

    frame: pd.DataFrame
    total: int


def sources(store: Store) -> list[Source]:
    """The store's views, then its tables (not SQLite's own ``sqlite_*``), then the lists."""

    def ours(names: list[str]) -> list[str]:
        return sorted(name for name in names if not name.lower().startswith("sqlite_"))

    return [
        *(Source("view", name) for name in ours(store.db.view_names())),
        *(Source("table", name) for name in ours(store.db.table_names())),
        *(Source("list", name) for name in LIST_NAMES),
    ]


def parse_order(key: str) -> tuple[str | None, bool]:
    """``"name"`` ascending, ``"-name"`` descending, ``""`` as stored: (column, descending)."""
    key = key.strip()
    descending = key.startswith("-")
    return (key[1:] if descending else key) or None, descending


def load_rows(
    store: Store, source: Source, text: str = "", *, limit: int, as_of: Any = None, order: str = ""
) -> Rows:
    """The rows of ``source`` holding ``text``, sorted by ``order`` (:func:`parse_order`; a
    column the source lacks is ignored), at most ``limit``. Missing values sort last.

    ``as_of`` (lists only): the list as its latest snapshot at or before that time showed it.
    """
    column, descending = parse_order(order)
    needle = text.strip()
    if source.kind == "list":
        frame = store.as_of(as_of)[source.name]
        if needle:
            frame = frame[frame_mask(frame, needle)]
        if column in frame.columns:
            frame = frame.sort_values(
                column, ascending=not descending, na_position="last", kind="stable", key=_folded
            )
        return Rows(frame.head(limit).reset_index(drop=True), len(frame))
    conn = store.db.conn  # SQLite's LIKE folds ASCII only: the students' names are not ASCII
    conn.create_function("workbench_contains", -1, _contains, deterministic=True)
    conn.create_collation("workbench_fold", _compare)
    columns = [c.name for c in store.db[source.name].columns]
    condition, params = "1", []
    if needle and columns:
        chunks = [columns[i : i + _CHUNK] for i in range(0, len(columns), _CHUNK)]
        calls = (f"workbench_contains(?, {', '.join(map(_quote, c))})" for c in chunks)
        condition, params = " OR ".join(calls), [needle] * len(chunks)
    sql = condition
    if column in columns:
        name, direction = _quote(str(column)), " DESC" if descending else ""
        sql += f" ORDER BY ({name} IS NULL), {name} COLLATE workbench_fold{direction}"
    # ``store.table`` says clearly when the table is gone, so it runs before the count.
    frame = store.table(source.name, where=f"{sql} LIMIT ?", params=[*params, limit])
    count = f"SELECT count(*) FROM {_quote(source.name)} WHERE {condition}"  # noqa: S608
    try:
        total = store.db.execute(count, params).fetchone()[0]
    except sqlite3.Error as exc:
        raise StoreError(f"Cannot count the rows of {source.name}: {exc}.") from exc
    return Rows(frame, int(total))


def fold(value: Any) -> str:
    """``value`` as text without case or accents: ``fold("Gonçalves") == "goncalves"``."""
    decomposed = unicodedata.normalize("NFKD", str(value))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def frame_mask(frame: pd.DataFrame, text: str) -> pd.Series:
    """Which rows of ``frame`` hold ``text`` in a cell (the pandas twin of the SQL filter)."""
    needle = fold(text.strip())
    hits = [any(needle in fold(plain(v)) for v in row) for row in frame.itertuples(index=False)]
    return pd.Series(hits, index=frame.index, dtype=bool)


def _folded(series: pd.Series) -> pd.Series:
    """A column of text sorts by :func:`fold`; any other as it is."""
    if series.dropna().map(lambda v: isinstance(v, str)).all():
        return series.map(fold, na_action="ignore")
    return series


def _contains(needle: Any, *values: Any) -> bool:
    wanted = fold(needle)
    return any(wanted in fold(v) for v in values if v is not None)


def _compare(a: str, b: str) -> int:
    left, right = (fold(a), a), (fold(b), b)  # ties broken by the text itself: a total order
    return (left > right) - (left < right)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
