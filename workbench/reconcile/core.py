"""``reconcile``: every table of a reconciliation, computed once, in one object."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from workbench.reconcile.checks import checks as run_checks
from workbench.reconcile.consumer import status
from workbench.reconcile.inputs import prepared, resolve_now
from workbench.reconcile.summary import by_organisation, headline
from workbench.reconcile.supplier import lifecycle
from workbench.reconcile.triage import exceptions as triage


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
    exceptions = triage(requests, transcripts, checks, sla_days=sla_days)
    organisations = by_organisation(requests, transcripts, exceptions)
    figures = headline(requests, transcripts, exceptions, now=when, sla_days=sla_days)
    # Stamped last: the rules work on frames without attrs (``inputs.prepared``).
    requests.attrs.update(operation="reconcile.supplier_lifecycle", now=when, sla_days=sla_days)
    transcripts.attrs.update(operation="reconcile.consumer_status", now=when, sla_days=sla_days)
    return Reconciliation(
        requests=requests,
        transcripts=transcripts,
        checks=checks,
        exceptions=exceptions,
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
