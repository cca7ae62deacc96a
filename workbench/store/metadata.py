"""What the store's tables, views and columns mean (``metadata.json``), for Datasette and
``scripts/data_dictionary.py``."""

from __future__ import annotations

import json
from contextlib import closing
from functools import cache
from importlib import resources
from typing import Any

import sqlite_utils

from workbench.store.schema import fresh


@cache
def load() -> dict[str, Any]:
    """``metadata.json`` as written (do not change it: it is shared)."""
    data: dict[str, Any] = json.loads(
        resources.files("workbench.store").joinpath("metadata.json").read_text("utf-8")
    )
    return data


def column_description(table: str, column: str) -> str | None:
    """What ``column`` of ``table`` holds: the table's own description, else the shared one."""
    own = load()["tables"].get(table, {}).get("columns", {})
    return own.get(column) or load()["columns"].get(column)


def query_sql(name: str) -> str:
    """The SQL of canned query ``name``."""
    return "\n".join(load()["queries"][name]["sql"])


def datasette_metadata(database: str) -> dict[str, Any]:
    """Datasette 0.65's metadata for a store served under the name ``database`` (the file's
    stem): titles, descriptions of every table and column, units and canned queries."""
    meta, tables = load(), {}
    with closing(fresh()) as conn:
        db = sqlite_utils.Database(conn)
        columns_of = {t: list(db[t].columns_dict) for t in [*db.table_names(), *db.view_names()]}
    for table, columns in columns_of.items():
        own = meta["tables"].get(table, {})
        entry: dict[str, Any] = {
            "title": own.get("title", table),
            "description": own.get("description", ""),
            "columns": {c: d for c in columns if (d := column_description(table, c)) is not None},
        }
        if units := {c: meta["units"][c] for c in columns if c in meta["units"]}:
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
