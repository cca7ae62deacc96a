"""Acknowledging a transcript re-issued after our acknowledgment is a new send, through the
sandbox: accepted without force, refused the second time, and reconciled as acknowledged."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from workbench import reconcile


@pytest.mark.parametrize("id_scheme", ["tracking", "guid"])
def test_a_reissued_transcript_is_acknowledged_again_without_force(
    sandbox_factory, tmp_path: Path, id_scheme: str
) -> None:
    sb = sandbox_factory(id_scheme=id_scheme, initial_requests=0, initial_transcripts=1,
                         requests_per_hour=0, transcripts_per_hour=0, closed_elsewhere_per_hour=0,
                         reissue_per_hour=0, resubmission_per_hour=0,
                         cancellation_per_hour=0)  # fmt: skip
    with wb.connect(env=sb.env, db=tmp_path / "acks.db") as w:
        w.pull(progress=False)
        transcript_id = sb.pending_transcript_ids()[0]
        w.consumer.send_acknowledgment(transcript_id)  # version 1
        sb.settings.reissue_per_hour = 1
        sb.advance(1)  # re-issued, and back on the list
        w.pull(progress=False)

        second = w.consumer.send_acknowledgment(transcript_id)  # version 2, no force
        with pytest.raises(wb.DuplicateSend, match="acknowledges DocumentID"):
            w.consumer.send_acknowledgment(transcript_id)
        w.pull(progress=False)
        r = reconcile.reconcile(reconcile.load(w.store), now=sb.state.now, sla_days=5)
        entry = w.store.db["outbox"].get(second.attrs["outbox_id"])
        versions = w.store.versions(transcript_id)

    assert (entry["state"], entry["forced"]) == ("sent", 0)
    assert list(versions["transmission_type"]) == ["Original", "Reissue"]
    posts = [
        p
        for p in sb.received
        if p["operation"] == "send_acknowledgment" and p["request_id"] == transcript_id
    ]
    assert len(posts) == 2
    row = r.transcripts.set_index("transcript_id").loc[transcript_id]
    assert (str(row["state"]), row["acknowledged_version"], bool(row["reissued_after_ack"])) == (
        "acknowledged",
        2,
        False,
    )
    assert not (r.exceptions["kind"] == "reissued_after_ack").any()
