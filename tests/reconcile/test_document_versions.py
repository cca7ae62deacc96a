"""Document versions: each version state, from a crafted store, with exactly its rows.

An acknowledgment is matched to the version it acknowledges (its DocumentID, else the latest
version received before it); a transcript re-issued after our acknowledgment awaits one again;
a Cancellation closes a request (no SLA exception).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from tests.reconcile.builders import NOW, Partner, transcript_flat
from workbench import reconcile
from workbench.reconcile.lifecycles import acknowledged_versions

TRANSCRIPT = ["state", "current_version", "version_count", "transmission_type",
              "acknowledged_version", "reissued_after_ack", "sla_breached"]  # fmt: skip
REQUEST = ["state", "current_version", "version_count", "transmission_type", "sla_breached"]


def _rows(frame: pd.DataFrame, columns: list[str]) -> dict[str, tuple]:
    return {
        str(i): tuple(None if pd.isna(v) else v for v in row)
        for i, row in zip(frame.index, frame[columns].itertuples(index=False), strict=True)
    }


# How long after the story is built its re-issues are seen (after every send of ours). Taken when
# the story is built, not when the module is imported: a loaded run can start it minutes later.
LATER_BY = timedelta(minutes=5)


@pytest.fixture(scope="module")
def rec(story: Partner) -> reconcile.Reconciliation:
    return reconcile.reconcile(reconcile.load(story.store), now=NOW, sla_days=5)


@pytest.fixture(scope="module")
def story(module_partner: Callable[[], Partner]) -> Partner:
    p = module_partner()
    later = p.later = datetime.now(UTC) + LATER_BY  # type: ignore[attr-defined]
    unique = iter(range(100_000_000, 100_000_100))
    transcript = p.transcript

    def one_student(transcript_id: str, **kw: object) -> None:  # no two name one student
        student = {"student_oen": str(next(unique)), "student_last_name": f"N{next(unique)}"}
        source = {"source_org_id": "354540", "source_org_name": "St. Brendan's College"}
        transcript(transcript_id, flat=transcript_flat(transcript_id, **source, **student), **kw)

    p.transcript = one_student  # type: ignore[method-assign]
    # -- transcripts received ---------------------------------------------------------------
    p.transcript("T-WAIT")  # one version, no acknowledgment
    p.transcript("T-ACKED")  # one version, acknowledged
    p.acknowledge("T-ACKED")  # its DocumentID is the transcript's (ct-T-ACKED)
    p.transcript("T-REISSUED", days=9)  # acknowledged, then re-issued while still listed
    p.acknowledge("T-REISSUED")
    p.new_version("T-REISSUED", "Reissue", days=7)
    p.transcript("T-BACK", days=3)  # acknowledged, left the list, re-issued: back on it
    p.acknowledge("T-BACK")
    p.list_transcripts("T-WAIT", "T-ACKED", "T-REISSUED")
    p.new_version("T-BACK", "Reissue", days=0.5)
    p.transcript("T-V2-ACKED", days=2)  # re-issued, then its new version acknowledged
    second = p.new_version("T-V2-ACKED", "Reissue", days=1)
    p.acknowledge("T-V2-ACKED", document_id=second)
    p.transcript("T-V1-LATE", days=2)  # re-issued; our late acknowledgment names version 1
    p.new_version("T-V1-LATE", "Reissue", days=1)
    p.acknowledge("T-V1-LATE")
    p.transcript("T-NAMELESS", days=2)  # re-issued; our ack names no version: the latest
    p.new_version("T-NAMELESS", "Reissue", days=1)
    p.acknowledge("T-NAMELESS", document_id="ack-of-our-own")
    p.transcript("T-NAMELESS-OLD", days=2)  # ...the latest before it was sent
    p.acknowledge("T-NAMELESS-OLD", document_id="ack-of-our-own")
    p.new_version("T-NAMELESS-OLD", "Reissue", days=1, seen_at=later)
    p.transcript("T-SAME-DOCID", days=2)  # acknowledged; re-issued under the same DocumentID
    p.acknowledge("T-SAME-DOCID")
    p.new_version("T-SAME-DOCID", "Reissue", days=1, seen_at=later, document_id="ct-T-SAME-DOCID")
    p.transcript("T-REISSUED-UNSURE", days=2)  # re-issued; our new acknowledgment uncertain
    p.acknowledge("T-REISSUED-UNSURE")
    p.new_version("T-REISSUED-UNSURE", "Reissue", days=1)
    # -- requests ---------------------------------------------------------------------------
    p.request("R-RESUBMITTED", days=2)
    p.new_version("R-RESUBMITTED", "Resubmission", days=1)
    p.request("R-CANCELLED", days=9)  # cancelled, still listed: closed, no SLA
    p.new_version("R-CANCELLED", "Cancellation", days=8)
    p.request("R-CANCELLED-GONE", days=9)  # cancelled, then off the list
    p.new_version("R-CANCELLED-GONE", "Cancellation", days=8)
    p.request("R-RESPONDED-CANCELLED", days=3)  # we responded; then the partner cancelled
    p.respond("R-RESPONDED-CANCELLED", "Hold", hold_reason="Financial")
    p.new_version("R-RESPONDED-CANCELLED", "Cancellation", days=1)
    p.request("R-LATE", days=9)  # one version, awaiting our response past the SLA
    listed = ["T-WAIT", "T-ACKED", "T-REISSUED", "T-BACK", "T-V2-ACKED", "T-V1-LATE",
              "T-NAMELESS", "T-NAMELESS-OLD", "T-SAME-DOCID", "T-REISSUED-UNSURE"]  # fmt: skip
    p.list_transcripts(*listed)
    p.list_requests("R-RESUBMITTED", "R-CANCELLED", "R-RESPONDED-CANCELLED", "R-LATE")
    p.acknowledge("T-REISSUED-UNSURE", state="uncertain")  # no list requested since
    return p


def test_transcripts_by_version_state(rec: reconcile.Reconciliation) -> None:
    transcripts = rec.transcripts.set_index("transcript_id")
    assert _rows(transcripts, TRANSCRIPT) == {
        "T-WAIT": ("awaiting_ack", 1, 1, None, None, False, False),
        "T-ACKED": ("acknowledged", 1, 1, None, 1, False, False),
        "T-REISSUED": ("awaiting_ack", 2, 2, "Reissue", 1, True, True),
        "T-BACK": ("awaiting_ack", 2, 2, "Reissue", 1, True, False),
        "T-V2-ACKED": ("acknowledged", 2, 2, "Reissue", 2, False, False),
        "T-V1-LATE": ("awaiting_ack", 2, 2, "Reissue", 1, True, False),
        "T-NAMELESS": ("acknowledged", 2, 2, "Reissue", 2, False, False),
        "T-NAMELESS-OLD": ("awaiting_ack", 2, 2, "Reissue", 1, True, False),
        "T-SAME-DOCID": ("awaiting_ack", 2, 2, "Reissue", 1, True, False),
        "T-REISSUED-UNSURE": ("ack_uncertain", 2, 2, "Reissue", 1, True, False),
    }  # fmt: skip
    assert bool(transcripts.loc["T-BACK", "on_list"])


def test_requests_by_version_state(rec: reconcile.Reconciliation) -> None:
    requests = rec.requests.set_index("request_id")
    assert _rows(requests, REQUEST) == {
        "R-RESUBMITTED": ("awaiting_response", 2, 2, "Resubmission", False),
        "R-CANCELLED": ("cancelled", 2, 2, "Cancellation", False),
        "R-CANCELLED-GONE": ("cancelled", 2, 2, "Cancellation", False),
        "R-RESPONDED-CANCELLED": ("cancelled", 2, 2, "Cancellation", False),
        "R-LATE": ("awaiting_response", 1, 1, None, True),
    }  # fmt: skip
    cancelled = requests["state"] == "cancelled"
    assert requests.loc[cancelled, "cancelled_at"].notna().all()
    assert requests.loc[~cancelled, "cancelled_at"].isna().all()


def test_exceptions_of_versions(rec: reconcile.Reconciliation) -> None:
    ex = rec.exceptions
    rows = sorted(zip(ex["kind"], ex["id"], ex["severity"].astype(str), strict=True))
    assert rows == sorted(
        [
            ("reissued_after_ack", "T-REISSUED", "medium"),
            ("reissued_after_ack", "T-BACK", "medium"),
            ("reissued_after_ack", "T-V1-LATE", "medium"),
            ("reissued_after_ack", "T-NAMELESS-OLD", "medium"),
            ("reissued_after_ack", "T-SAME-DOCID", "medium"),
            ("ack_overdue", "T-REISSUED", "medium"),
            ("uncertain_send", "T-REISSUED-UNSURE", "high"),
            ("response_overdue", "R-LATE", "medium"),
        ]
    )  # a cancelled request is closed: no response_overdue, however old
    row = ex[(ex["kind"] == "reissued_after_ack") & (ex["id"] == "T-REISSUED")].iloc[0]
    assert "Version 2 (Reissue) arrived after our acknowledgment of version 1" in row["detail"]
    assert "`w.consumer.send_acknowledgment('T-REISSUED')`" in row["suggested_action"]
    assert "force" not in row["suggested_action"]  # a new version is a new send
    assert rec.headline["transcripts_awaiting_ack"] == 6  # the re-issued ones await ours again


def test_checks_of_versions(rec: reconcile.Reconciliation) -> None:
    """An acknowledgment of an older version is no contradiction: no check fails for it."""
    assert rec.checks[rec.checks["check"] != "sla"].empty
    assert sorted(rec.checks["id"]) == ["R-LATE", "T-REISSUED"]


def test_version_columns_have_the_contracts_dtypes(rec: reconcile.Reconciliation) -> None:
    assert rec.transcripts["acknowledged_version"].dtype == "Int64"
    assert rec.transcripts["reissued_after_ack"].dtype == "boolean"


def test_as_of_a_moment_before_a_version_it_is_not_current_yet(story: Partner) -> None:
    before = story.later - timedelta(minutes=1)  # type: ignore[attr-defined]  # after our ack, before the reissue
    tables = reconcile.load(story.store, as_of=before)
    transcripts = reconcile.reconcile(tables, now=NOW, sla_days=5).transcripts
    row = transcripts.set_index("transcript_id").loc["T-NAMELESS-OLD"]
    assert (row["state"], row["current_version"], row["version_count"]) == ("acknowledged", 1, 1)
    assert row["acknowledged_version"] == 1 and not row["reissued_after_ack"]
    assert tables["versions"]["first_seen_at"].max() <= pd.Timestamp(before)
    requests = reconcile.reconcile(tables, now=NOW, sla_days=5).requests.set_index("request_id")
    assert requests.loc["R-CANCELLED", "state"] == "cancelled"  # cancelled long before


def test_an_acknowledgment_sent_before_any_version_was_stored_names_its_own() -> None:
    """Acknowledged from a fetched detail before a pull stored it: its DocumentID's first
    version; an acknowledgment naming none of them acknowledges no known version."""
    sent = pd.Timestamp("2026-03-02T09:00:00Z")
    acks = pd.DataFrame(
        {"request_id": ["T-1", "T-1"], "sent_document_id": ["CT-1", "ours"],
         "created_at": [sent, sent]}, index=[7, 8],
    )  # fmt: skip
    versions = pd.DataFrame(
        {"entity": "transcripts_received", "item_id": "T-1", "version": [1, 2],
         "document_id": ["CT-1", "CT-1"], "first_seen_at": [sent + pd.Timedelta(minutes=m)
                                                            for m in (1, 2)]}
    )  # fmt: skip

    found = acknowledged_versions(acks, versions)

    assert found.index.tolist() == [7, 8]
    assert found.tolist() == [1, pd.NA]
