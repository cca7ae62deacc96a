"""The store's metadata (``workbench/store/metadata.json``) describes every table, view and
column of the schema and nothing else; its canned queries answer their questions on a real
SQLite store; ``docs/data-dictionary.md`` is what the generator writes; ``workbench browse``
refuses clearly what it cannot serve."""

from __future__ import annotations

import sqlite3
import sys
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scripts.data_dictionary import dictionary, schema_columns
from workbench.cli import app
from workbench.cli.browse import INSTALL
from workbench.cli.browse import serve as browse
from workbench.errors import ConfigError
from workbench.store import Store
from workbench.store.metadata import (
    column_description,
    datasette_metadata,
    load,
    query_sql,
)

ROOT = Path(__file__).resolve().parents[2]


def test_every_table_view_and_column_has_a_title_and_description() -> None:
    meta = load()
    found = schema_columns()
    assert {"transcript_requests", "documents", "outbox", "open_requests"} <= found.keys()
    undescribed = [
        f"{table}.{column}"
        for table, (_kind, columns) in found.items()
        for column, _type in columns
        if not column_description(table, column)
    ]
    assert undescribed == []
    for table in found:
        own = meta["tables"].get(table, {})
        assert own.get("title") and own.get("description"), f"{table} lacks a title or description"


def test_the_metadata_names_nothing_the_schema_lacks() -> None:
    meta = load()
    found = {
        table: {c for c, _type in columns} for table, (_kind, columns) in schema_columns().items()
    }
    assert set(meta["tables"]) - set(found) == set()
    stale = [
        f"{table}.{column}"
        for table, own in meta["tables"].items()
        for column in own.get("columns", {})
        if column not in found[table]
    ]
    assert stale == []
    every_column = set().union(*found.values())
    assert set(meta["columns"]) - every_column == set()
    assert set(meta["units"]) - every_column == set()


def test_datasette_metadata_has_every_table_and_the_canned_queries() -> None:
    meta = datasette_metadata("demo")
    database = meta["databases"]["demo"]
    assert set(database["tables"]) == set(schema_columns())
    calls = database["tables"]["calls"]
    assert calls["units"] == {"duration_s": "s"}
    assert calls["columns"]["duration_s"] == "How long it took."
    assert set(database["queries"]) == {
        "overdue_requests", "answered_still_listed", "transcripts_awaiting_acknowledgment",
        "acknowledgment_mismatches", "request_story",
    }  # fmt: skip
    for query in database["queries"].values():
        assert query["title"] and query["description"]
        assert isinstance(query["sql"], str) and query["sql"].lstrip().upper().startswith(
            ("SELECT", "WITH")
        )


def test_every_canned_query_opens_on_its_results() -> None:
    """Datasette 0.65's ``hide_sql``: a canned query shows its results first, its SQL one
    click away ("show")."""
    queries = load()["queries"]
    assert {name: q.get("hide_sql") for name, q in queries.items()} == dict.fromkeys(queries, True)


def test_datasette_is_told_to_hide_the_sql() -> None:
    queries = datasette_metadata("demo")["databases"]["demo"]["queries"]
    assert {name: q.get("hide_sql") for name, q in queries.items()} == dict.fromkeys(queries, True)


def test_the_data_dictionary_is_current(tmp_path: Path) -> None:
    committed = (ROOT / "docs" / "data-dictionary.md").read_text(encoding="utf-8")
    assert dictionary() == committed, (
        "docs/data-dictionary.md is stale: run `python scripts/data_dictionary.py`"
    )
    assert "### Calls (`calls`)" in committed
    assert "| `duration_s` | REAL | s | How long it took. |" in committed
    assert "Parameters: `request_id`." in committed


@pytest.fixture
def store_db(tmp_path: Path) -> Path:
    """A real store (schema and views by the Store itself) with a few rows for each question."""
    path = tmp_path / "workbench.db"
    Store(path).close()
    rows = [
        # (request_id, days old, on the list, cancelled)
        ("req-old", "-9 days", 1, None),
        ("req-new", "-1 days", 1, None),
        ("req-gone", "-20 days", 0, None),
        ("req-cancelled", "-15 days", 1, "2026-01-01T00:00:00Z"),
    ]
    with closing(sqlite3.connect(path)) as conn, conn:
        for request_id, age, on_list, cancelled in rows:
            conn.execute(
                "INSERT INTO transcript_requests (request_id, request_date, on_list, "
                "first_seen_at, last_seen_at, left_at, cancelled_at, student_last_name) "
                "SELECT ?1, at, ?2, at, at, CASE WHEN ?2 = 0 THEN at END, ?3, 'Gonçalves' "
                "FROM (SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ?4) AS at)",
                (request_id, on_list, cancelled, age),  # ?4: the age
            )
        conn.execute(
            "INSERT INTO transcripts_received (transcript_id, request_date, on_list, "
            "first_seen_at, last_seen_at, award_count, course_count) VALUES "
            "('ABCD-ef01', '2026-01-02T00:00:00Z', 1, '2026-01-02T00:00:00Z', "
            "'2026-01-02T00:00:00Z', 2, 10), ('t-ok', '2026-01-03T00:00:00Z', 1, "
            "'2026-01-03T00:00:00Z', '2026-01-03T00:00:00Z', 1, 4)"
        )
        conn.execute(
            "INSERT INTO outbox (id, operation, request_id, state, payload_sha256, created_at, "
            "updated_at, status) VALUES (1, 'send_acknowledgment', 'abcdef01', 'sent', 'x', "
            "'2026-01-04T00:00:00Z', '2026-01-04T00:00:01Z', 200), (2, "
            "'send_acknowledgment', 't-ok', 'sent', 'y', '2026-01-05T00:00:00Z', "
            "'2026-01-05T00:00:01Z', 200)"
        )
        conn.execute(
            "INSERT INTO acknowledgments (direction, request_id, outbox_id, recorded_at, "
            "academic_award_total, course_total) VALUES "
            "('sent', 'ABCD-ef01', 1, '2026-01-04T00:00:02Z', 2, 9), "
            "('sent', 't-ok', 2, '2026-01-05T00:00:01Z', 1, 4)"
        )
    return path


def run(path: Path, name: str, **params: str) -> list[sqlite3.Row]:
    """A canned query, read-only, as Datasette runs it (a missing parameter is '')."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        conn.row_factory = sqlite3.Row
        sql = query_sql(name)
        wanted = {p: params.get(p, "") for p in ("sla_days", "request_id") if f":{p}" in sql}
        return conn.execute(sql, wanted).fetchall()


def test_every_canned_query_runs_on_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    Store(path).close()
    for name in load()["queries"]:
        assert run(path, name) == [], name


def test_overdue_requests_are_open_ones_older_than_the_sla(store_db: Path) -> None:
    assert [r["request_id"] for r in run(store_db, "overdue_requests")] == ["req-old"]
    both = run(store_db, "overdue_requests", sla_days="0.5")
    assert [r["request_id"] for r in both] == ["req-old", "req-new"]
    assert both[0]["age_days"] == pytest.approx(9, abs=0.1)


def test_transcripts_awaiting_acknowledgment_and_mismatches(store_db: Path) -> None:
    # acknowledgment 1 names 'abcdef01' in the outbox: the view matches ids exactly, so the
    # dashed transcript still awaits one; t-ok's was sent after it arrived
    awaiting = run(store_db, "transcripts_awaiting_acknowledgment")
    assert [r["transcript_id"] for r in awaiting] == ["ABCD-ef01"]
    mismatches = run(store_db, "acknowledgment_mismatches")
    assert [dict(r) for r in mismatches] == [
        {
            "direction": "sent", "request_id": "ABCD-ef01", "document_id": None,
            "recorded_at": "2026-01-04T00:00:02Z", "transcript_awards": 2,
            "academic_award_total": 2, "transcript_courses": 10, "course_total": 9,
        }
    ]  # fmt: skip


def test_a_request_story_ignores_case_and_dashes_and_is_in_time_order(store_db: Path) -> None:
    story = run(store_db, "request_story", request_id=" abcd-EF01 ")
    assert [(r["kind"], r["what"]) for r in story] == [
        (
            "transcript_received",  # found by the API's request_id: its table's transcript_id
            "transcript received (transcript_id ABCD-ef01): version ? of ?, 2 awards, 10 courses",
        ),
        ("outbox", "send_acknowledgment: recorded"),
        ("outbox", "send_acknowledgment: sent (200)"),
        (
            "acknowledgment",
            "acknowledgment sent: 2 awards, 9 courses (from us, for their transcript)",
        ),
    ]
    assert [r["at"] for r in story] == sorted(r["at"] for r in story)
    assert run(store_db, "request_story", request_id="nobody") == []


def test_browse_without_datasette_says_how_to_install_it(
    store_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "datasette", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"Datasette is not installed") as caught:
        browse(store_db, open_browser=False)
    assert INSTALL in str(caught.value)
    result = CliRunner().invoke(app, ["browse", "--db", str(store_db), "--no-open"])
    assert result.exit_code == 2
    assert "workbench[browse]" in result.output


def test_browse_refuses_a_missing_database_and_a_bad_port(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    result = CliRunner().invoke(app, ["browse", "--db", str(missing), "--no-open"])
    assert result.exit_code == 2
    assert f"There is no database at {missing}" in result.output
    assert not missing.exists()
    result = CliRunner().invoke(app, ["browse", "--db", str(missing), "--port", "70000"])
    assert result.exit_code == 2
    assert "--port" in result.output and "65535" in result.output
