"""Schema v2 -> v3 (and on to the current version) in place: each stored document becomes
version 1, nothing is lost."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd

from workbench.store import Store
from workbench.store.schema import SCHEMA_VERSION

V2_SCHEMA = Path(__file__).parent / "data" / "schema_v2.sql"  # frozen before issue #11
REQUEST_XML = "<TranscriptRequest>R</TranscriptRequest>"
TRANSCRIPT_XML = '<CollegeTranscript a="&amp;">T</CollegeTranscript>'
ESCAPED = TRANSCRIPT_XML.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
SEEN = "2026-03-02T09:00:00.000000Z"


def v2_database(path: Path) -> None:
    """A v2 store as the workbench before issue #11 left it: one request whose XML is in its
    detail call's body, one transcript holding its XML (escaped) itself, one listed only."""
    conn = sqlite3.connect(path)
    conn.executescript(V2_SCHEMA.read_text())
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)",
        [("schema_version", "2"), ("created_at", SEEN), ("created_by", "0.9.0")],
    )
    conn.execute(
        "INSERT INTO calls (id, operation, started_at, status, response_body) "
        "VALUES (7, 'supplier.pull_detail', ?, 200, ?)",
        (SEEN, json.dumps([{"RequestID": "R-1", "PESCXML": REQUEST_XML}])),
    )
    conn.execute(
        "INSERT INTO transcript_requests (request_id, request_date, on_list, first_seen_at, "
        "last_seen_at, detail_fetched_at, detail_call_id, document_id, transmission_type, "
        "request_tracking_id, created_at, student_last_name) "
        "VALUES ('R-1', ?, 1, ?, ?, ?, 7, 'DOC-1', 'Cancellation', 'C1', '2026-03-01', 'Lee')",
        (SEEN, SEEN, SEEN, SEEN),
    )
    conn.execute(
        "INSERT INTO transcripts_received (transcript_id, request_date, on_list, first_seen_at, "
        "last_seen_at, detail_fetched_at, pescxml, document_id, transmission_type) "
        "VALUES ('T-1', ?, 1, ?, ?, ?, ?, 'CT-1', 'Original')",
        (SEEN, SEEN, SEEN, SEEN, ESCAPED),
    )
    conn.execute(
        "INSERT INTO transcripts_received (transcript_id, request_date, on_list, first_seen_at, "
        "last_seen_at) VALUES ('T-2', ?, 1, ?, ?)",
        (SEEN, SEEN, SEEN),
    )
    conn.commit()
    conn.close()


def _rows(path: Path, table: str) -> list[dict]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1")]  # noqa: S608
    conn.close()
    return rows


def test_a_v2_store_is_migrated_in_place_with_its_documents_as_version_1(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    v2_database(path)
    before = {t: _rows(path, t) for t in ("transcript_requests", "transcripts_received", "calls")}

    with Store(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        request = store.versions("R-1")
        assert request["version"].tolist() == [1]
        assert request["document_id"].tolist() == ["DOC-1"]
        assert request["call_id"].tolist() == [7]
        assert request["first_seen_at"].tolist() == [pd.Timestamp(SEEN)]
        assert store.document("R-1") == REQUEST_XML
        assert store.document("T-1", version=1) == TRANSCRIPT_XML  # unescaped once
        assert store.versions("T-2").empty
        requests = store.table("transcript_requests").set_index("request_id")
        assert requests.loc["R-1", "cancelled_at"] == pd.Timestamp(SEEN)
        assert store.table("open_requests").empty  # a cancelled request is closed
        received = store.table("transcripts_received").set_index("transcript_id")
        assert received.loc["T-1", "current_version"] == 1
        assert received.loc["T-1", "version_count"] == 1
        assert pd.isna(received.loc["T-2", "current_version"])

    for table, rows in before.items():  # nothing lost: every column kept keeps its value
        after = _rows(path, table)  # (v4 moved the inline XML to documents: read above)
        kept = [k for k in rows[0] if k in after[0]]
        assert [{k: r[k] for k in kept} for r in after] == [{k: r[k] for k in kept} for r in rows]
