"""Document versions: which version of a transcript an acknowledgment of ours acknowledges.

One id carries several documents over time (TransmissionType Original, Resubmission, Reissue,
Cancellation), each with its own DocumentID: the ``versions`` table. An acknowledgment copies
the DocumentID of the transcript it acknowledges (``pesc/NOTES.md`` §6), so it is matched to
the version with that DocumentID received before it (a re-issue may reuse the DocumentID,
``pesc/NOTES.md`` §2); one that names none of them acknowledges the latest version received
before it was created.
"""

from __future__ import annotations

import pandas as pd

from workbench.reconcile.inputs import COUNT

RECEIVED = "transcripts_received"  # the ``versions.entity`` of transcripts received


def acknowledged_versions(acks: pd.DataFrame, versions: pd.DataFrame) -> pd.Series:
    """The version each acknowledgment acknowledges (missing where no version is known).

    Only versions received before the acknowledgment was created count: the latest with its
    DocumentID, else the latest of any. When none was received before it (acknowledged from a
    fetched detail before a pull stored it), the first version with its DocumentID.

    ``acks``: outbox rows of ``send_acknowledgment`` (``request_id``, ``sent_document_id``,
    ``created_at``); the result has their index.
    """
    sent = acks[["request_id", "sent_document_id", "created_at"]].assign(row=range(len(acks)))
    received = versions.loc[versions["entity"] == RECEIVED,
                            ["item_id", "version", "document_id", "first_seen_at"]]  # fmt: skip
    pairs = sent.merge(received, left_on="request_id", right_on="item_id")
    # Missing DocumentIDs would match each other: only named documents are compared.
    named = (pairs["sent_document_id"] == pairs["document_id"]).fillna(False).astype(bool)
    before = (pairs["first_seen_at"] <= pairs["created_at"]).fillna(False).astype(bool)
    by_document = pairs[named & before].groupby("row")["version"].max()
    latest_before = pairs[before].groupby("row")["version"].max()
    first_named = pairs[named].groupby("row")["version"].min()
    rows = pd.RangeIndex(len(acks))
    version = (
        by_document.reindex(rows)
        .fillna(latest_before.reindex(rows))
        .fillna(first_named.reindex(rows))
    )
    return pd.Series(version.to_numpy(), index=acks.index).astype(COUNT)
