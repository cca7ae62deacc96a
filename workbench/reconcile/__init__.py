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
A ``request_date`` outside the plausible dates (``inputs.window``) is taken as missing, kept in
``implausible_request_date`` and raised as an ``implausible_date``.

**Cross-checks**: ``CHECKS``, see ``checks``. **Exceptions**: ``EXCEPTION_KINDS``, see
``triage``. Each rule is a pandas ``merge``/``drop_duplicates``/``groupby`` over whole tables
and states come from masks: a million requests take seconds (``bench/reconcile.py``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from workbench.reconcile.checks import CHECK_COLUMNS, CHECKS
from workbench.reconcile.checks import checks as run_checks
from workbench.reconcile.consumer import CONSUMER_STATES, TRANSCRIPT_COLUMNS, status
from workbench.reconcile.inputs import (
    TABLES,
    age_buckets,
    age_edges,
    age_labels,
    empty_tables,
    prepared,
    resolve_now,
)
from workbench.reconcile.load import load
from workbench.reconcile.summary import (
    OPEN_STATES,
    ORGANISATION_COLUMNS,
    by_organisation,
    headline,
    open_items,
)
from workbench.reconcile.supplier import REQUEST_COLUMNS, SUPPLIER_STATES, lifecycle
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


@dataclass(frozen=True, repr=False)
class Reconciliation:
    """The outcome of :func:`reconcile`: ``requests`` (supplier lifecycle), ``transcripts``
    (consumer side), ``checks`` (failed cross-checks), ``exceptions`` (what needs an analyst),
    ``headline`` (the report's figures), ``by_organisation`` (counts per organisation)."""

    requests: pd.DataFrame
    transcripts: pd.DataFrame
    checks: pd.DataFrame
    exceptions: pd.DataFrame
    headline: dict[str, Any]
    by_organisation: pd.DataFrame
    now: pd.Timestamp
    sla_days: float
    attrs: dict[str, Any] = field(default_factory=dict)
    grace_hours: float = 0.0  # how long past the SLA an item may wait before it is overdue

    def __repr__(self) -> str:
        h = self.headline
        severity = ", ".join(f"{k} {v}" for k, v in h["exceptions_by_severity"].items())
        return (
            f"<Reconciliation at {self.now:%Y-%m-%d %H:%M} UTC (SLA {self.sla_days:g} days): "
            f"{h['requests']} requests, {h['open_requests']} open; "
            f"{h['transcripts_received']} transcripts, {h['transcripts_awaiting_ack']} awaiting "
            f"our ack; {h['exceptions']} exceptions ({severity})>"
        )


def reconcile(
    tables: Mapping[str, pd.DataFrame],
    *,
    now: Any = None,
    sla_days: float = 5,
    grace_hours: float = 0,
) -> Reconciliation:
    """Reconcile the tables ``load`` returns: lifecycles, cross-checks, exceptions, figures.

    ``now`` (default: the tables' ``as_of``, else the current time) is the moment ages and
    the SLA are measured at; ``sla_days`` how long a request may wait for our response, and
    a transcript for our acknowledgment; ``grace_hours`` how much longer than that an item may
    wait before it is overdue (so what arrived minutes ago is not late with a short SLA).

    >>> rec = reconcile.reconcile(reconcile.load(w.store), sla_days=5)  # doctest: +SKIP
    >>> rec.exceptions[rec.exceptions.severity >= "high"]  # doctest: +SKIP
    """
    if not math.isfinite(sla_days) or sla_days < 0:
        raise ValueError(f"sla_days must be a finite number of days, 0 or more; got {sla_days!r}.")
    if not math.isfinite(grace_hours) or grace_hours < 0:
        raise ValueError(
            f"grace_hours must be a finite number of hours, 0 or more; got {grace_hours!r}."
        )
    when = resolve_now(now, tables)
    t = prepared(tables, now=when)
    requests = lifecycle(t, now=when, sla_days=sla_days, grace_days=grace_hours / 24)
    transcripts = status(t, now=when, sla_days=sla_days, grace_days=grace_hours / 24)
    checks = run_checks(t, requests, transcripts, sla_days=sla_days)
    found = exceptions(requests, transcripts, checks, sla_days=sla_days)
    organisations = by_organisation(requests, transcripts, found)
    figures = headline(requests, transcripts, found, now=when, sla_days=sla_days)
    # Stamped last: the rules work on frames without attrs (``inputs.prepared``).
    requests.attrs.update(operation="reconcile.supplier_lifecycle", now=when, sla_days=sla_days)
    transcripts.attrs.update(operation="reconcile.consumer_status", now=when, sla_days=sla_days)
    return Reconciliation(
        requests=requests,
        transcripts=transcripts,
        checks=checks,
        exceptions=found,
        headline=figures,
        by_organisation=organisations,
        now=when,
        sla_days=sla_days,
        attrs={k: v for f in tables.values() for k, v in getattr(f, "attrs", {}).items()},
        grace_hours=grace_hours,
    )


def supplier_lifecycle(
    tables: Mapping[str, pd.DataFrame], *, now: Any = None, sla_days: float = 5
) -> pd.DataFrame:
    """One row per transcript request: its ``state`` and what supports it (``reconcile``'s
    ``requests``)."""
    return reconcile(tables, now=now, sla_days=sla_days).requests


def consumer_status(
    tables: Mapping[str, pd.DataFrame], *, now: Any = None, sla_days: float = 5
) -> pd.DataFrame:
    """One row per transcript received: ``state``, age, our acknowledgment, duplicate and
    document flags (``reconcile``'s ``transcripts``)."""
    return reconcile(tables, now=now, sla_days=sla_days).transcripts


def cross_checks(
    tables: Mapping[str, pd.DataFrame], *, now: Any = None, sla_days: float = 5
) -> pd.DataFrame:
    """Every failed cross-check (``reconcile``'s ``checks``); ``now``/``sla_days`` drive ``sla``."""
    return reconcile(tables, now=now, sla_days=sla_days).checks
