"""Reading the input tables from a store, as they are now or as they were at a moment."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.reconcile.inputs import IDENTITY, TABLES, conform, timestamp

if TYPE_CHECKING:
    from workbench.store import Store

# payload_flat field -> outbox column
_SENT_FIELDS = {
    "document_id": "sent_document_id", "request_tracking_id": "sent_request_tracking_id",
    "response_status": "sent_response_status", "award_count": "sent_award_count",
    "course_count": "sent_course_count", **{c: f"sent_{c}" for c in IDENTITY},
}  # fmt: skip
# input table, store table, id column, list
_ENTITIES = (
    ("requests", "transcript_requests", "request_id", "supplier_requests"),
    ("transcripts", "transcripts_received", "transcript_id", "consumer_transcripts"),
)


def load(store: Store, *, as_of: Any = None) -> dict[str, pd.DataFrame]:
    """The tables ``reconcile`` needs (``TABLES``) from ``store``, as the store knew them at
    ``as_of`` (a time; None: now; ``docs/reconcile.md``), which each frame's ``attrs`` carry."""
    at = None if as_of is None else timestamp(as_of)
    cut = None if at is None else at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # as the store writes
    versions = _versions(store, cut)
    raw = {
        "outbox": _outbox(store, cut),
        "responses": _read(store, "responses", "sent_at", cut),
        "acknowledgments": _read(store, "acknowledgments", "recorded_at", cut),
        "versions": versions,
    }
    for name, table, id_column, list_name in _ENTITIES:
        frame = _entity(store, table, id_column, list_name, cut)
        raw[name] = frame if cut is None else _current_as_of(frame, versions, table, id_column, cut)
    tables = conform(raw)
    for frame in tables.values():
        frame.attrs.update(operation="reconcile.load", as_of=at, db=str(store.path))
    return tables


def _read(store: Store, table: str, time_column: str, cut: str | None) -> pd.DataFrame:
    if cut is None:
        return store.table(table)
    return store.table(table, where=f"{time_column} <= ?", params=[cut])


def _versions(store: Store, cut: str | None) -> pd.DataFrame:
    """Every document received for an id (without its XML), as received by ``cut``."""
    columns = ", ".join(TABLES["versions"])
    where = "" if cut is None else " WHERE first_seen_at <= :cut"
    rows = store.db.query(
        f"SELECT {columns} FROM documents{where} ORDER BY entity, item_id, version",  # noqa: S608
        {"cut": cut},
    )
    return pd.DataFrame(list(rows), columns=list(TABLES["versions"]))


def _current_as_of(
    frame: pd.DataFrame, versions: pd.DataFrame, entity: str, id_column: str, cut: str
) -> pd.DataFrame:
    """The entity rows' version columns as the versions received by ``cut`` give them: a
    version that came later (a Reissue, a Cancellation) is not current yet."""
    mine = versions[versions["entity"] == entity].sort_values("version")
    latest = mine.drop_duplicates("item_id", keep="last").set_index("item_id")
    ids = frame[id_column]
    has = ids.isin(latest.index)
    current = ids.map(latest["version"]).where(has, frame["current_version"])
    cancelled_by_then = frame["cancelled_at"] <= timestamp(cut)
    still = (current == frame["current_version"]) & cancelled_by_then
    return frame.assign(
        current_version=current,
        version_count=ids.map(mine.groupby("item_id").size()).where(has, frame["version_count"]),
        transmission_type=ids.map(latest["transmission_type"]).where(
            has, frame["transmission_type"]
        ),
        cancelled_at=frame["cancelled_at"].where(still.fillna(False)),
    )


def _entity(store: Store, table: str, id_column: str, list_name: str, cut: str | None) -> Any:
    frame = _read(store, table, "first_seen_at", cut)
    validation = store.current_documents(list_name)["validation"]  # the current version's
    found = [_json(v) for v in frame[id_column].map(validation)]
    found = pd.DataFrame(found, index=frame.index, columns=["status", "errors", "note"])
    first = found["errors"].map(lambda e: str(e[0]) if isinstance(e, list) and e else None)
    frame["validation_status"] = found["status"]
    frame["validation_error"] = first.fillna(found["note"]).where(found["status"] == "invalid")
    if cut is not None:
        frame = _membership(store, frame, id_column, list_name, cut)
    return frame


def _membership(
    store: Store, frame: pd.DataFrame, id_column: str, list_name: str, cut: str
) -> pd.DataFrame:
    """``on_list``, ``left_at`` and ``left_reason`` as the snapshots taken by ``cut`` had them."""
    snapshots = store.table(
        "snapshots", where="list_name = ? AND taken_at <= ?", params=[list_name, cut]
    )
    listed: pd.Series = pd.Series(dtype="string")
    if not snapshots.empty:
        last = snapshots.sort_values(["taken_at", "id"]).iloc[-1]
        items = store.table("snapshot_items", where="snapshot_id = ?", params=[int(last["id"])])
        listed = items["item_key"]
    departures = store.table(
        "departures", where="list_name = ? AND left_at <= ?", params=[list_name, cut]
    )
    departures = departures.sort_values(["left_at", "id"]).drop_duplicates("item_id", keep="last")
    latest = departures.set_index("item_id").reindex(frame[id_column].to_numpy())
    on_list = frame[id_column].isin(listed).to_numpy(dtype=bool)
    return frame.assign(
        on_list=on_list,
        left_at=latest["left_at"].where(~on_list).to_numpy(),
        left_reason=latest["left_reason"].where(~on_list).to_numpy(),
    )


def _outbox(store: Store, cut: str | None) -> pd.DataFrame:
    frame = _read(store, "outbox", "created_at", cut).rename(columns={"id": "outbox_id"})
    flats = [_json(value) for value in frame["payload_flat"]]
    sent = pd.DataFrame(flats, index=frame.index, columns=[*_SENT_FIELDS], dtype=object)
    frame = frame.join(sent.rename(columns=_SENT_FIELDS))
    if cut is not None and not frame.empty:
        at = timestamp(cut)
        settled_later = (frame["resolved_at"] > at).fillna(False)
        marked_later = (frame["updated_at"] > at).fillna(False)
        frame["state"] = np.where(
            settled_later, "uncertain", np.where(marked_later, "pending", frame["state"])
        )
        frame["resolved_at"] = frame["resolved_at"].where(~settled_later)
        frame["resolution"] = frame["resolution"].where(~settled_later)
    return frame[[c for c in TABLES["outbox"] if c in frame.columns]]


def _json(value: Any) -> dict[str, Any]:
    """A stored JSON object; ``{}`` for anything else (missing, not JSON, not an object)."""
    try:
        found = json.loads(value) if isinstance(value, str) and value else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
