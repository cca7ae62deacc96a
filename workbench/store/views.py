"""Views an analyst wants first; recreated by every migration (they hold no data).

- ``open_requests``: transcript requests awaiting our response, oldest first, with their age
  in days, the student, and what we last tried to send for them. "Open" is the lifecycle
  state ``awaiting_response`` of :mod:`workbench.reconcile` (whose docstring gives the rules),
  here in SQL: not gone from the supplier's list (listed, or never seen leaving it), not
  cancelled, and no response or transcript of ours sent or in doubt.
- ``answered_still_listed``: the state of that name: requests we answered (a response or a
  transcript sent, none in doubt), not cancelled, that the partner's last list still showed.
- ``transcripts_awaiting_ack``: transcripts not gone from the consumer's list whose current
  version we have not acknowledged and whose latest acknowledgment is not in doubt (reconcile's
  ``awaiting_ack``; a transcript re-issued after our acknowledgment awaits one again).
- ``outbox_unresolved``: sends that are pending or uncertain: do not resend these blindly.
- ``ack_totals_check``: every acknowledgment's ``AcademicAwardTotal``/``CourseTotal`` against the
  counts of the transcript it acknowledges (sent by us, or received by us).
- ``latest_snapshots``: each list's last snapshot with its counts.
- ``transcripts_received_by_request_id``: ``transcripts_received`` keyed by ``request_id``, the
  name the API (``w.consumer`` frames) gives the id the store calls ``transcript_id`` (the
  columns are not renamed: reconcile, reports and notebooks read them).

(Every version of every document is in the ``documents`` table, a table since schema v3, with
its XML, flattened fields, validation and detail item since v4.)
"""

# ruff: noqa: S608  (the views' SQL is put together from our own constants, never from data)

from __future__ import annotations

# The dates a partner can plausibly send (workbench.reconcile.plausible says why): from this
# day to this many days past now. An age is measured from a plausible date, else from when the
# item was first seen, as the reconciliation measures it.
PLAUSIBLE_FROM = "1990-01-01"
PLAUSIBLE_AHEAD_DAYS = 1


def _age_days(date: str, first_seen: str) -> str:
    """Days since ``date`` when plausible, else since ``first_seen`` (SQL columns)."""
    return (
        f"round(julianday('now') - julianday(CASE WHEN {date} >= '{PLAUSIBLE_FROM}' AND "
        f"julianday({date}) <= julianday('now', '+{PLAUSIBLE_AHEAD_DAYS} day') THEN {date} "
        f"ELSE {first_seen} END), 1)"
    )


# The supplier lifecycle's conditions (workbench.reconcile.supplier), for a request ``r``.
# Not cancelled: its current version is no Cancellation.
_NOT_CANCELLED = "r.cancelled_at IS NULL AND r.transmission_type IS NOT 'Cancellation'"
# Answered: a transcript of ours sent, or a response of ours filed (sent, or inferred).
_ANSWERED = """(EXISTS (SELECT 1 FROM outbox o WHERE o.request_id = r.request_id
    AND o.operation = 'send_transcript' AND o.state = 'sent')
  OR EXISTS (SELECT 1 FROM outbox o JOIN responses s ON s.outbox_id = o.id
    WHERE o.request_id = r.request_id))"""
# In doubt: the latest send of either operation is pending or uncertain.
_IN_DOUBT = """EXISTS (SELECT 1 FROM outbox o WHERE o.request_id = r.request_id
    AND o.operation IN ('send_response', 'send_transcript')
    AND o.state IN ('pending', 'uncertain')
    AND o.id = (SELECT max(o2.id) FROM outbox o2
      WHERE o2.request_id = o.request_id AND o2.operation = o.operation))"""
_LAST_SEND = """(SELECT o.operation || ': ' || o.state FROM outbox o
    WHERE o.request_id = r.request_id ORDER BY o.id DESC LIMIT 1) AS last_send"""

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
  r.source_org_name,
  (SELECT max(o.updated_at) FROM outbox o WHERE o.request_id = r.request_id
    AND o.operation IN ('send_response', 'send_transcript') AND o.state = 'sent')
    AS answered_at,
  r.last_seen_at,
  r.last_seen_at > (SELECT max(o.updated_at) FROM outbox o WHERE o.request_id = r.request_id
    AND o.operation IN ('send_response', 'send_transcript') AND o.state = 'sent')
    AS listed_since_answer,
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
  t.detail_fetched_at IS NOT NULL AS has_detail, t.first_seen_at,
  (SELECT o.state FROM outbox o WHERE o.request_id = t.transcript_id
    AND o.operation = 'send_acknowledgment' ORDER BY o.id DESC LIMIT 1) AS ack_state
FROM transcripts_received t
WHERE (t.on_list = 1 OR (t.left_at IS NULL AND t.left_reason IS NULL)) AND NOT EXISTS (
  SELECT 1 FROM outbox o WHERE o.request_id = t.transcript_id
    AND o.operation = 'send_acknowledgment' AND o.state IN ('pending', 'sent')
    AND o.created_at >= coalesce((SELECT d.first_seen_at FROM documents d
      WHERE d.entity = 'transcripts_received' AND d.item_id = t.transcript_id
        AND d.version = t.current_version), ''))
  AND coalesce((SELECT o.state FROM outbox o WHERE o.request_id = t.transcript_id
    AND o.operation = 'send_acknowledgment' ORDER BY o.id DESC LIMIT 1), '')
    NOT IN ('pending', 'uncertain')
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
