"""The figures a report leads with, and the per-organisation breakdown."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from workbench.reconcile.consumer import CONSUMER_STATES
from workbench.reconcile.inputs import AGE_BUCKETS, COUNT, TEXT
from workbench.reconcile.links import pick
from workbench.reconcile.supplier import SUPPLIER_STATES
from workbench.reconcile.triage import SEVERITIES

_UNKNOWN = "(unknown)"
ORGANISATION_COUNTS = tuple(
    dict.fromkeys(
        (
            "items",
            "open",
            "sla_breached",
            *SUPPLIER_STATES,
            *CONSUMER_STATES,
            "duplicates",
            "exceptions",
            "high_or_worse",
        )
    )
)
ORGANISATION_COLUMNS = ("side", "organisation_id", "organisation_name", *ORGANISATION_COUNTS)


def headline(
    requests: pd.DataFrame,
    transcripts: pd.DataFrame,
    exceptions: pd.DataFrame,
    *,
    now: pd.Timestamp,
    sla_days: float,
) -> dict[str, Any]:
    """The report's headline figures: plain ints and dicts of them (``now`` a Timestamp).

    ``open_*``: requests awaiting our response; ``transcripts_unacknowledged``: transcripts we
    sent with no acknowledgment recorded; ``transcripts_awaiting_ack``: transcripts received
    that await ours; ``*_by_age``: whole days since the request or transcript was dated.
    """
    state = requests["state"].value_counts()
    open_ = requests[requests["state"] == "awaiting_response"]
    waiting = transcripts[transcripts["state"] == "awaiting_ack"]
    responded = requests[requests["response_status"].notna()]
    later_copies = transcripts["duplicate"].fillna(False) & (
        transcripts["duplicate_of"] != transcripts["transcript_id"]
    ).fillna(False)
    return {
        "now": now,
        "sla_days": sla_days,
        "requests": len(requests),
        "open_requests": len(open_),
        "open_by_age": _counts(open_["age_bucket"], AGE_BUCKETS),
        "open_over_sla": int(open_["sla_breached"].fillna(False).sum()),
        "requests_by_state": {s: int(state.get(s, 0)) for s in SUPPLIER_STATES},
        "responses_by_status": {
            str(k): int(v) for k, v in responded["response_status"].value_counts().items()
        },
        "transcripts_sent": int(requests["transcript_outbox_id"].notna().sum()),
        "transcripts_unacknowledged": int(state.get("transcript_sent", 0)),
        "ack_mismatches": int(state.get("ack_mismatch", 0)),
        "uncertain_sends": int(state.get("uncertain_send", 0))
        + int((transcripts["state"] == "ack_uncertain").sum()),
        "transcripts_received": len(transcripts),
        "transcripts_awaiting_ack": len(waiting),
        "awaiting_ack_by_age": _counts(waiting["age_bucket"], AGE_BUCKETS),
        "awaiting_ack_over_sla": int(waiting["sla_breached"].fillna(False).sum()),
        "duplicate_transcripts": int(later_copies.sum()),
        "document_problems": int(
            (requests["parse_error"].notna() | (requests["validation_status"] == "invalid"))
            .fillna(False)
            .sum()
        )
        + int(transcripts["document_problem"].notna().sum()),
        "exceptions": len(exceptions),
        "exceptions_by_severity": _counts(exceptions["severity"], SEVERITIES[::-1]),
    }


def _counts(series: pd.Series, labels: tuple[str, ...]) -> dict[str, int]:
    found = series.value_counts()
    return {label: int(found.get(label, 0)) for label in labels}


def by_organisation(
    requests: pd.DataFrame,
    transcripts: pd.DataFrame,
    exceptions: pd.DataFrame,
    *,
    indexes: tuple[pd.Index, pd.Index] | None = None,
) -> pd.DataFrame:
    """Counts per counterpart organisation: requests by who sent them (their source),
    transcripts by the school that sent them; one row per side and organisation.

    ``indexes``: ``pd.Index`` of the requests' and the transcripts' ids, when already built.
    """
    parts = []
    for side, frame, id_column, open_state, index in (
        ("supplier", requests, "request_id", "awaiting_response", indexes and indexes[0]),
        ("consumer", transcripts, "transcript_id", "awaiting_ack", indexes and indexes[1]),
    ):
        if frame.empty:
            continue
        mine = exceptions[(exceptions["side"] == side).fillna(False)]
        index = index if index is not None else pd.Index(frame[id_column])
        parts.append(_side(frame, id_column, side, open_state, mine, index))
    if not parts:
        out = pd.DataFrame({c: pd.Series(dtype=TEXT) for c in ORGANISATION_COLUMNS[:3]})
        for column in ORGANISATION_COUNTS:
            out[column] = pd.Series(dtype=COUNT)
        return out
    out = pd.concat(parts, ignore_index=True)
    for column in ORGANISATION_COUNTS:
        values = out[column] if column in out.columns else pd.Series(0, index=out.index)
        out[column] = values.fillna(0).astype(COUNT)
    for column in ORGANISATION_COLUMNS[:3]:
        out[column] = out[column].astype(TEXT)
    out = out.sort_values(
        ["side", "items", "organisation_name"], ascending=[False, False, True], kind="stable"
    )
    return out[list(ORGANISATION_COLUMNS)].reset_index(drop=True)


def _side(
    frame: pd.DataFrame,
    id_column: str,
    side: str,
    open_state: str,
    exceptions: pd.DataFrame,
    index: pd.Index,
) -> pd.DataFrame:
    """One side's rows grouped by organisation (its id, else its name)."""
    key = frame["source_org_id"].fillna(frame["source_org_name"]).fillna(_UNKNOWN)
    codes, names = pd.factorize(key)
    k = len(names)
    state_codes = frame["state"].cat.codes.to_numpy()
    counts = np.zeros((k, len(frame["state"].cat.categories)), dtype=np.int64)
    np.add.at(counts, (codes, state_codes), 1)
    out = pd.DataFrame(counts, columns=list(frame["state"].cat.categories))
    out.insert(0, "side", side)
    out.insert(1, "organisation_id", pick(frame["source_org_id"], _first_rows(codes, k)))
    out.insert(2, "organisation_name", pick(frame["source_org_name"], _first_rows(codes, k)))
    out["items"] = np.bincount(codes, minlength=k)
    out["open"] = np.bincount(codes, weights=(frame["state"] == open_state), minlength=k)
    out["sla_breached"] = np.bincount(
        codes, weights=frame["sla_breached"].fillna(False).to_numpy(dtype=float), minlength=k
    )
    if "duplicate" in frame.columns:
        later = frame["duplicate"].fillna(False) & (
            frame["duplicate_of"] != frame[id_column]
        ).fillna(False)
        out["duplicates"] = np.bincount(codes, weights=later.to_numpy(dtype=float), minlength=k)
    rows = index.get_indexer(exceptions["id"]) if len(exceptions) else np.empty(0, np.intp)
    found = rows >= 0
    owner = codes[rows[found]]
    serious = (exceptions["severity"] >= "high").to_numpy(dtype=bool)[found]
    out["exceptions"] = np.bincount(owner, minlength=k)
    out["high_or_worse"] = np.bincount(owner, weights=serious.astype(float), minlength=k)
    return out


def _first_rows(codes: np.ndarray, k: int) -> np.ndarray:
    """The first row of each code 0..k-1."""
    _, first = np.unique(codes, return_index=True)
    return first
