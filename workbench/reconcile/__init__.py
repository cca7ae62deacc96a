"""Reconciliation: lifecycles, cross-checks and exceptions, as pure functions of DataFrames.

``rec = reconcile.reconcile(reconcile.load(w.store), sla_days=5)``; the states' precedence, the
checks and the exceptions are described in ``docs/reconcile.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from workbench.reconcile.checks import CHECK_COLUMNS, CHECKS
from workbench.reconcile.checks import checks as run_checks
from workbench.reconcile.inputs import (
    TABLES,
    age_buckets,
    age_edges,
    age_labels,
    empty_tables,
    prepared,
    resolve_now,
)
from workbench.reconcile.lifecycles import (
    CONSUMER_STATES,
    REQUEST_COLUMNS,
    SUPPLIER_STATES,
    TRANSCRIPT_COLUMNS,
    consumer_side,
    supplier_side,
)
from workbench.reconcile.load import load
from workbench.reconcile.summary import (
    OPEN_STATES,
    ORGANISATION_COLUMNS,
    by_organisation,
    headline,
    open_items,
)
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
    "empty_tables",
    "exceptions",
    "load",
    "open_items",
    "reconcile",
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
    """Lifecycles, cross-checks, exceptions and figures of the tables ``load`` returns, aged at
    ``now`` (default: their ``as_of``, else now); overdue past ``sla_days`` and ``grace_hours``
    more (so what arrived minutes ago is not late with a short SLA)."""
    if not math.isfinite(sla_days) or sla_days < 0:
        raise ValueError(f"sla_days must be a finite number of days, 0 or more; got {sla_days!r}.")
    if not math.isfinite(grace_hours) or grace_hours < 0:
        raise ValueError(
            f"grace_hours must be a finite number of hours, 0 or more; got {grace_hours!r}."
        )
    when = resolve_now(now, tables)
    t = prepared(tables, now=when)
    requests = supplier_side(t, now=when, sla_days=sla_days, grace_days=grace_hours / 24)
    transcripts = consumer_side(t, now=when, sla_days=sla_days, grace_days=grace_hours / 24)
    checks = run_checks(t, requests, transcripts, sla_days=sla_days)
    found = exceptions(requests, transcripts, checks, sla_days=sla_days)
    organisations = by_organisation(requests, transcripts, found)
    figures = headline(requests, transcripts, found, now=when, sla_days=sla_days)
    # Stamped last: the rules work on frames without attrs (``inputs.prepared``).
    requests.attrs.update(operation="reconcile.requests", now=when, sla_days=sla_days)
    transcripts.attrs.update(operation="reconcile.transcripts", now=when, sla_days=sla_days)
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
