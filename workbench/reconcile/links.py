"""How the input tables point at each other, as row positions, worked out once.

Hashing string ids is the costly part of joining a million rows, so each id is hashed once
here: every outbox entry, response and acknowledgment gets the position of its request (or
transcript) row, and of its outbox entry. The lifecycles then join by position (``numpy``
takes), which costs about as much as copying a column.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.reconcile.inputs import SUPPLIER_OPERATIONS

ACK_OPERATION = "send_acknowledgment"


@dataclass(frozen=True)
class Labels:
    """A column of a few distinct strings as integer codes: masks over millions of rows cost
    an integer comparison, not a string one."""

    codes: np.ndarray
    names: tuple[str, ...]

    @classmethod
    def of(cls, series: pd.Series) -> Labels:
        codes, names = pd.factorize(series)
        return cls(codes, tuple(str(n) for n in names))

    def mask(self, *wanted: str) -> np.ndarray:
        """Rows whose value is one of ``wanted``."""
        return np.isin(self.codes, [i for i, name in enumerate(self.names) if name in wanted])


@dataclass(frozen=True)
class Links:
    """The input tables with position columns (``-1``: points at nothing we hold).

    ``requests``/``transcripts``: one row per id (a repeated id keeps its last row);
    ``outbox``: sorted by ``outbox_id``, ``target`` = position of its request (supplier
    operations) or transcript (acknowledgments), and its ``operation``/``state`` as plain
    arrays; ``responses``/``acknowledgments``: ``entry`` = position of their outbox entry,
    ``target`` = position of their request or transcript.
    """

    requests: pd.DataFrame
    transcripts: pd.DataFrame
    outbox: pd.DataFrame
    responses: pd.DataFrame
    acknowledgments: pd.DataFrame
    request_index: pd.Index
    transcript_index: pd.Index
    operation: Labels  # the outbox's operation and state
    state: Labels
    direction: Labels  # the acknowledgments' direction
    ack_order: np.ndarray  # acknowledgment rows by recorded_at, oldest first
    ack_readable: np.ndarray  # acknowledgments with any field filled (see supplier)
    versions: pd.DataFrame  # every document received for an id (joined by id, not position)


def link(t: Mapping[str, pd.DataFrame]) -> Links:
    """Positions between conformed tables."""
    requests, request_index = _unique(t["requests"], "request_id")
    transcripts, transcript_index = _unique(t["transcripts"], "transcript_id")

    outbox = t["outbox"].sort_values("outbox_id", kind="stable").reset_index(drop=True)
    operation = Labels.of(outbox["operation"])
    supplier = operation.mask(*SUPPLIER_OPERATIONS)
    acks = operation.mask(ACK_OPERATION)
    target = np.full(len(outbox), -1, dtype=np.intp)
    target[supplier] = request_index.get_indexer(outbox["request_id"][supplier])
    target[acks] = transcript_index.get_indexer(outbox["request_id"][acks])
    outbox["target"] = target
    entries = _Entries(outbox["outbox_id"])

    responses = _pointing(t["responses"], entries, target, request_index)
    acknowledgments = t["acknowledgments"]
    direction = Labels.of(acknowledgments["direction"])
    acknowledgments = _pointing(acknowledgments, entries, target, request_index, transcript_index,
                                direction.mask("received"))  # fmt: skip
    order = np.argsort(acknowledgments["recorded_at"].to_numpy(dtype="datetime64[us]"),
                       kind="stable")  # fmt: skip
    # The store files a row even when the partner's reply held no acknowledgment it could
    # read (every field empty): that is no acknowledgment.
    readable = (
        acknowledgments["document_id"].notna()
        | acknowledgments["request_tracking_id"].notna()
        | acknowledgments["academic_award_total"].notna()
        | acknowledgments["course_total"].notna()
    ).to_numpy(dtype=bool)
    return Links(requests, transcripts, outbox, responses, acknowledgments, request_index,
                 transcript_index, operation, Labels.of(outbox["state"]), direction, order,
                 readable, t["versions"])  # fmt: skip


class _Entries:
    """Outbox row positions by ``outbox_id`` (a repeated id points at its last row)."""

    def __init__(self, ids: pd.Series) -> None:
        last = ~ids.duplicated(keep="last").to_numpy()
        self._index = pd.Index(ids[last])
        self._rows = np.flatnonzero(last)

    def get_indexer(self, ids: pd.Series) -> np.ndarray:
        found = self._index.get_indexer(ids)
        if not len(self._rows):
            return found  # all -1
        return np.where(found >= 0, self._rows[np.maximum(found, 0)], -1)


def _unique(frame: pd.DataFrame, id_column: str) -> tuple[pd.DataFrame, pd.Index]:
    index = pd.Index(frame[id_column])
    if not index.is_unique:
        frame = frame.drop_duplicates(id_column, keep="last").reset_index(drop=True)
        index = pd.Index(frame[id_column])
    return frame, index


def _pointing(
    frame: pd.DataFrame,
    entries: _Entries,
    outbox_target: np.ndarray,
    index: pd.Index,
    other: pd.Index | None = None,
    use_index: np.ndarray | None = None,
) -> pd.DataFrame:
    """``frame`` with ``entry`` (its outbox row) and ``target`` (its request or transcript).

    The target comes from the outbox entry; rows without one are looked up by ``request_id``
    (in ``index`` where ``use_index``, else in ``other``).
    """
    entry = entries.get_indexer(frame["outbox_id"]) if len(frame) else np.empty(0, np.intp)
    target = np.full(len(frame), -1, dtype=np.intp)
    target[entry >= 0] = outbox_target[entry[entry >= 0]]
    lost = entry < 0
    if lost.any():
        ids = frame["request_id"][lost]
        if other is None or use_index is None:
            target[lost] = index.get_indexer(ids)
        else:
            mine = use_index[lost]
            found = np.where(mine, index.get_indexer(ids), other.get_indexer(ids))
            target[lost] = found
    return frame.assign(entry=entry, target=target)


def last_per(keys: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Positions of the last row of each key (``keys < 0`` ignored), in ``order`` if given
    (else row order); rows are assumed to be in that order already when ``order`` is None."""
    rows = np.arange(len(keys)) if order is None else order
    ranked = keys[rows]
    keep = ranked >= 0
    rows, ranked = rows[keep], ranked[keep]
    last = ~pd.Series(ranked).duplicated(keep="last").to_numpy()
    return rows[last]


def scatter(n: int, positions: np.ndarray, values: pd.Series) -> pd.Series:
    """A column of ``n`` rows holding ``values[i]`` at row ``positions[i]``, missing elsewhere
    (``positions`` must be distinct)."""
    take = np.full(n, -1, dtype=np.intp)
    take[positions] = np.arange(len(positions))
    array = pd.api.extensions.take(values.array, take, allow_fill=True)
    return pd.Series(array, copy=False)


def pick(values: pd.Series, positions: np.ndarray) -> pd.Series:
    """``values`` at ``positions`` (``-1``: missing), as a new column."""
    return pd.Series(pd.api.extensions.take(values.array, positions, allow_fill=True), copy=False)
