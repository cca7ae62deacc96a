"""What the store's tables, views and columns mean, and the questions asked of it.

``metadata.json`` (beside this module) holds a title and description for every table and view,
a description for every column (``columns`` holds those shared by several tables, a table's
own ``columns`` override them), ``units``, and canned ``queries`` (their SQL as a list of
lines). :func:`datasette_metadata` turns it into Datasette's metadata; ``workbench.store.
dictionary`` into ``docs/data-dictionary.md``. ``tests/store/test_metadata.py`` keeps it equal
to the schema.
"""

from __future__ import annotations

import json
from contextlib import closing
from functools import cache
from importlib import resources
from typing import Any

from workbench.store.schema import fresh


@cache
def _load() -> dict[str, Any]:
    text = resources.files("workbench.store").joinpath("metadata.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def load() -> dict[str, Any]:
    """The metadata as written in ``metadata.json`` (a copy: change it freely)."""
    return json.loads(json.dumps(_load()))


def schema_columns() -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """Every table and view of a fresh store: name -> (``table`` or ``view``, its columns as
    (name, declared type)).

    Child tables (recipients, courses, awards) gain a column per record field as data arrives;
    only their fixed columns are listed."""
    with closing(fresh()) as conn:
        found = conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
            "ORDER BY type, name"
        ).fetchall()
        return {
            name: (kind, [(r[1], r[2]) for r in conn.execute(f"PRAGMA table_info({name})")])
            for name, kind in found
        }


def column_description(table: str, column: str) -> str | None:
    """What ``column`` of ``table`` holds: the table's own description, else the shared one."""
    meta = _load()
    own = meta["tables"].get(table, {}).get("columns", {})
    return own.get(column) or meta["columns"].get(column)


def column_unit(column: str) -> str | None:
    """The unit of a column (``s``, ``day``), wherever it appears."""
    unit: str | None = _load()["units"].get(column)
    return unit


def query_sql(name: str) -> str:
    """The SQL of canned query ``name``."""
    return "\n".join(_load()["queries"][name]["sql"])


def datasette_metadata(database: str) -> dict[str, Any]:
    """Datasette 0.65's metadata for a store served under the name ``database`` (the file's
    stem): titles, descriptions of every table and column, units and canned queries."""
    meta = _load()
    tables: dict[str, Any] = {}
    for table, (_kind, typed) in schema_columns().items():
        columns = [c for c, _type in typed]
        own = meta["tables"].get(table, {})
        entry: dict[str, Any] = {
            "title": own.get("title", table),
            "description": own.get("description", ""),
            "columns": {c: d for c in columns if (d := column_description(table, c)) is not None},
        }
        units = {c: u for c in columns if (u := column_unit(c)) is not None}
        if units:
            entry["units"] = units
        tables[table] = entry
    queries = {  # the query's own options (title, description, hide_sql...), its SQL built
        name: {**{k: v for k, v in q.items() if k != "sql"}, "sql": query_sql(name)}
        for name, q in meta["queries"].items()
    }
    return {
        "title": meta["title"],
        "description": meta["description"],
        "databases": {database: {"tables": tables, "queries": queries}},
    }
