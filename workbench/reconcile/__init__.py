"""Reconciliation: lifecycles, cross-checks, exceptions and the report's figures, as pure
functions of DataFrames.

``rec = reconcile.reconcile(reconcile.load(w.store), sla_days=5)``; the states' precedence, the
checks and the exceptions are described in ``docs/reconcile.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench.pesc.fields import environment_of
from workbench.reconcile.checks import CHECK_COLUMNS, CHECKS
from workbench.reconcile.checks import checks as run_checks
from workbench.reconcile.inputs import (
    COUNT,
    TABLES,
    TEXT,
    age_buckets,
    age_edges,
    age_labels,
    empty_tables,
    load,
    prepared,
    resolve_now,
)
from workbench.reconcile.lifecycles import (
    CONSUMER_STATES,
    REQUEST_COLUMNS,
    SUPPLIER_STATES,
    TRANSCRIPT_COLUMNS,
    consumer_side,
    later_copies,
    supplier_side,
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

_UNKNOWN = "(unknown)"
ORGANISATION_COUNTS = tuple(dict.fromkeys((
    "items", "open", "sla_breached", *SUPPLIER_STATES, *CONSUMER_STATES, "duplicates",
    "exceptions", "high_or_worse")))  # fmt: skip
ORGANISATION_COLUMNS = ("side", "organisation_id", "organisation_name", *ORGANISATION_COUNTS)
# what is open, per side: a request awaiting our response, a transcript awaiting our ack
OPEN_STATES = {"supplier": "awaiting_response", "consumer": "awaiting_ack"}


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
    for name, value in {"sla_days": sla_days, "grace_hours": grace_hours}.items():
        if not math.isfinite(value) or value < 0:
            unit = name.split("_")[1]  # days, hours
            raise ValueError(f"{name} must be a finite number of {unit}, 0 or more; got {value!r}.")
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
        requests, transcripts, checks, found, figures, organisations, when, sla_days, grace_hours
    )


def open_items(
    requests: pd.DataFrame, transcripts: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The open requests (awaiting our response) and transcripts (awaiting our ack)."""
    return (
        requests[requests["state"] == OPEN_STATES["supplier"]],
        transcripts[transcripts["state"] == OPEN_STATES["consumer"]],
    )


def headline(
    requests: pd.DataFrame,
    transcripts: pd.DataFrame,
    exceptions: pd.DataFrame,
    *,
    now: pd.Timestamp,
    sla_days: float,
) -> dict[str, Any]:
    """The report's headline figures: plain ints and dicts of them (``now`` a Timestamp);
    what each counts: ``docs/reconcile.md``."""
    state, theirs = requests["state"].value_counts(), transcripts["state"].value_counts()
    answered = requests["response_outbox_id"].notna() | requests["transcript_outbox_id"].notna()
    invalid = (requests["validation_status"] == "invalid").fillna(False)
    codes = pd.concat([requests["process_code"], transcripts["process_code"]]).astype("string")
    read = ["state", "age_bucket", "sla_breached"]  # a row filter copies every column it keeps
    open_, waiting = open_items(requests[read], transcripts[read])
    buckets = age_labels(sla_days)
    return {
        "now": now,
        "sla_days": sla_days,
        "requests": len(requests),
        "open_requests": len(open_),
        "open_by_age": _counts(open_["age_bucket"], buckets),
        "open_over_sla": int(open_["sla_breached"].fillna(False).sum()),
        "answered": int(answered.sum()),
        "answered_still_listed": int(state.get("answered_still_listed", 0)),
        "requests_by_state": {s: int(state.get(s, 0)) for s in SUPPLIER_STATES},
        "responses_by_status": {
            str(k): int(v) for k, v in requests["response_status"].value_counts().items()
        },
        "transcripts_sent": int(requests["transcript_outbox_id"].notna().sum()),
        "transcripts_acknowledged": int(requests["acknowledged_at"].notna().sum()),
        "transcripts_unacknowledged": int(state.get("transcript_sent", 0)),
        "ack_mismatches": int(requests["ack_totals_differ"].fillna(False).sum()),
        "uncertain_sends": int(state.get("uncertain_send", 0) + theirs.get("ack_uncertain", 0)),
        "transcripts_received": len(transcripts),
        "transcripts_awaiting_ack": len(waiting),
        "transcripts_acknowledged_by_us": int(theirs.get("acknowledged", 0)),
        "awaiting_ack_by_age": _counts(waiting["age_bucket"], buckets),
        "awaiting_ack_over_sla": int(waiting["sla_breached"].fillna(False).sum()),
        "duplicate_transcripts": int(later_copies(transcripts, "transcript_id").sum()),
        "document_problems": int((requests["parse_error"].notna() | invalid).sum())
        + int(transcripts["document_problem"].notna().sum()),
        "exceptions": len(exceptions),
        "exceptions_by_severity": _counts(exceptions["severity"], SEVERITIES[::-1]),
        "environment": environment_of(codes.value_counts().to_dict()),
    }


def _counts(series: pd.Series, labels: tuple[str, ...]) -> dict[str, int]:
    found = series.value_counts()
    return {label: int(found.get(label, 0)) for label in labels}


def by_organisation(
    requests: pd.DataFrame, transcripts: pd.DataFrame, exceptions: pd.DataFrame
) -> pd.DataFrame:
    """Counts per counterpart organisation: requests by who sent them (their source),
    transcripts by the school that sent them; one row per side and organisation."""
    parts = [
        _side(frame, id_column, side, exceptions[(exceptions["side"] == side).fillna(False)])
        for side, frame, id_column in (
            ("supplier", requests, "request_id"),
            ("consumer", transcripts, "transcript_id"),
        )
        if not frame.empty
    ] or [pd.DataFrame(columns=ORGANISATION_COLUMNS)]
    out = pd.concat(parts, ignore_index=True).reindex(columns=list(ORGANISATION_COLUMNS))
    out = out.fillna(dict.fromkeys(ORGANISATION_COUNTS, 0)).astype(
        dict.fromkeys(ORGANISATION_COLUMNS[:3], TEXT) | dict.fromkeys(ORGANISATION_COUNTS, COUNT)
    )
    out = out.sort_values(
        ["side", "items", "organisation_name"], ascending=[False, False, True], kind="stable"
    )
    return out.reset_index(drop=True)


def _side(frame: pd.DataFrame, id_column: str, side: str, exceptions: pd.DataFrame) -> pd.DataFrame:
    """One side's rows grouped by organisation (its id, else its name), named by its first row."""
    organisation = frame["source_org_id"].fillna(frame["source_org_name"]).fillna(_UNKNOWN)
    # What each row counts for: its state (a column per state, all of them), open, past the SLA.
    counted = pd.get_dummies(frame["state"]).assign(
        items=1,
        open=frame["state"] == OPEN_STATES[side],
        sla_breached=frame["sla_breached"].fillna(False),
    )
    if "duplicate" in frame.columns:
        counted["duplicates"] = later_copies(frame, id_column)
    first = ~organisation.duplicated()
    out = frame.loc[first, ["source_org_id", "source_org_name"]].set_axis(organisation[first])
    out.columns = ["organisation_id", "organisation_name"]
    out = out.join(counted.groupby(organisation, sort=False).sum())
    owner = exceptions["id"].map(pd.Series(organisation.to_numpy(), index=frame[id_column]))
    out["exceptions"] = owner.value_counts()
    out["high_or_worse"] = owner[exceptions["severity"] >= "high"].value_counts()
    out.insert(0, "side", side)
    return out.reset_index(drop=True)
