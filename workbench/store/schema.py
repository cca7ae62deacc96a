"""The store's schema (version :data:`SCHEMA_VERSION`): tables, keys and indexes.

:data:`CURRENT` creates a fresh database; :mod:`workbench.store.migrations` upgrades old ones.
``documents`` keeps every distinct document received for an id (its versions: Original,
Resubmission, Reissue, Cancellation ...) with its XML, flattened JSON, validation and detail
item; the entity rows stay narrow: ids, dates, list bookkeeping and the flattened fields of the
current version.

Times are ISO 8601 UTC text (``2026-03-02T09:00:00.000000Z``); JSON columns hold canonical JSON.
Columns named after PESC fields (``document_id``, ``student_last_name`` ...) come from
``workbench.pesc.flatten``; ``documents.pesc_json`` keeps the whole flattened record, unknown keys
included.
"""

from __future__ import annotations

# v5: events.time_is_first_seen; v6: the views' one meaning of open; v7: the views' ages from
# plausible dates (workbench.store.views)
SCHEMA_VERSION = 7

# PESC fields kept as columns (types: TEXT unless listed in INTEGER_FIELDS).
ENVELOPE_FIELDS = (
    "message_type", "version", "namespace", "document_id", "created_at", "document_type_code",
    "transmission_type", "source_org_id_type", "source_org_id", "source_org_name",
    "destination_org_id_type", "destination_org_id", "destination_org_name", "process_code",
    "official_code", "complete_code", "request_tracking_id",
)  # fmt: skip
STUDENT_FIELDS = (
    "student_school_assigned_id", "student_agency_assigned_id", "student_oen",
    "student_ocas_account", "student_ocas_application", "student_first_name",
    "student_middle_name", "student_last_name", "student_birth_date", "student_birthday",
    "student_gender",
)  # fmt: skip
REQUEST_FIELDS = (
    *ENVELOPE_FIELDS, *STUDENT_FIELDS, "request_created_at", "request_count", "recipient_count",
    "release_authorized", "attendance_school_name", "attendance_school_id_type",
    "attendance_school_id", "hold_type", "transcript_type", "transcript_purpose",
    "delivery_method", "note",
)  # fmt: skip
TRANSCRIPT_FIELDS = (
    *ENVELOPE_FIELDS, *STUDENT_FIELDS, "academic_record_count", "session_count", "award_count",
    "course_count", "school_name", "school_id_type", "school_id", "note",
)  # fmt: skip
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
INTEGER_FIELDS = frozenset(
    {
        "request_count", "recipient_count", "release_authorized", "academic_record_count",
        "session_count", "award_count", "course_count", "academic_award_total", "course_total",
    }
)  # fmt: skip
# Child record tables: name -> (parent table, parent id column).
CHILD_TABLES = {
    "recipients": ("transcript_requests", "request_id"),
    "courses": ("transcripts_received", "transcript_id"),
    "awards": ("transcripts_received", "transcript_id"),
}


def column_type(field: str) -> str:
    return "INTEGER" if field in INTEGER_FIELDS else "TEXT"


def _columns(fields: tuple[str, ...]) -> str:
    return ",\n  ".join(f"{f} {column_type(f)}" for f in fields)


def _entity(table: str, id_column: str, fields: tuple[str, ...]) -> str:
    return f"""
CREATE TABLE {table} (
  {id_column} TEXT PRIMARY KEY,
  request_date TEXT,                 -- RequestDate as listed
  on_list INTEGER NOT NULL DEFAULT 0, -- 1 while the partner's no-response list shows it
  first_seen_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL,
  left_at TEXT,                      -- when it left the list
  left_reason TEXT,                  -- outbox (our send explains it) or elsewhere
  detail_fetched_at TEXT,
  detail_call_id INTEGER REFERENCES calls(id),
  detail_failed_at TEXT,             -- last failed detail fetch (retried by the next pull)
  detail_error TEXT,
  parse_error TEXT,                  -- of the last detail fetched (XML, JSON ...: documents)
  current_version INTEGER,           -- the documents.version these fields are from
  version_count INTEGER,             -- how many distinct documents were received for it
  cancelled_at TEXT,                 -- its current document is a Cancellation: it is closed
  detail_request_date TEXT,          -- RequestDate as listed when its detail was last fetched
  {_columns(fields)}
);
CREATE INDEX {table}_on_list ON {table}(on_list, request_date);
CREATE INDEX {table}_tracking ON {table}(request_tracking_id);
"""


def _child(table: str, parent: str, id_column: str) -> str:
    # Each field of the child records becomes a column the first time it is seen.
    return f"""
CREATE TABLE {table} (
  {id_column} TEXT NOT NULL REFERENCES {parent}({id_column}) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  extra_json TEXT,                   -- JSON of the fields whose names cannot be columns
  PRIMARY KEY ({id_column}, position)
);
"""


CORE = """
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  profile TEXT,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL DEFAULT 'running'
    CHECK (status IN ('running', 'ok', 'partial', 'failed')),
  summary TEXT,
  workbench_version TEXT,
  pid INTEGER,
  host TEXT
);
CREATE INDEX runs_started_at ON runs(started_at);
CREATE TABLE calls (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id),
  request_id TEXT,
  interface TEXT,
  operation TEXT,
  method TEXT,
  url TEXT,
  attempt INTEGER,
  started_at TEXT NOT NULL,
  duration_s REAL,
  status INTEGER,
  error TEXT,
  request_headers TEXT,
  request_body TEXT,
  response_headers TEXT,
  response_body TEXT
);
CREATE INDEX calls_run ON calls(run_id);
CREATE INDEX calls_request ON calls(request_id);
CREATE INDEX calls_operation ON calls(operation, started_at);
CREATE TABLE snapshots (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id),
  call_id INTEGER REFERENCES calls(id),
  list_name TEXT NOT NULL,
  taken_at TEXT NOT NULL,
  key TEXT,
  item_count INTEGER NOT NULL,
  previous_id INTEGER REFERENCES snapshots(id),
  appeared INTEGER,
  vanished INTEGER,
  changed INTEGER
);
CREATE INDEX snapshots_list ON snapshots(list_name, taken_at);
CREATE INDEX snapshots_run ON snapshots(run_id);
CREATE TABLE snapshot_items (
  snapshot_id INTEGER NOT NULL REFERENCES snapshots(id),
  position INTEGER NOT NULL,
  item_key TEXT NOT NULL,
  item_json TEXT NOT NULL,
  PRIMARY KEY (snapshot_id, position)
);
CREATE INDEX snapshot_items_key ON snapshot_items(item_key, snapshot_id);
"""
ENTITIES = _entity("transcript_requests", "request_id", REQUEST_FIELDS) + _entity(
    "transcripts_received", "transcript_id", TRANSCRIPT_FIELDS
)
CHILDREN = (
    "".join(_child(name, *parent) for name, parent in CHILD_TABLES.items())
    + """
CREATE TABLE document_records (       -- child records of other kinds (sessions, notes ...)
  entity TEXT NOT NULL,              -- transcript_requests or transcripts_received
  parent_id TEXT NOT NULL,
  record_type TEXT NOT NULL,
  position INTEGER NOT NULL,
  record_json TEXT NOT NULL,
  PRIMARY KEY (entity, parent_id, record_type, position)
);
"""
)
DOCUMENTS = """
CREATE TABLE documents (              -- every distinct document received for an id
  id INTEGER PRIMARY KEY,
  entity TEXT NOT NULL,              -- transcript_requests or transcripts_received
  item_id TEXT NOT NULL,             -- the API RequestID
  version INTEGER NOT NULL,          -- 1, 2, ... in the order received
  document_id TEXT,                  -- TransmissionData/DocumentID
  transmission_type TEXT,            -- Original, Resubmission, Reissue, Cancellation, ...
  request_tracking_id TEXT,
  request_date TEXT,                 -- RequestDate as listed when it was fetched
  created_at TEXT,                   -- TransmissionData/CreatedDateTime
  first_seen_at TEXT NOT NULL,
  call_id INTEGER REFERENCES calls(id),
  content_sha256 TEXT NOT NULL,      -- of pescxml
  pescxml TEXT,                      -- unescaped once
  parse_error TEXT,
  validation TEXT,                   -- JSON
  pesc_json TEXT,                    -- JSON: every flattened PESC field
  detail_json TEXT,                  -- JSON: the detail item without its PESCXML, as last fetched
  UNIQUE (entity, item_id, version),
  UNIQUE (entity, item_id, content_sha256)
);
"""
EVENTS = """
CREATE TABLE events (
  source TEXT NOT NULL,              -- placement or domestic
  event_key TEXT NOT NULL,           -- the event's id, else sha256 of its content
  event_id TEXT,
  event_type TEXT,
  occurred_at TEXT,                  -- its own time, else when it was first seen (below)
  time_is_first_seen INTEGER NOT NULL DEFAULT 0,  -- 1: it gave no readable time of its own
  content_sha256 TEXT NOT NULL,
  raw_json TEXT NOT NULL,
  first_seen_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL,
  on_list INTEGER NOT NULL DEFAULT 0,
  left_at TEXT,
  left_reason TEXT,
  PRIMARY KEY (source, event_key)
);
CREATE INDEX events_type ON events(source, event_type, occurred_at);
"""
OUTBOX = """
CREATE TABLE outbox (
  id INTEGER PRIMARY KEY,
  operation TEXT NOT NULL
    CHECK (operation IN ('send_response', 'send_transcript', 'send_acknowledgment')),
  request_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'failed', 'uncertain')),
  forced INTEGER NOT NULL DEFAULT 0,
  payload TEXT,
  payload_sha256 TEXT NOT NULL,
  payload_flat TEXT,                 -- JSON: flattened PESC fields of what we send
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  status INTEGER,
  response_body TEXT,
  error TEXT,
  call_id INTEGER REFERENCES calls(id),
  run_id INTEGER REFERENCES runs(id),
  pid INTEGER,
  host TEXT,
  resolution TEXT,                   -- how an uncertain send was settled, and from what
  resolved_at TEXT
);
CREATE INDEX outbox_request ON outbox(request_id, operation);
CREATE INDEX outbox_state ON outbox(state);
"""
SENT = f"""
CREATE TABLE responses (              -- TranscriptResponses we sent (from the outbox)
  id INTEGER PRIMARY KEY,
  outbox_id INTEGER NOT NULL UNIQUE REFERENCES outbox(id),
  request_id TEXT NOT NULL,
  sent_at TEXT NOT NULL,
  inferred INTEGER NOT NULL DEFAULT 0, -- 1: settled from the lists, no answer was seen
  pescxml TEXT,
  pesc_json TEXT,
  {_columns(RESPONSE_FIELDS)}
);
CREATE INDEX responses_request ON responses(request_id);
CREATE TABLE acknowledgments (        -- received back from send_transcript, or sent by us
  id INTEGER PRIMARY KEY,
  direction TEXT NOT NULL CHECK (direction IN ('received', 'sent')),
  request_id TEXT NOT NULL,
  outbox_id INTEGER REFERENCES outbox(id),
  call_id INTEGER REFERENCES calls(id),
  recorded_at TEXT NOT NULL,
  inferred INTEGER NOT NULL DEFAULT 0,
  pescxml TEXT,
  pesc_json TEXT,
  {_columns(ACKNOWLEDGMENT_FIELDS)}
);
CREATE UNIQUE INDEX acknowledgments_outbox ON acknowledgments(outbox_id, direction);
CREATE INDEX acknowledgments_request ON acknowledgments(request_id);
"""
TRANSCRIPTS_SENT = f"""
CREATE TABLE transcripts_sent (       -- CollegeTranscripts we sent (from the outbox)
  id INTEGER PRIMARY KEY,
  outbox_id INTEGER NOT NULL UNIQUE REFERENCES outbox(id),
  request_id TEXT NOT NULL,          -- the request it answers
  sent_at TEXT NOT NULL,
  inferred INTEGER NOT NULL DEFAULT 0, -- 1: settled from the lists, no answer was seen
  pescxml TEXT,
  pesc_json TEXT,
  {_columns(TRANSCRIPT_SENT_FIELDS)}
);
CREATE INDEX transcripts_sent_request ON transcripts_sent(request_id);
"""
OPERATIONS = """
CREATE TABLE detail_failures (
  id INTEGER PRIMARY KEY,
  list_name TEXT NOT NULL,
  item_id TEXT NOT NULL,
  run_id INTEGER REFERENCES runs(id),
  failed_at TEXT NOT NULL,
  error TEXT
);
CREATE INDEX detail_failures_item ON detail_failures(list_name, item_id);
CREATE TABLE departures (             -- every time an item left a list, and why
  id INTEGER PRIMARY KEY,
  list_name TEXT NOT NULL,
  item_id TEXT NOT NULL,
  left_at TEXT NOT NULL,
  left_reason TEXT NOT NULL,         -- outbox (a send of ours explains it) or elsewhere
  snapshot_id INTEGER REFERENCES snapshots(id)
);
CREATE INDEX departures_item ON departures(item_id);
CREATE INDEX departures_list ON departures(list_name, left_at);
CREATE TABLE locks (                  -- who holds the pull lock (the lock itself is a file lock)
  name TEXT PRIMARY KEY,
  pid INTEGER,
  host TEXT,
  since TEXT,
  run_id INTEGER
);
"""
CURRENT = (
    CORE + ENTITIES + DOCUMENTS + CHILDREN + EVENTS + OUTBOX + SENT + TRANSCRIPTS_SENT + OPERATIONS
)


def statements(script: str) -> list[str]:
    """Split a DDL script into statements (our DDL has no ';' inside literals)."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
