"""Schema v3 -> v4 in place: the entity tables' inline texts move to their current documents
row (or to document_records when there is none), nothing is lost, nothing else changes, and
the transcripts we sent get their rows from the outbox."""

from __future__ import annotations

import json
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from workbench.errors import StoreError
from workbench.store import Store
from workbench.store.schema import SCHEMA_VERSION

V3_SCHEMA = Path(__file__).parent / "data" / "schema_v3.sql"  # frozen before issue #14
SEEN = "2026-03-02T09:00:00.000000Z"
LATER = "2026-03-03T09:00:00.000000Z"
MOVED = ("detail_json", "pescxml", "validation", "pesc_json")
VALID = json.dumps({"status": "valid", "errors": []})
XML_2 = "<TranscriptRequest>R v2</TranscriptRequest>"
XML_T = "<CollegeTranscript>T</CollegeTranscript>"
SENT_XML = "<CollegeTranscript>ours</CollegeTranscript>"
SENT_FLAT = json.dumps(
    {"document_id": "OURS-1", "request_tracking_id": "TRK", "student_last_name": "Lee",
     "award_count": 1, "course_count": 4, "transmission_type": "Original"}
)  # fmt: skip


def v3_database(path: Path) -> None:
    """A v3 store as the workbench before issue #14 left it: a request with two versions
    whose current one's texts are inline; a transcript holding its XML inline without a
    version, with courses; a transcript whose detail held no XML; sends of every kind."""
    conn = sqlite3.connect(path)
    conn.executescript(V3_SCHEMA.read_text())
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?)",
        [("schema_version", "3"), ("created_at", SEEN), ("created_by", "0.10.0")],
    )
    conn.execute(
        "INSERT INTO transcript_requests (request_id, request_date, on_list, first_seen_at, "
        "last_seen_at, detail_fetched_at, detail_json, parse_error, validation, pesc_json, "
        "current_version, version_count, document_id, request_tracking_id, student_last_name) "
        "VALUES ('R-1', ?, 1, ?, ?, ?, ?, NULL, ?, ?, 2, 2, 'DOC-2', 'TRK', 'Lee')",
        (SEEN, SEEN, LATER, LATER, '{"RequestID": "R-1", "RequestDate": "x"}', VALID,
         '{"document_id": "DOC-2", "unknown": [1]}'),
    )  # fmt: skip
    conn.executemany(
        "INSERT INTO documents (entity, item_id, version, document_id, first_seen_at, "
        "content_sha256, pescxml, validation, pesc_json) "
        "VALUES ('transcript_requests', 'R-1', ?, ?, ?, ?, ?, ?, ?)",
        [(1, "DOC-1", SEEN, "a1", "<TranscriptRequest>R v1</TranscriptRequest>", VALID,
          '{"document_id": "DOC-1"}'),
         (2, "DOC-2", LATER, "a2", XML_2, None, None)],
    )  # fmt: skip
    conn.execute(
        "INSERT INTO transcripts_received (transcript_id, request_date, on_list, first_seen_at, "
        "last_seen_at, detail_fetched_at, detail_json, pescxml, validation, pesc_json, "
        "transmission_type, document_id, course_count) "
        "VALUES ('T-1', ?, 1, ?, ?, ?, '{\"RequestID\": \"T-1\"}', ?, ?, "
        "'{\"course_count\": 2}', 'Original', 'CT-1', 2)",
        (SEEN, SEEN, SEEN, SEEN, XML_T, VALID),
    )
    conn.executemany(
        "INSERT INTO courses (transcript_id, position, extra_json) VALUES ('T-1', ?, ?)",
        [(0, '{"course_title": "Algebra"}'), (1, '{"course_title": "Poetry"}')],
    )
    conn.execute(
        "INSERT INTO transcripts_received (transcript_id, request_date, on_list, first_seen_at, "
        "last_seen_at, detail_fetched_at, detail_json, parse_error) "
        'VALUES (\'T-2\', ?, 1, ?, ?, ?, \'{"RequestID": "T-2", "Note": "no XML"}\', '
        "'no PESCXML in the answer')",
        (SEEN, SEEN, SEEN, SEEN),
    )
    outbox = [  # id, operation, request_id, state, payload, updated_at, resolved_at
        (1, "send_transcript", "R-1", "sent", SENT_XML, LATER, None),
        (2, "send_transcript", "R-2", "sent", SENT_XML, LATER, LATER),  # inferred from lists
        (3, "send_transcript", "R-3", "failed", SENT_XML, LATER, None),
        (4, "send_response", "R-4", "sent", "<TranscriptResponse/>", LATER, None),
    ]
    conn.executemany(
        "INSERT INTO outbox (id, operation, request_id, state, payload, payload_sha256, "
        "payload_flat, created_at, updated_at, resolved_at) "
        "VALUES (?, ?, ?, ?, ?, 'sha', ?, ?, ?, ?)",
        [(i, op, rid, st, body, SENT_FLAT, SEEN, upd, res)
         for i, op, rid, st, body, upd, res in outbox],
    )  # fmt: skip
    conn.commit()
    conn.close()


def _rows(path: Path, table: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    rows = [dict(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")]  # noqa: S608
    conn.close()
    return rows


def _indexes(path: Path, table: str) -> set[str]:
    conn = sqlite3.connect(path)
    found = {r[1] for r in conn.execute(f"PRAGMA index_list({table})")}
    conn.close()
    return found


def test_a_v3_store_keeps_every_value_and_its_entity_tables_become_narrow(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    v3_database(path)
    tables = ("transcript_requests", "transcripts_received", "courses", "outbox")
    before = {t: _rows(path, t) for t in tables}
    old_documents = _rows(path, "documents")
    indexes = {t: _indexes(path, t) for t in ("transcript_requests", "transcripts_received")}

    with Store(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert store.db.execute("PRAGMA foreign_key_check").fetchall() == []
        requests = store.current_documents(
            "supplier_requests", ("version", "detail_json", "pescxml", "validation", "pesc_json")
        )
        received = store.current_documents(
            "consumer_transcripts", ("version", "detail_json", "pescxml", "validation")
        )
        records = store.table("document_records").set_index(["parent_id", "record_type"])

    # T-1's inline XML had no version: it became its version 1 (below)
    before["transcripts_received"][0].update(current_version=1, version_count=1)
    for table, rows in before.items():  # every other column kept keeps its value
        after = _rows(path, table)
        kept = [k for k in rows[0] if k not in MOVED or table not in tables[:2]]
        assert [{k: r[k] for k in kept} for r in after] == [{k: r[k] for k in kept} for r in rows]
    for table in tables[:2]:  # the texts are gone from the entity rows, the indexes stay
        assert not set(MOVED) & set(_rows(path, table)[0])
        assert indexes[table] <= _indexes(path, table)

    # its inline texts are its current version's (2); version 1 keeps its own.
    r1 = before["transcript_requests"][0]
    assert requests.loc["R-1", "version"] == 2 and requests.loc["R-1", "pescxml"] == XML_2
    for column in ("detail_json", "validation", "pesc_json"):
        assert requests.loc["R-1", column] == r1[column]
    assert _rows(path, "documents")[0] == {**old_documents[0], "detail_json": None}
    # T-1: its inline XML, with no version yet, became its version 1 with the other texts.
    t1 = before["transcripts_received"][0]
    assert received.loc["T-1", "version"] == 1 and received.loc["T-1", "pescxml"] == XML_T
    assert received.loc["T-1", "detail_json"] == t1["detail_json"]
    assert received.loc["T-1", "validation"] == VALID
    assert [r["transcript_id"] for r in _rows(path, "courses")] == ["T-1", "T-1"]
    # T-2: a detail that held no XML keeps its item in document_records.
    assert "T-2" not in received.index
    assert (
        records.loc[("T-2", "detail"), "record_json"]
        == before["transcripts_received"][1]["detail_json"]
    )

    sent = _rows(path, "transcripts_sent")  # the transcripts sent, from the outbox
    assert [(r["outbox_id"], r["request_id"], r["inferred"]) for r in sent] == [
        (1, "R-1", 0),
        (2, "R-2", 1),
    ]
    assert {r["sent_at"] for r in sent} == {LATER}
    assert {
        (r["pescxml"], r["document_id"], r["award_count"], r["course_count"]) for r in sent
    } == {(SENT_XML, "OURS-1", 1, 4)}


def test_a_v3_store_reopened_after_its_migration_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    v3_database(path)
    Store(path).close()
    migrated = {t: _rows(path, t) for t in ("documents", "transcripts_sent", "document_records")}
    with Store(path) as store:
        assert store.schema_version == SCHEMA_VERSION
    assert {t: _rows(path, t) for t in migrated} == migrated


def _version(path: Path) -> str:
    conn = sqlite3.connect(path)
    found = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    conn.close()
    return str(found)


@pytest.mark.parametrize(
    ("kind", "ddl"),
    [
        ("view", "CREATE VIEW my_xml AS SELECT request_id, pescxml FROM transcript_requests"),
        ("index", "CREATE INDEX my_xml ON transcript_requests(pescxml)"),
    ],
)
def test_an_analysts_view_or_index_on_a_moved_column_is_refused_with_advice_and_v3_stays(
    tmp_path: Path, kind: str, ddl: str
) -> None:
    path = tmp_path / "v3.db"
    v3_database(path)
    conn = sqlite3.connect(path)
    conn.execute(ddl)
    conn.execute("CREATE INDEX my_dates ON transcripts_received(request_date, first_seen_at)")
    conn.commit()
    conn.close()
    before = {t: _rows(path, t) for t in ("transcript_requests", "documents", "outbox")}

    with pytest.raises(StoreError) as caught:
        Store(path)
    message = str(caught.value)
    assert "my_xml" in message and "transcript_requests.pescxml" in message
    assert "Drop that view, trigger or index" in message and "left as it was" in message
    assert _version(path) == "3"  # the whole migration rolled back
    assert {t: _rows(path, t) for t in before} == before

    conn = sqlite3.connect(path)
    conn.execute(f"DROP {kind.upper()} my_xml")  # as the message says
    conn.commit()
    conn.close()
    with Store(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert "my_dates" in _indexes(path, "transcripts_received")  # one not in the way stays


def test_a_large_store_migrates_without_holding_its_documents_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    v3_database(path)
    big = "<CollegeTranscript>" + "x" * 1_000_000 + "</CollegeTranscript>"  # 1 MB each
    conn = sqlite3.connect(path)
    conn.executemany(
        "INSERT INTO outbox (operation, request_id, state, payload, payload_sha256, "
        "payload_flat, created_at, updated_at) VALUES ('send_transcript', ?, 'sent', ?, 'sha', "
        "'{}', ?, ?)",
        [(f"BIG-{i}", big, SEEN, LATER) for i in range(40)],
    )
    conn.execute(  # a received transcript whose XML is inline, with no version yet
        "INSERT INTO transcripts_received (transcript_id, first_seen_at, last_seen_at, "
        "detail_fetched_at, pescxml) VALUES ('T-BIG', ?, ?, ?, ?)",
        (SEEN, SEEN, SEEN, big),
    )
    conn.commit()
    conn.close()

    tracemalloc.start()
    try:
        Store(path).close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12_000_000  # the 41 MB of documents went through a few at a time
    with Store(path) as store:
        assert len(store.table("transcripts_sent")) == 42  # 40 + the 2 of v3_database
        assert (
            store.current_documents("consumer_transcripts", ("pescxml",)).loc["T-BIG", "pescxml"]
            == big
        )
