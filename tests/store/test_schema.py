"""The schema: declared keys, versions, in-place migration of an old database, refusals."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from sqlite_utils.cli import cli

from workbench.errors import StoreError
from workbench.store import SCHEMA_VERSION, Store

# The first schema the store shipped with (version 1), frozen here as it was: the migration
# test builds a database from it, so this text must never follow later changes.
V1_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, profile TEXT, started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'ok', 'partial', 'failed')),
  summary TEXT, workbench_version TEXT, pid INTEGER, host TEXT
);
CREATE INDEX runs_started_at ON runs(started_at);
CREATE TABLE calls (
  id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id), request_id TEXT, interface TEXT,
  operation TEXT, method TEXT, url TEXT, attempt INTEGER, started_at TEXT NOT NULL,
  duration_s REAL, status INTEGER, error TEXT, request_headers TEXT, request_body TEXT,
  response_headers TEXT, response_body TEXT
);
CREATE INDEX calls_run ON calls(run_id);
CREATE INDEX calls_request ON calls(request_id);
CREATE INDEX calls_operation ON calls(operation, started_at);
CREATE TABLE snapshots (
  id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id), call_id INTEGER REFERENCES calls(id),
  list_name TEXT NOT NULL, taken_at TEXT NOT NULL, key TEXT, item_count INTEGER NOT NULL
);
CREATE INDEX snapshots_list ON snapshots(list_name, taken_at);
CREATE INDEX snapshots_run ON snapshots(run_id);
CREATE TABLE snapshot_items (
  snapshot_id INTEGER NOT NULL REFERENCES snapshots(id), position INTEGER NOT NULL,
  item_key TEXT NOT NULL, item_json TEXT NOT NULL, PRIMARY KEY (snapshot_id, position)
);
CREATE INDEX snapshot_items_key ON snapshot_items(item_key, snapshot_id);
CREATE TABLE transcript_requests (
  request_id TEXT PRIMARY KEY, request_date TEXT, first_seen_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL, left_at TEXT, detail_fetched_at TEXT,
  detail_call_id INTEGER REFERENCES calls(id), pescxml TEXT, pesc_json TEXT,
  message_type TEXT, version TEXT, document_id TEXT, created_at TEXT, request_tracking_id TEXT,
  student_first_name TEXT, student_last_name TEXT, student_birth_date TEXT
);
CREATE TABLE transcripts_received (
  transcript_id TEXT PRIMARY KEY, request_date TEXT, first_seen_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL, left_at TEXT, detail_fetched_at TEXT,
  detail_call_id INTEGER REFERENCES calls(id), pescxml TEXT, pesc_json TEXT,
  message_type TEXT, version TEXT, document_id TEXT, created_at TEXT, request_tracking_id TEXT,
  student_first_name TEXT, student_last_name TEXT, student_birth_date TEXT
);
CREATE TABLE events (
  source TEXT NOT NULL, event_key TEXT NOT NULL, event_id TEXT, event_type TEXT,
  occurred_at TEXT, content_sha256 TEXT NOT NULL, raw_json TEXT NOT NULL,
  first_seen_at TEXT NOT NULL, last_seen_at TEXT NOT NULL, PRIMARY KEY (source, event_key)
);
CREATE TABLE outbox (
  id INTEGER PRIMARY KEY,
  operation TEXT NOT NULL
    CHECK (operation IN ('send_response', 'send_transcript', 'send_acknowledgment')),
  request_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'failed', 'uncertain')),
  forced INTEGER NOT NULL DEFAULT 0, payload TEXT, payload_sha256 TEXT NOT NULL,
  payload_flat TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, status INTEGER,
  response_body TEXT, error TEXT, call_id INTEGER REFERENCES calls(id),
  run_id INTEGER REFERENCES runs(id)
);
CREATE INDEX outbox_request ON outbox(request_id, operation);
INSERT INTO meta VALUES ('schema_version', '1');
"""
V1_ROWS = """
INSERT INTO runs (id, kind, profile, started_at, finished_at, status, summary)
  VALUES (1, 'pull', 'sandbox', '2026-01-05T10:00:00.000000Z', '2026-01-05T10:01:00.000000Z',
          'ok', '{"new": 2}');
INSERT INTO calls (id, run_id, request_id, operation, method, url, started_at, status,
                   response_body)
  VALUES (1, 1, 'R-1', 'supplier.request', 'GET', 'http://h/api/transcriptrequests/R-1',
          '2026-01-05T10:00:01.000000Z', 200, '[{"PESCXML": "<TR/>"}]');
INSERT INTO snapshots (id, run_id, list_name, taken_at, key, item_count)
  VALUES (1, 1, 'supplier_requests', '2026-01-05T10:00:00.000000Z', 'RequestID', 2);
INSERT INTO snapshot_items VALUES (1, 0, 'R-1', '{"RequestID": "R-1"}'),
                                  (1, 1, 'R-2', '{"RequestID": "R-2"}');
INSERT INTO transcript_requests (request_id, request_date, first_seen_at, last_seen_at,
  left_at, detail_fetched_at, detail_call_id, pescxml, student_last_name)
  VALUES ('R-1', '2026-01-04T08:00:00.000000Z', '2026-01-05T10:00:00.000000Z',
          '2026-01-05T10:00:00.000000Z', NULL, '2026-01-05T10:00:01.000000Z', 1, '<TR/>', 'Li'),
         ('R-2', '2026-01-04T09:00:00.000000Z', '2026-01-05T10:00:00.000000Z',
          '2026-01-05T10:00:00.000000Z', '2026-01-05T10:30:00.000000Z', NULL, NULL, NULL, NULL);
INSERT INTO events VALUES ('placement', 'E1', 'E1', 'offer', NULL, 'abc', '{"eventId": "E1"}',
                           '2026-01-05T10:00:00.000000Z', '2026-01-05T10:00:00.000000Z');
INSERT INTO outbox (id, operation, request_id, state, payload, payload_sha256, created_at,
                    updated_at)
  VALUES (1, 'send_response', 'R-2', 'sent', '<TResp/>', 'f00d', '2026-01-05T10:20:00.000000Z',
          '2026-01-05T10:20:01.000000Z');
"""


def shape(path: Path) -> dict[str, object]:
    """Everything about a schema that matters, independent of column order."""
    conn = sqlite3.connect(path)
    try:
        names = conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        tables = [n for t, n in names if t == "table"]
        return {
            "objects": names,
            "columns": {
                t: sorted(
                    (r[1], r[2], r[3], r[4], r[5]) for r in conn.execute(f"PRAGMA table_info({t})")
                )
                for t in tables
            },
            "foreign_keys": {
                t: sorted(r[2:5] for r in conn.execute(f"PRAGMA foreign_key_list({t})"))
                for t in tables
            },
            "indexes": {
                t: sorted((r[1], r[2]) for r in conn.execute(f"PRAGMA index_list({t})"))
                for t in tables
            },
        }
    finally:
        conn.close()


def make_v1(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(V1_DDL + V1_ROWS)
    conn.close()


def test_a_fresh_store_has_every_table_view_key_and_pragma(store: Store) -> None:
    db = store.db
    assert store.schema_version == SCHEMA_VERSION
    expected = {
        "meta", "runs", "calls", "snapshots", "snapshot_items", "transcript_requests",
        "recipients", "transcripts_received", "courses", "awards", "document_records",
        "responses", "acknowledgments", "events", "outbox", "detail_failures", "departures",
        "locks", "documents", "transcripts_sent",
    }  # fmt: skip
    assert set(db.table_names()) == expected
    assert {
        "open_requests", "transcripts_awaiting_ack", "outbox_unresolved", "ack_totals_check",
        "latest_snapshots", "transcripts_received_by_request_id",
    } <= set(db.view_names())  # fmt: skip
    assert db["transcript_requests"].pks == ["request_id"]
    assert db["snapshot_items"].pks == ["snapshot_id", "position"]
    assert db["events"].pks == ["source", "event_key"]
    assert {(fk.column, fk.other_table) for fk in db["calls"].foreign_keys} == {("run_id", "runs")}
    assert ("snapshot_id", "snapshots") in {
        (fk.column, fk.other_table) for fk in db["snapshot_items"].foreign_keys
    }
    assert ("transcript_id", "transcripts_received") in {
        (fk.column, fk.other_table) for fk in db["courses"].foreign_keys
    }
    assert db.journal_mode == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_reopening_is_cheap_and_changes_nothing(db_path: Path) -> None:
    Store(db_path).close()
    before = shape(db_path)
    with Store(db_path) as again:
        assert again.schema_version == SCHEMA_VERSION
    assert shape(db_path) == before


def test_an_old_database_is_migrated_in_place_when_opened(tmp_path: Path) -> None:
    old, fresh = tmp_path / "old.db", tmp_path / "fresh.db"
    make_v1(old)
    with Store(old) as store:
        assert store.schema_version == SCHEMA_VERSION
        meta = dict(store.db.execute("SELECT key, value FROM meta").fetchall())
        assert meta["schema_version"] == str(SCHEMA_VERSION) and meta["migrated_by"]
        # Every row is intact ...
        assert store.table("runs")["summary"].tolist() == ['{"new": 2}']
        assert store.table("calls")["response_body"].tolist() == ['[{"PESCXML": "<TR/>"}]']
        assert store.table("snapshot_items")["item_key"].tolist() == ["R-1", "R-2"]
        requests = store.table("transcript_requests").set_index("request_id")
        assert requests.loc["R-1", "student_last_name"] == "Li"
        assert store.document("R-1") == "<TR/>"  # moved to documents, as version 1
        # ... the new columns are filled where the old data says so ...
        assert bool(requests.loc["R-1", "on_list"]) and not requests.loc["R-2", "on_list"]
        assert store.table("outbox")["state"].tolist() == ["sent"]
        # ... and the new tables and views work on the old data.
        assert store.table("open_requests")["request_id"].tolist() == ["R-1"]
        assert store.missing_details("supplier_requests", ["R-1", "R-2"]) == ["R-2"]
        left = store.timeline("R-2").query("kind == 'left'")  # its departure, as a departure
        assert left["at"].tolist() == [pd.Timestamp("2026-01-05T10:30Z")]
        diff = store.record_snapshot(None, "supplier_requests", [{"RequestID": "R-3"}])
        assert diff.vanished == ("R-1", "R-2") and diff.left == {"R-1": "elsewhere"}
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    Store(fresh).close()
    migrated, created = shape(old), shape(fresh)
    assert migrated["objects"] == created["objects"]
    assert migrated["columns"] == created["columns"]
    assert migrated["foreign_keys"] == created["foreign_keys"]
    assert migrated["indexes"] == created["indexes"]


def test_a_failed_migration_leaves_the_old_version(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    make_v1(old)
    conn = sqlite3.connect(old)
    conn.execute("CREATE TABLE recipients (x)")  # a clash the migration will hit: a row
    conn.execute("INSERT INTO recipients VALUES (1)")  # refuses a NOT NULL column without default
    conn.commit()
    conn.close()
    with pytest.raises(StoreError):
        Store(old)
    conn = sqlite3.connect(old)
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    assert "on_list" not in {r[1] for r in conn.execute("PRAGMA table_info(transcript_requests)")}
    conn.close()


def test_a_newer_database_is_refused_with_advice(db_path: Path) -> None:
    Store(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"version 99.*Upgrade workbench"):
        Store(db_path)


def test_a_newer_database_opened_read_only_says_to_upgrade_not_to_pull(db_path: Path) -> None:
    # A report or bundle opens the store read-only; `workbench pull` would refuse it too.
    Store(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"version 99.*Upgrade workbench") as caught:
        Store(db_path, read_only=True)
    assert "workbench pull" not in str(caught.value)


def test_a_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE mine (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a workbench store"):
        Store(path)


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database" * 100)
    with pytest.raises(StoreError, match="not a usable workbench database"):
        Store(path)


def test_the_sqlite_utils_cli_reads_the_database(store: Store, db_path: Path) -> None:
    store.record_snapshot(store.begin_run(), "supplier_requests", [{"RequestID": "A"}])
    runner = CliRunner()
    tables = runner.invoke(cli, ["tables", str(db_path), "--counts"])
    assert tables.exit_code == 0, tables.output
    counts = {row["table"]: row["count"] for row in json.loads(tables.output)}
    assert counts["snapshot_items"] == 1 and counts["transcript_requests"] == 1
    views = runner.invoke(cli, ["views", str(db_path)])
    assert views.exit_code == 0 and "open_requests" in views.output
    rows = runner.invoke(cli, ["rows", str(db_path), "open_requests"])
    assert json.loads(rows.output)[0]["request_id"] == "A"
