"""What a report reads and how it shows it: the store (never an empty one by accident), a
college's Parquet export through DuckDB, and the zone its times show in (checked before a job
starts its kernel)."""

# ruff: noqa: S608  (SQL identifiers here are the store's own names; a path is quoted, values bound)

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.config import check_timezone, load_profile
from workbench.errors import ConfigError, InvalidParameter, StoreError

if TYPE_CHECKING:
    import pandas as pd

    from workbench.reconcile import Reconciliation
    from workbench.report.staleness import Freshness
    from workbench.store import Store

# The tables ``reconcile.load`` and ``freshness`` read: a college's export holds each as Parquet.
EXPORT_TABLES = ("transcript_requests", "transcripts_received", "documents", "outbox",
                 "responses", "acknowledgments", "snapshots", "snapshot_items", "departures",
                 "runs")  # fmt: skip


def store_path(
    db: str | os.PathLike[str] | None, *, profile: str | None = None, config_path: str | None = None
) -> Path:
    """``db``, else the profile's database."""
    return Path(db if db is not None else load_profile(profile, config_path=config_path).db)


def open_store(db: str | os.PathLike[str] | None = None, *, profile: str | None = None) -> Store:
    """The store at ``db`` (default: the profile's, named absolute: where a kernel looked),
    read-only (a missing one is a ``StoreError``, never an empty store that says all is well)."""
    from workbench.store import Store  # sqlite-utils loads pandas: not for a job's checks

    return Store(store_path(db, profile=profile).absolute(), read_only=True)


class ExportedStore:
    """A store's tables exported as ``<folder>/<table>.parquet`` (``EXPORT_TABLES``), read by
    DuckDB's built-in Parquet reader as ``reconcile.load`` and ``freshness`` read a store."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        try:
            import duckdb
        except ImportError:
            raise ConfigError("Reading exports needs DuckDB: `pip install duckdb`.") from None
        self.path, self.db = Path(folder), self  # reconcile.load queries store.db
        files = {name: self.path / f"{name}.parquet" for name in EXPORT_TABLES}
        if missing := [name for name, file in files.items() if not file.is_file()]:
            raise StoreError(
                f"{self.path} lacks {', '.join(missing)} as Parquet: export each from the "
                f"college's store, `workbench export NAME --format parquet --out "
                f"{self.path}/NAME.parquet` (NAME each of {', '.join(EXPORT_TABLES)})."
            )
        # in memory, and never an extension fetched (an offline machine cannot)
        self._duck = duckdb.connect(config={"autoinstall_known_extensions": False,
                                            "autoload_known_extensions": False})  # fmt: skip
        for name, file in files.items():
            quoted = str(file.resolve()).replace("'", "''")
            try:  # reads the file's footer now: a damaged export fails here
                self._duck.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{quoted}')")
            except duckdb.Error as exc:
                self._duck.close()
                raise StoreError(
                    f"{file} is not a readable Parquet file ({exc}): export it again."
                ) from None

    def _frame(self, sql: str, params: Any = ()) -> pd.DataFrame:
        import duckdb

        from workbench.store.frames import typed

        try:
            return typed(self._duck.execute(sql, params).df())
        except duckdb.Error as exc:
            raise StoreError(f"{self.path} cannot be read as a store's export ({exc}).") from None

    def table(self, name: str, *, where: str | None = None, params: Any = ()) -> pd.DataFrame:
        """As ``Store.table``."""
        return self._frame(f'SELECT * FROM "{name}"' + (f" WHERE {where}" if where else ""),
                           list(params))  # fmt: skip

    def query(self, sql: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """As ``Store.db.query`` (``:name`` parameters)."""
        named = {k: v for k, v in params.items() if f":{k}" in sql}
        for name in named:
            sql = sql.replace(f":{name}", f"${name}")
        yield from self._frame(sql, named).to_dict("records")

    def current_documents(self, list_name: str) -> pd.DataFrame:
        """As ``Store.current_documents``: the validation of each item's current document."""
        from workbench.store.lists import list_info

        info = list_info(list_name, details=True)
        return self._frame(
            f"SELECT d.item_id, d.validation FROM {info.table} e JOIN documents d ON d.entity "
            f"= ? AND d.item_id = e.{info.id_column} AND d.version = e.current_version",
            [info.table],
        ).set_index("item_id")

    def close(self) -> None:
        self._duck.close()


def reconciled(
    source: str | os.PathLike[str], *, exported: bool = False, as_of: Any = None,
    sla_days: float = 5.0, grace_hours: float = 0.0,
) -> tuple[Reconciliation, Freshness]:  # fmt: skip
    """The store at ``source`` (``exported``: a folder of its Parquet export) reconciled as the
    reconcile report does, and how fresh it was then."""
    from workbench import reconcile
    from workbench.report.staleness import freshness

    with closing(ExportedStore(source) if exported else open_store(source)) as store:
        tables = reconcile.load(store, as_of=as_of)  # type: ignore[arg-type]
        rec = reconcile.reconcile(tables, sla_days=sla_days, grace_hours=grace_hours)
        return rec, freshness(store, rec.now)  # type: ignore[arg-type]


def colleges(
    sources: str | Sequence[str], names: str | Sequence[str] | None = None
) -> dict[str, str]:
    """College -> its store or export folder: ``names`` in order, else each path's stem
    (text: comma-separated, as ``-p stores=a.db,b.db`` gives it)."""
    paths = sources.split(",") if isinstance(sources, str) else [str(s) for s in sources]
    given = names.split(",") if isinstance(names, str) else list(names or [])
    paths, given = [p.strip() for p in paths if p.strip()], [n.strip() for n in given]
    if not paths:
        raise InvalidParameter("name at least one store (stores=[...]) or export folder "
                               "(exports=[...])", parameter="stores")  # fmt: skip
    named = given or [Path(p).stem for p in paths]
    if len(named) != len(paths):
        raise InvalidParameter(f"{len(named)} colleges for {len(paths)} stores: name each, in "
                               "the same order", parameter="colleges")  # fmt: skip
    if len(set(named)) < len(named):
        twice = sorted({n for n in named if named.count(n) > 1})
        raise InvalidParameter(f"{', '.join(twice)} names more than one store: give each its "
                               "own name (colleges=[...])", parameter="colleges")  # fmt: skip
    return dict(zip(named, paths, strict=True))


def report_zone(
    tz: str | None = None, *, profile: str | None = None, config_path: str | None = None
) -> str:
    """``tz``, else the profile's ``timezone``, else UTC; ``ConfigError`` if unknown."""
    if tz is not None:
        return check_timezone(tz)
    return load_profile(profile, config_path=config_path).timezone
