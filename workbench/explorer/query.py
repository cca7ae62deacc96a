"""What the explorer reads from the store: sources and filtered rows. (Documents and pull runs
come from the report: ``report.request_documents`` and ``report.pull_runs``.)

Tables and views are filtered and capped inside SQLite (a ``calls`` table of thousands of raw
bodies never comes out whole); partner lists are read with ``store.as_of`` and filtered in
pandas. Matching ignores case and accents for any alphabet (:func:`fold`: ``goncalves`` finds
``Gonçalves``), in SQL (a registered function) and in pandas alike; so does sorting text.

>>> rows = load_rows(store, Source("view", "open_requests"), Filter(text="gonçalves"), limit=20)
... # doctest: +SKIP
>>> rows.total, len(rows.frame)  # doctest: +SKIP
(3, 3)
"""

from __future__ import annotations

import sqlite3
import unicodedata
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench.errors import StoreError
from workbench.report.markup import local_time, plain
from workbench.store import LIST_NAMES, Store

KINDS = ("view", "table", "list")
ID_COLUMNS = ("request_id", "transcript_id", "item_id", "item_key", "event_key")
_CHUNK = 100  # arguments per SQL function call: SQLite's limit can be as low as 127


@dataclass(frozen=True)
class Source:
    """Something the explorer can show: a ``view`` or ``table`` of the store, or a partner
    ``list`` as it stood after a run."""

    kind: str
    name: str

    @property
    def label(self) -> str:
        return f"{self.kind}: {self.name}"


@dataclass(frozen=True)
class Filter:
    """``text``: anywhere in a row; ``column`` + ``value``: that column equals it. Both ignore
    case and surrounding spaces; empty parts filter nothing."""

    text: str = ""
    column: str | None = None
    value: str = ""

    @property
    def by_text(self) -> str:
        return self.text.strip()

    @property
    def by_column(self) -> bool:
        return bool(self.column) and bool(self.value.strip())


@dataclass(frozen=True)
class Order:
    """Sort by ``column`` (None: as stored), ``descending`` or not. Text sorts ignoring case
    and accents; missing values come last either way."""

    column: str | None = None
    descending: bool = False

    @classmethod
    def parse(cls, key: str) -> Order:
        """``"name"`` ascending, ``"-name"`` descending, ``""`` as stored."""
        key = key.strip()
        if key.startswith("-"):
            return cls(key[1:] or None, descending=True)
        return cls(key or None)

    @property
    def key(self) -> str:
        """The inverse of :meth:`parse`."""
        return "" if not self.column else ("-" if self.descending else "") + self.column


@dataclass(frozen=True)
class Rows:
    """The first rows that match (at most the limit), how many match, and every column."""

    frame: pd.DataFrame
    total: int
    columns: list[str]


def sources(store: Store) -> list[Source]:
    """The store's views, then its tables, then the partner lists. SQLite's own tables
    (``sqlite_stat1`` after an ``ANALYZE``, ``sqlite_sequence``) are not the store's: left out."""
    return [
        *(Source("view", name) for name in sorted(_ours(store.db.view_names()))),
        *(Source("table", name) for name in sorted(_ours(store.db.table_names()))),
        *(Source("list", name) for name in LIST_NAMES),
    ]


def _ours(names: list[str]) -> list[str]:
    return [name for name in names if not name.lower().startswith("sqlite_")]


def load_rows(
    store: Store,
    source: Source,
    where: Filter,
    *,
    limit: int,
    as_of: Any = None,
    order: Order | None = None,
) -> Rows:
    """The rows of ``source`` that pass ``where``, sorted by ``order``, at most ``limit``.

    ``as_of`` (lists only): a time; the list as its latest snapshot at or before it showed it.
    An ``order`` on a column the source lacks is ignored (the source changed under it).
    """
    order = order or Order()
    if source.kind == "list":
        frame = store.as_of(as_of)[source.name]
        matched = sort_frame(frame[frame_mask(frame, where)], order)
        return Rows(matched.head(limit).reset_index(drop=True), len(matched), list(frame.columns))
    columns = [column.name for column in store.db[source.name].columns]
    condition, params = _sql_condition(store, columns, where)
    # ``store.table`` takes a WHERE clause; the ORDER BY and LIMIT ride on it so both apply in
    # SQLite. It also says clearly when the table is gone, so it runs first.
    sql = f"{condition}{_order_by(store, columns, order)} LIMIT ?"
    frame = store.table(source.name, where=sql, params=[*params, limit])
    count = f"SELECT count(*) FROM {_quote(source.name)} WHERE {condition}"  # noqa: S608
    try:
        total = store.db.execute(count, params).fetchone()[0]
    except sqlite3.Error as exc:
        raise StoreError(f"Cannot count the rows of {source.name}: {exc}.") from exc
    return Rows(frame, int(total), columns)


def sort_frame(frame: pd.DataFrame, order: Order) -> pd.DataFrame:
    """``frame`` sorted by ``order`` (the pandas twin of the SQL ORDER BY); stable."""
    if not order.column or order.column not in frame.columns:
        return frame
    return frame.sort_values(
        order.column, ascending=not order.descending, na_position="last", kind="stable",
        key=lambda s: s.map(fold, na_action="ignore") if _is_text(s) else s,
    )  # fmt: skip


def fold(value: Any) -> str:
    """``value`` as text without case or accents: ``fold("Gonçalves") == "goncalves"``."""
    decomposed = unicodedata.normalize("NFKD", str(value))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def frame_mask(frame: pd.DataFrame, where: Filter) -> pd.Series:
    """Which rows of ``frame`` pass ``where`` (the pandas twin of the SQL filter)."""
    mask = pd.Series(True, index=frame.index)
    if where.by_text:
        needle = fold(where.by_text)
        found = pd.Series(False, index=frame.index)
        for column in frame.columns:
            hits = [needle in fold(text) for text in _texts(frame[column])]
            found |= pd.Series(hits, index=frame.index, dtype=bool)
        mask &= found
    if where.by_column:
        if where.column not in frame.columns:
            return pd.Series(False, index=frame.index)
        wanted = fold(where.value.strip())
        same = [fold(text.strip()) == wanted for text in _texts(frame[where.column])]
        mask &= pd.Series(same, index=frame.index, dtype=bool)
    return mask


def row_ids(frame: pd.DataFrame) -> list[str]:
    """The ids of ``frame``'s rows (from its first id column), in order, without repeats."""
    for column in ID_COLUMNS:
        if column in frame.columns:
            return list(dict.fromkeys(t for t in _texts(frame[column]) if t))
    return []


def run_label(run: Any, tz: str | None = None) -> str:
    """``#3 · 2026-03-02 09:00:05 · ok``: when it started, to the second in zone ``tz``."""
    started = run.started_at
    when = local_time(started, tz).strftime("%Y-%m-%d %H:%M:%S") if pd.notna(started) else "?"
    return f"#{run.id} · {when} · {run.status}"


def _sql_condition(store: Store, columns: list[str], where: Filter) -> tuple[str, list[Any]]:
    parts: list[str] = []
    params: list[Any] = []
    if where.by_text or where.by_column:
        _register_functions(store)
    if where.by_text and columns:
        calls = []
        for start in range(0, len(columns), _CHUNK):
            chunk = columns[start : start + _CHUNK]
            calls.append(f"workbench_contains(?, {', '.join(map(_quote, chunk))})")
            params.append(where.by_text)
        parts.append("(" + " OR ".join(calls) + ")")
    if where.by_column:
        if where.column not in columns:
            return "0", []
        parts.append(f"workbench_equals({_quote(str(where.column))}, ?)")
        params.append(where.value)
    return " AND ".join(parts) or "1", params


def _order_by(store: Store, columns: list[str], order: Order) -> str:
    if not order.column or order.column not in columns:
        return ""
    _register_functions(store)
    column = _quote(order.column)
    direction = " DESC" if order.descending else ""
    return f" ORDER BY ({column} IS NULL), {column} COLLATE workbench_fold{direction}"


def _register_functions(store: Store) -> None:
    # Plain Python functions on the store's connection: SQLite's own LIKE folds ASCII only,
    # and the students' names are neither ASCII nor typed with their accents.
    conn = store.db.conn
    conn.create_function("workbench_contains", -1, _contains, deterministic=True)
    conn.create_function("workbench_equals", 2, _equals, deterministic=True)
    conn.create_collation("workbench_fold", _compare)


def _contains(needle: Any, *values: Any) -> bool:
    wanted = fold(needle)
    return any(wanted in fold(v) for v in values if v is not None)


def _equals(value: Any, wanted: Any) -> bool:
    return value is not None and fold(str(value).strip()) == fold(str(wanted).strip())


def _compare(a: str, b: str) -> int:
    left, right = (fold(a), a), (fold(b), b)  # ties broken by the text itself: a total order
    return (left > right) - (left < right)


def _is_text(series: pd.Series) -> bool:
    """Text to sort by :func:`fold`: a string column, or an object column holding only text."""
    if series.dtype == object:
        return bool(series.dropna().map(lambda v: isinstance(v, str)).all())
    return pd.api.types.is_string_dtype(series)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _texts(series: pd.Series) -> list[str]:
    """Each cell as the text the filters match (a missing value is empty, as in SQL)."""
    return [plain(v) for v in series]
