"""Reconciliation: lifecycles, cross-checks and exceptions, as pure functions of DataFrames.

::

    from workbench import reconcile

    tables = reconcile.load(w.store)             # the only function that reads (as_of=...)
    rec = reconcile.reconcile(tables, sla_days=5)
    rec.requests, rec.transcripts                # one row per request / transcript received
    rec.checks, rec.exceptions                   # failed cross-checks; what needs an analyst
    rec.headline, rec.by_organisation            # the report's figures
    reconcile.exceptions(requests, transcripts, checks)   # from frames of your own

The input tables (``TABLES``) are described in ``inputs``; a hand-built dict may leave out
tables and columns. The API level joins by ``RequestID`` (any string: a tracking id, or a GUID),
the documents by their ``RequestTrackingID``; the two are never required to be equal.

**Supplier lifecycle** (``requests.state``). The first that holds, in this order, wins:

1. ``answered_still_listed``: a response or a transcript of ours took effect (``sent``, or
   inferred sent), no send of ours is in doubt, the request is not cancelled, and the
   partner's last list read still shows it (``on_list``): until a pull sees it leave, nothing
   else about it can be told (the partner may not have taken our answer in; right after a
   send it is only that no list was read since). Not open;
2. ``ack_mismatch``: the newest transcript we sent was acknowledged, and the partner's
   ``AcademicAwardTotal``/``CourseTotal`` differ from the counts of what we sent (a total it
   left out counts as different; when our counts are unknown, no mismatch can be told). The
   flag ``ack_totals_differ`` (and the ``ack_totals`` check) tells it in any state;
3. ``acknowledged``: the newest transcript we sent was acknowledged;
4. ``cancelled``: the request's current version is a Cancellation (``cancelled_at``): it is
   closed, nothing is owed and no SLA runs;
5. ``uncertain_send``: the latest send of a response or of a transcript is ``uncertain`` or
   ``pending`` in the outbox (it may or may not have reached the partner). An older uncertain
   entry that a newer send of the same operation superseded does not count;
6. ``transcript_sent``: a transcript of ours was sent (or inferred sent from the lists) and no
   acknowledgment of it is recorded;
7. ``responded``: a TranscriptResponse of ours was sent; ``response_status``, ``hold_reason``
   and ``planned_release_date`` say which (the newest);
8. ``closed_elsewhere``: the request left the partner's list (``left_at``/``left_reason``)
   and no send of ours took effect (failed sends do not count);
9. ``awaiting_response``: anything else: not gone from the list, not cancelled, nothing of
   ours sent or in doubt.

Furthest along wins because it is the most the partner can have seen; an unsettled send ranks
above a plain sent or responded one because it is what the analyst must act on first.

**Consumer side** (``transcripts.state``): ``acknowledged`` (an acknowledgment of ours of
the current version was sent) > ``ack_uncertain`` (our latest one is uncertain or pending) >
``closed_elsewhere`` (it left the consumer list) > ``awaiting_ack``. A transcript re-issued
since our acknowledgment awaits ours again (``reissued_after_ack``). Beside the state:
``duplicate`` / ``duplicate_of`` / ``duplicate_key`` (same student and source organisation,
``consumer.duplicates``) and ``document_problem`` (``parse_error`` or ``schema_invalid``).

**Open** means one thing everywhere: ``awaiting_response`` and ``awaiting_ack``
(``OPEN_STATES``, ``open_items``). The store's views ``open_requests``,
``answered_still_listed`` and ``transcripts_awaiting_ack`` are these rules in SQL, and the
explorer, ``workbench export``, Datasette's queries and the report read them
(``tests/test_open_everywhere.py``).

**Ageing** (``age_days``, ``age_bucket``): days since the item's ``request_date``, else since
we first saw it, in the buckets of ``age_labels`` (an item at exactly the SLA is within it).
A ``request_date`` outside the plausible dates (``plausible``) is taken as missing, kept in
``implausible_request_date`` and raised as an ``implausible_date``.

**Cross-checks**: ``CHECKS``, see ``checks``. **Exceptions**: ``EXCEPTION_KINDS``, see
``triage``. Each rule is a pandas ``merge``/``drop_duplicates``/``groupby`` over whole tables
and states come from masks: a million requests take seconds (``bench/reconcile.py``).
"""

from __future__ import annotations

from workbench.reconcile.checks import CHECK_COLUMNS, CHECKS
from workbench.reconcile.consumer import CONSUMER_STATES, TRANSCRIPT_COLUMNS
from workbench.reconcile.core import (
    Reconciliation,
    consumer_status,
    cross_checks,
    reconcile,
    supplier_lifecycle,
)
from workbench.reconcile.inputs import TABLES, age_buckets, age_edges, age_labels, empty_tables
from workbench.reconcile.load import load
from workbench.reconcile.summary import OPEN_STATES, ORGANISATION_COLUMNS, open_items
from workbench.reconcile.supplier import REQUEST_COLUMNS, SUPPLIER_STATES
from workbench.reconcile.triage import EXCEPTION_COLUMNS, EXCEPTION_KINDS, exceptions
from workbench.severities import SEVERITIES

__all__ = [
    "CHECKS",
    "CHECK_COLUMNS",
    "CONSUMER_STATES",
    "EXCEPTION_COLUMNS",
    "EXCEPTION_KINDS",
    "OPEN_STATES",
    "ORGANISATION_COLUMNS",
    "REQUEST_COLUMNS",
    "SEVERITIES",
    "SUPPLIER_STATES",
    "TABLES",
    "TRANSCRIPT_COLUMNS",
    "Reconciliation",
    "age_buckets",
    "age_edges",
    "age_labels",
    "consumer_status",
    "cross_checks",
    "empty_tables",
    "exceptions",
    "load",
    "open_items",
    "reconcile",
    "supplier_lifecycle",
]
