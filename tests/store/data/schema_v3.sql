-- The store's schema version 3 (workbench before issue #14's narrow entity tables), frozen
-- for the migration test.
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

CREATE TABLE transcript_requests (
  request_id TEXT PRIMARY KEY,
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
  detail_json TEXT,                  -- the detail item without its PESCXML
  pescxml TEXT,
  parse_error TEXT,
  validation TEXT,                   -- JSON
  pesc_json TEXT,                    -- JSON: every flattened PESC field
  current_version INTEGER,           -- the documents.version these fields are from
  version_count INTEGER,             -- how many distinct documents were received for it
  cancelled_at TEXT,                 -- its current document is a Cancellation: it is closed
  detail_request_date TEXT,          -- RequestDate as listed when its detail was last fetched
  message_type TEXT,
  version TEXT,
  namespace TEXT,
  document_id TEXT,
  created_at TEXT,
  document_type_code TEXT,
  transmission_type TEXT,
  source_org_id_type TEXT,
  source_org_id TEXT,
  source_org_name TEXT,
  destination_org_id_type TEXT,
  destination_org_id TEXT,
  destination_org_name TEXT,
  process_code TEXT,
  official_code TEXT,
  complete_code TEXT,
  request_tracking_id TEXT,
  student_school_assigned_id TEXT,
  student_agency_assigned_id TEXT,
  student_oen TEXT,
  student_ocas_account TEXT,
  student_ocas_application TEXT,
  student_first_name TEXT,
  student_middle_name TEXT,
  student_last_name TEXT,
  student_birth_date TEXT,
  student_birthday TEXT,
  student_gender TEXT,
  request_created_at TEXT,
  request_count INTEGER,
  recipient_count INTEGER,
  release_authorized INTEGER,
  attendance_school_name TEXT,
  attendance_school_id_type TEXT,
  attendance_school_id TEXT,
  hold_type TEXT,
  transcript_type TEXT,
  transcript_purpose TEXT,
  delivery_method TEXT,
  note TEXT
);
CREATE INDEX transcript_requests_on_list ON transcript_requests(on_list, request_date);
CREATE INDEX transcript_requests_tracking ON transcript_requests(request_tracking_id);

CREATE TABLE transcripts_received (
  transcript_id TEXT PRIMARY KEY,
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
  detail_json TEXT,                  -- the detail item without its PESCXML
  pescxml TEXT,
  parse_error TEXT,
  validation TEXT,                   -- JSON
  pesc_json TEXT,                    -- JSON: every flattened PESC field
  current_version INTEGER,           -- the documents.version these fields are from
  version_count INTEGER,             -- how many distinct documents were received for it
  cancelled_at TEXT,                 -- its current document is a Cancellation: it is closed
  detail_request_date TEXT,          -- RequestDate as listed when its detail was last fetched
  message_type TEXT,
  version TEXT,
  namespace TEXT,
  document_id TEXT,
  created_at TEXT,
  document_type_code TEXT,
  transmission_type TEXT,
  source_org_id_type TEXT,
  source_org_id TEXT,
  source_org_name TEXT,
  destination_org_id_type TEXT,
  destination_org_id TEXT,
  destination_org_name TEXT,
  process_code TEXT,
  official_code TEXT,
  complete_code TEXT,
  request_tracking_id TEXT,
  student_school_assigned_id TEXT,
  student_agency_assigned_id TEXT,
  student_oen TEXT,
  student_ocas_account TEXT,
  student_ocas_application TEXT,
  student_first_name TEXT,
  student_middle_name TEXT,
  student_last_name TEXT,
  student_birth_date TEXT,
  student_birthday TEXT,
  student_gender TEXT,
  academic_record_count INTEGER,
  session_count INTEGER,
  award_count INTEGER,
  course_count INTEGER,
  school_name TEXT,
  school_id_type TEXT,
  school_id TEXT,
  note TEXT
);
CREATE INDEX transcripts_received_on_list ON transcripts_received(on_list, request_date);
CREATE INDEX transcripts_received_tracking ON transcripts_received(request_tracking_id);

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
  UNIQUE (entity, item_id, version),
  UNIQUE (entity, item_id, content_sha256)
);

CREATE TABLE recipients (
  request_id TEXT NOT NULL REFERENCES transcript_requests(request_id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  extra_json TEXT,                   -- JSON of the fields whose names cannot be columns
  PRIMARY KEY (request_id, position)
);

CREATE TABLE courses (
  transcript_id TEXT NOT NULL REFERENCES transcripts_received(transcript_id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  extra_json TEXT,                   -- JSON of the fields whose names cannot be columns
  PRIMARY KEY (transcript_id, position)
);

CREATE TABLE awards (
  transcript_id TEXT NOT NULL REFERENCES transcripts_received(transcript_id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  extra_json TEXT,                   -- JSON of the fields whose names cannot be columns
  PRIMARY KEY (transcript_id, position)
);

CREATE TABLE document_records (       -- child records of other kinds (sessions, notes ...)
  entity TEXT NOT NULL,              -- transcript_requests or transcripts_received
  parent_id TEXT NOT NULL,
  record_type TEXT NOT NULL,
  position INTEGER NOT NULL,
  record_json TEXT NOT NULL,
  PRIMARY KEY (entity, parent_id, record_type, position)
);

CREATE TABLE events (
  source TEXT NOT NULL,              -- placement or domestic
  event_key TEXT NOT NULL,           -- the event's id, else sha256 of its content
  event_id TEXT,
  event_type TEXT,
  occurred_at TEXT,
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

CREATE TABLE responses (              -- TranscriptResponses we sent (from the outbox)
  id INTEGER PRIMARY KEY,
  outbox_id INTEGER NOT NULL UNIQUE REFERENCES outbox(id),
  request_id TEXT NOT NULL,
  sent_at TEXT NOT NULL,
  inferred INTEGER NOT NULL DEFAULT 0, -- 1: settled from the lists, no answer was seen
  pescxml TEXT,
  pesc_json TEXT,
  document_id TEXT,
  created_at TEXT,
  request_tracking_id TEXT,
  response_status TEXT,
  hold_reason TEXT,
  planned_release_date TEXT,
  student_first_name TEXT,
  student_last_name TEXT,
  note TEXT
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
  document_id TEXT,
  created_at TEXT,
  request_tracking_id TEXT,
  academic_award_total INTEGER,
  course_total INTEGER,
  student_first_name TEXT,
  student_last_name TEXT,
  note TEXT
);
CREATE UNIQUE INDEX acknowledgments_outbox ON acknowledgments(outbox_id, direction);
CREATE INDEX acknowledgments_request ON acknowledgments(request_id);

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
CREATE VIEW open_requests AS SELECT r.request_id, r.request_date,
  round(julianday('now') - julianday(r.request_date), 1) AS age_days,
  r.student_first_name, r.student_last_name, r.student_birth_date, r.student_oen,
  r.student_ocas_application, r.source_org_name, r.transcript_purpose,
  r.detail_fetched_at IS NOT NULL AS has_detail, r.parse_error, r.detail_error,
  r.first_seen_at, r.last_seen_at,
  (SELECT o.operation || ': ' || o.state FROM outbox o
    WHERE o.request_id = r.request_id ORDER BY o.id DESC LIMIT 1) AS last_send
FROM transcript_requests r
WHERE r.on_list = 1 AND r.cancelled_at IS NULL
ORDER BY r.request_date;
CREATE VIEW transcripts_awaiting_ack AS SELECT t.transcript_id, t.request_date,
  round(julianday('now') - julianday(t.request_date), 1) AS age_days,
  t.document_id, t.request_tracking_id, t.student_first_name, t.student_last_name,
  t.source_org_name, t.award_count, t.course_count,
  t.detail_fetched_at IS NOT NULL AS has_detail, t.first_seen_at,
  (SELECT o.state FROM outbox o WHERE o.request_id = t.transcript_id
    AND o.operation = 'send_acknowledgment' ORDER BY o.id DESC LIMIT 1) AS ack_state
FROM transcripts_received t
WHERE t.on_list = 1 AND NOT EXISTS (
  SELECT 1 FROM outbox o WHERE o.request_id = t.transcript_id
    AND o.operation = 'send_acknowledgment' AND o.state IN ('pending', 'sent')
    AND o.created_at >= coalesce((SELECT d.first_seen_at FROM documents d
      WHERE d.entity = 'transcripts_received' AND d.item_id = t.transcript_id
        AND d.version = t.current_version), ''))
ORDER BY t.request_date;
CREATE VIEW outbox_unresolved AS SELECT o.id AS outbox_id, o.operation, o.request_id, o.state, o.created_at, o.updated_at,
  round(julianday('now') - julianday(o.created_at), 1) AS age_days,
  o.error, o.pid, o.host, o.run_id, o.forced
FROM outbox o
WHERE o.state IN ('pending', 'uncertain')
ORDER BY o.created_at;
CREATE VIEW ack_totals_check AS SELECT a.direction, a.request_id, a.document_id, a.recorded_at,
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
WHERE a.direction = 'sent';
CREATE VIEW latest_snapshots AS SELECT s.list_name, s.id AS snapshot_id, s.taken_at, s.item_count, s.appeared, s.vanished,
  s.changed, s.run_id, s.call_id
FROM snapshots s
WHERE s.id = (SELECT s2.id FROM snapshots s2 WHERE s2.list_name = s.list_name
  ORDER BY s2.taken_at DESC, s2.id DESC LIMIT 1)
ORDER BY s.list_name;
