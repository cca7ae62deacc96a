"""The store's tables, views, and how a value is written: times as fixed-width UTC text (text
order is time order), JSON canonical (sorted keys); ``metadata.json`` says what each holds."""

# ruff: noqa: S608  (the SQL is put together from our own constants, never from data)

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from workbench._version import __version__
from workbench.errors import StoreError
from workbench.http.events import event_time

SCHEMA_VERSION = 7

# PESC fields kept as columns (TEXT unless in INTEGER_FIELDS): an entity's are
# workbench.pesc.fields.KEYS of its kind, a sent document's these.
RESPONSE_FIELDS = (
    "document_id", "created_at", "request_tracking_id", "response_status", "hold_reason",
    "planned_release_date", "student_first_name", "student_last_name", "note",
)  # fmt: skip
TRANSCRIPT_SENT_FIELDS = (
    "document_id", "created_at", "transmission_type", "request_tracking_id",
    "student_first_name", "student_last_name", "academic_record_count", "session_count",
    "award_count", "course_count", "note",
)  # fmt: skip
ACKNOWLEDGMENT_FIELDS = (
    "document_id", "created_at", "request_tracking_id", "academic_award_total", "course_total",
    "student_first_name", "student_last_name", "note",
)  # fmt: skip
INTEGER_FIELDS = frozenset((
    "request_count", "recipient_count", "release_authorized", "academic_record_count",
    "session_count", "award_count", "course_count", "academic_award_total", "course_total",
))  # fmt: skip
# Child record tables, name -> (parent table, its id column): a column per field, added when seen.
CHILD_TABLES = {
    "recipients": ("transcript_requests", "request_id"),
    "courses": ("transcripts_received", "transcript_id"),
    "awards": ("transcripts_received", "transcript_id"),
}


def _columns(fields: tuple[str, ...]) -> str:
    return ", ".join(f"{f} {'INTEGER' if f in INTEGER_FIELDS else 'TEXT'}" for f in fields)


def _entity(table: str, id_column: str, fields: tuple[str, ...]) -> str:
    return f"""
CREATE TABLE {table} (
  {id_column} TEXT PRIMARY KEY, request_date TEXT, on_list INTEGER NOT NULL DEFAULT 0,
  first_seen_at TEXT NOT NULL, last_seen_at TEXT NOT NULL, left_at TEXT, left_reason TEXT,
  detail_fetched_at TEXT, detail_call_id INTEGER REFERENCES calls(id), detail_failed_at TEXT,
  detail_error TEXT, parse_error TEXT, current_version INTEGER, version_count INTEGER,
  cancelled_at TEXT, detail_request_date TEXT, {_columns(fields)}
);
CREATE INDEX {table}_on_list ON {table}(on_list, request_date);
CREATE INDEX {table}_tracking ON {table}(request_tracking_id);
"""


def _sent(table: str, fields: tuple[str, ...]) -> str:
    return f"""
CREATE TABLE {table} (
  id INTEGER PRIMARY KEY, outbox_id INTEGER NOT NULL UNIQUE REFERENCES outbox(id),
  request_id TEXT NOT NULL, sent_at TEXT NOT NULL, inferred INTEGER NOT NULL DEFAULT 0,
  pescxml TEXT, pesc_json TEXT, {_columns(fields)}
);
CREATE INDEX {table}_request ON {table}(request_id);
"""


TABLES = (
    """
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
  list_name TEXT NOT NULL, taken_at TEXT NOT NULL, key TEXT, item_count INTEGER NOT NULL,
  previous_id INTEGER REFERENCES snapshots(id), appeared INTEGER, vanished INTEGER,
  changed INTEGER
);
CREATE INDEX snapshots_list ON snapshots(list_name, taken_at);
CREATE INDEX snapshots_run ON snapshots(run_id);
CREATE TABLE snapshot_items (
  snapshot_id INTEGER NOT NULL REFERENCES snapshots(id), position INTEGER NOT NULL,
  item_key TEXT NOT NULL, item_json TEXT NOT NULL, PRIMARY KEY (snapshot_id, position)
);
CREATE INDEX snapshot_items_key ON snapshot_items(item_key, snapshot_id);
"""
    + """
CREATE TABLE documents (
  id INTEGER PRIMARY KEY, entity TEXT NOT NULL, item_id TEXT NOT NULL, version INTEGER NOT NULL,
  document_id TEXT, transmission_type TEXT, request_tracking_id TEXT, request_date TEXT,
  created_at TEXT, first_seen_at TEXT NOT NULL, call_id INTEGER REFERENCES calls(id),
  content_sha256 TEXT NOT NULL, pescxml TEXT, parse_error TEXT, validation TEXT, pesc_json TEXT,
  detail_json TEXT, UNIQUE (entity, item_id, version), UNIQUE (entity, item_id, content_sha256)
);
"""
    + "".join(
        f"""
CREATE TABLE {name} (
  {id_column} TEXT NOT NULL REFERENCES {parent}({id_column}) ON DELETE CASCADE,
  position INTEGER NOT NULL, extra_json TEXT, PRIMARY KEY ({id_column}, position)
);
"""
        for name, (parent, id_column) in CHILD_TABLES.items()
    )
    + """
CREATE TABLE document_records (
  entity TEXT NOT NULL, parent_id TEXT NOT NULL, record_type TEXT NOT NULL,
  position INTEGER NOT NULL, record_json TEXT NOT NULL,
  PRIMARY KEY (entity, parent_id, record_type, position)
);
CREATE TABLE events (
  source TEXT NOT NULL, event_key TEXT NOT NULL, event_id TEXT, event_type TEXT,
  occurred_at TEXT, time_is_first_seen INTEGER NOT NULL DEFAULT 0, content_sha256 TEXT NOT NULL,
  raw_json TEXT NOT NULL, first_seen_at TEXT NOT NULL, last_seen_at TEXT NOT NULL,
  on_list INTEGER NOT NULL DEFAULT 0, left_at TEXT, left_reason TEXT,
  PRIMARY KEY (source, event_key)
);
CREATE INDEX events_type ON events(source, event_type, occurred_at);
CREATE TABLE outbox (
  id INTEGER PRIMARY KEY,
  operation TEXT NOT NULL
    CHECK (operation IN ('send_response', 'send_transcript', 'send_acknowledgment')),
  request_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'failed', 'uncertain')),
  forced INTEGER NOT NULL DEFAULT 0, payload TEXT, payload_sha256 TEXT NOT NULL,
  payload_flat TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, status INTEGER,
  response_body TEXT, error TEXT, call_id INTEGER REFERENCES calls(id),
  run_id INTEGER REFERENCES runs(id), pid INTEGER, host TEXT, resolution TEXT, resolved_at TEXT
);
CREATE INDEX outbox_request ON outbox(request_id, operation);
CREATE INDEX outbox_state ON outbox(state);
"""
    + _sent("responses", RESPONSE_FIELDS)
    + f"""
CREATE TABLE acknowledgments (
  id INTEGER PRIMARY KEY, direction TEXT NOT NULL CHECK (direction IN ('received', 'sent')),
  request_id TEXT NOT NULL, outbox_id INTEGER REFERENCES outbox(id),
  call_id INTEGER REFERENCES calls(id), recorded_at TEXT NOT NULL,
  inferred INTEGER NOT NULL DEFAULT 0, pescxml TEXT, pesc_json TEXT,
  {_columns(ACKNOWLEDGMENT_FIELDS)}
);
CREATE UNIQUE INDEX acknowledgments_outbox ON acknowledgments(outbox_id, direction);
CREATE INDEX acknowledgments_request ON acknowledgments(request_id);
"""
    + _sent("transcripts_sent", TRANSCRIPT_SENT_FIELDS)
    + """
CREATE TABLE detail_failures (
  id INTEGER PRIMARY KEY, list_name TEXT NOT NULL, item_id TEXT NOT NULL,
  run_id INTEGER REFERENCES runs(id), failed_at TEXT NOT NULL, error TEXT
);
CREATE INDEX detail_failures_item ON detail_failures(list_name, item_id);
CREATE TABLE departures (
  id INTEGER PRIMARY KEY, list_name TEXT NOT NULL, item_id TEXT NOT NULL,
  left_at TEXT NOT NULL, left_reason TEXT NOT NULL, snapshot_id INTEGER REFERENCES snapshots(id)
);
CREATE INDEX departures_item ON departures(item_id);
CREATE INDEX departures_list ON departures(list_name, left_at);
CREATE TABLE locks (name TEXT PRIMARY KEY, pid INTEGER, host TEXT, since TEXT, run_id INTEGER);
"""
)

# A view ages an item from a plausible date (reconcile.inputs.window), else its first sighting.
PLAUSIBLE_FROM = "1990-01-01"
PLAUSIBLE_AHEAD_DAYS = 1


def _age_days(date: str, first_seen: str) -> str:
    return (
        f"round(julianday('now') - julianday(CASE WHEN {date} >= '{PLAUSIBLE_FROM}' AND "
        f"julianday({date}) <= julianday('now', '+{PLAUSIBLE_AHEAD_DAYS} day') THEN {date} "
        f"ELSE {first_seen} END), 1)"
    )


# workbench.reconcile's supplier lifecycle in SQL, for a request ``r``.
_NOT_CANCELLED = "r.cancelled_at IS NULL AND r.transmission_type IS NOT 'Cancellation'"
_ANSWERED = """(EXISTS (SELECT 1 FROM outbox o WHERE o.request_id = r.request_id
    AND o.operation = 'send_transcript' AND o.state = 'sent')
  OR EXISTS (SELECT 1 FROM outbox o JOIN responses s ON s.outbox_id = o.id
    WHERE o.request_id = r.request_id))"""
_IN_DOUBT = """EXISTS (SELECT 1 FROM outbox o WHERE o.request_id = r.request_id
    AND o.operation IN ('send_response', 'send_transcript')
    AND o.state IN ('pending', 'uncertain')
    AND o.id = (SELECT max(o2.id) FROM outbox o2
      WHERE o2.request_id = o.request_id AND o2.operation = o.operation))"""
_LAST_SEND = """(SELECT o.operation || ': ' || o.state FROM outbox o
    WHERE o.request_id = r.request_id ORDER BY o.id DESC LIMIT 1) AS last_send"""
_ACK_STATE = """(SELECT o.state FROM outbox o WHERE o.request_id = t.transcript_id
    AND o.operation = 'send_acknowledgment' ORDER BY o.id DESC LIMIT 1)"""
_ANSWERED_AT = """(SELECT max(o.updated_at) FROM outbox o WHERE o.request_id = r.request_id
    AND o.operation IN ('send_response', 'send_transcript') AND o.state = 'sent')"""

VIEWS: dict[str, str] = {
    "open_requests": f"""
SELECT r.request_id, r.request_date,
  {_age_days("r.request_date", "r.first_seen_at")} AS age_days,
  r.student_first_name, r.student_last_name, r.student_birth_date, r.student_oen,
  r.student_ocas_application, r.source_org_name, r.transcript_purpose,
  r.detail_fetched_at IS NOT NULL AS has_detail, r.parse_error, r.detail_error,
  r.first_seen_at, r.last_seen_at,
  {_LAST_SEND}
FROM transcript_requests r
WHERE (r.on_list = 1 OR (r.left_at IS NULL AND r.left_reason IS NULL))
  AND {_NOT_CANCELLED} AND NOT {_ANSWERED} AND NOT {_IN_DOUBT}
ORDER BY r.request_date
""",
    "answered_still_listed": f"""
SELECT r.request_id, r.request_date, r.student_first_name, r.student_last_name,
  r.source_org_name, {_ANSWERED_AT} AS answered_at, r.last_seen_at,
  r.last_seen_at > {_ANSWERED_AT} AS listed_since_answer,
  {_LAST_SEND}
FROM transcript_requests r
WHERE r.on_list = 1 AND {_NOT_CANCELLED} AND {_ANSWERED} AND NOT {_IN_DOUBT}
ORDER BY r.request_date
""",
    "transcripts_awaiting_ack": f"""
SELECT t.transcript_id, t.request_date,
  {_age_days("t.request_date", "t.first_seen_at")} AS age_days,
  t.document_id, t.request_tracking_id, t.student_first_name, t.student_last_name,
  t.source_org_name, t.award_count, t.course_count,
  t.detail_fetched_at IS NOT NULL AS has_detail, t.first_seen_at, {_ACK_STATE} AS ack_state
FROM transcripts_received t
WHERE (t.on_list = 1 OR (t.left_at IS NULL AND t.left_reason IS NULL)) AND NOT EXISTS (
  SELECT 1 FROM outbox o WHERE o.request_id = t.transcript_id
    AND o.operation = 'send_acknowledgment' AND o.state IN ('pending', 'sent')
    AND o.created_at >= coalesce((SELECT d.first_seen_at FROM documents d
      WHERE d.entity = 'transcripts_received' AND d.item_id = t.transcript_id
        AND d.version = t.current_version), ''))
  AND coalesce({_ACK_STATE}, '') NOT IN ('pending', 'uncertain')
ORDER BY t.request_date
""",
    "outbox_unresolved": """
SELECT o.id AS outbox_id, o.operation, o.request_id, o.state, o.created_at, o.updated_at,
  round(julianday('now') - julianday(o.created_at), 1) AS age_days,
  o.error, o.pid, o.host, o.run_id, o.forced
FROM outbox o
WHERE o.state IN ('pending', 'uncertain')
ORDER BY o.created_at
""",
    "ack_totals_check": """
SELECT a.direction, a.request_id, a.document_id, a.recorded_at,
  CAST(json_extract(o.payload_flat, '$.award_count') AS INTEGER) AS transcript_awards,
  CAST(json_extract(o.payload_flat, '$.course_count') AS INTEGER) AS transcript_courses,
  a.academic_award_total, a.course_total,
  a.academic_award_total IS CAST(json_extract(o.payload_flat, '$.award_count') AS INTEGER)
    AND a.course_total IS CAST(json_extract(o.payload_flat, '$.course_count') AS INTEGER)
    AS totals_match
FROM acknowledgments a JOIN outbox o ON o.id = a.outbox_id
WHERE a.direction = 'received'
UNION ALL
SELECT a.direction, a.request_id, a.document_id, a.recorded_at,
  t.award_count, t.course_count, a.academic_award_total, a.course_total,
  a.academic_award_total IS t.award_count AND a.course_total IS t.course_count
FROM acknowledgments a LEFT JOIN transcripts_received t ON t.transcript_id = a.request_id
WHERE a.direction = 'sent'
""",
    "latest_snapshots": """
SELECT s.list_name, s.id AS snapshot_id, s.taken_at, s.item_count, s.appeared, s.vanished,
  s.changed, s.run_id, s.call_id
FROM snapshots s
WHERE s.id = (SELECT s2.id FROM snapshots s2 WHERE s2.list_name = s.list_name
  ORDER BY s2.taken_at DESC, s2.id DESC LIMIT 1)
ORDER BY s.list_name
""",
    "transcripts_received_by_request_id": """
SELECT t.transcript_id AS request_id, t.*
FROM transcripts_received t
""",
}


def create_views(conn: sqlite3.Connection) -> None:
    for name, sql in VIEWS.items():
        conn.execute(f"DROP VIEW IF EXISTS {name}")
        conn.execute(f"CREATE VIEW {name} AS {sql}")


def fresh() -> sqlite3.Connection:
    """An empty store of the current schema, in memory."""
    from workbench.pesc.fields import KEYS  # lxml: loaded only to create or migrate a store

    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(
        TABLES
        + _entity("transcript_requests", "request_id", KEYS["request"])
        + _entity("transcripts_received", "transcript_id", KEYS["transcript"])
    )
    create_views(conn)
    return conn


def now_text() -> str:
    return utc_text(datetime.now(UTC))  # type: ignore[return-value]


def utc_text(when: datetime | date | str | None) -> str | None:
    """A time as the store writes it (naive: UTC).

    >>> utc_text("2026-03-02T09:00:00.000Z")
    '2026-03-02T09:00:00.000000Z'
    """
    if when is None:
        return None
    if isinstance(when, str):
        try:
            when = datetime.fromisoformat(when.strip())
        except ValueError:
            raise StoreError(
                f"{when!r} is not an ISO 8601 time (e.g. 2026-03-02T09:00Z)."
            ) from None
    elif not isinstance(when, datetime):  # a date: its midnight
        when = datetime(when.year, when.month, when.day)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def partner_time(value: Any) -> str | None:
    """A partner's time (:func:`.events.event_time`) as the store writes it, else as written."""
    if value is None or value == "":
        return None
    return utc_text(value if isinstance(value, datetime) else event_time(value)) or str(value)


def dumps(value: Any) -> str:
    """Canonical JSON: sorted keys, UTF-8 kept, anything unknown as its ``str``."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def json_object(value: Any) -> dict[str, Any]:
    """A dict as it is, a JSON object as text parsed; ``{}`` for anything else (missing, not
    JSON, not an object)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


def scalar(value: Any) -> Any:
    """A value SQLite can hold: bools as 0/1, containers as JSON, the rest as is or as text."""
    if value is None or isinstance(value, str | int | float):
        return int(value) if isinstance(value, bool) else value
    if isinstance(value, datetime | date):
        return value.isoformat()
    return dumps(value) if isinstance(value, Mapping | list | tuple) else str(value)


def run_row(kind: str, profile: str | None, **values: Any) -> dict[str, Any]:
    """A ``runs`` row begun now by this process."""
    return {"kind": kind, "profile": profile, "started_at": now_text(), "status": "running",
            "workbench_version": __version__, "pid": os.getpid(), "host": socket.gethostname(),
            **values}  # fmt: skip


def row_id(value: Any) -> int | None:
    """A row id as a plain ``int`` (numpy's come from DataFrames)."""
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise StoreError(f"{value!r} is not a row id (an integer).") from None
