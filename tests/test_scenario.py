"""The demo's morning of work gives a reconciliation with every common kind of row."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import workbench as wb
from workbench import reconcile
from workbench.sandbox import SandboxSettings
from workbench.sandbox.runner import with_overrides
from workbench.scenario import RESPONSES, TRANSCRIPTS, act_out


@pytest.mark.slow
def test_act_out_sends_a_mix_that_reconciles_into_every_common_state(tmp_path: Path) -> None:
    settings = with_overrides(
        SandboxSettings(start=datetime.now(UTC).replace(microsecond=0)), ack_miscount_rate=0.5
    )
    with wb.connect("sandbox", db=tmp_path / "w.db", sandbox=settings) as w:
        w.pull(progress=False)
        acted = act_out(w)
        assert w.sandbox is not None
        sent = len(w.sandbox.received)
        w.pull(progress=False)
        rec = reconcile.reconcile(reconcile.load(w.store), now=w.sandbox.state.now)

    assert len(acted["response"]) == len(RESPONSES)
    assert len(acted["transcript"]) == TRANSCRIPTS
    assert len(acted["transcript_uncertain"]) == 1  # its answer was lost on the way back
    # every send reached the partner exactly once, the lost one included, and none was resent
    assert sent == sum(len(ids) for ids in acted.values())
    states = rec.requests.set_index("request_id")["state"].astype(str)
    assert {states[i] for i in acted["response"]} == {"responded"}
    assert {states[i] for i in acted["transcript"]} <= {"acknowledged", "ack_mismatch"}
    assert "ack_mismatch" in set(states)  # the partner miscounted half of its acknowledgments
    assert states[acted["transcript_uncertain"][0]] == "transcript_sent"  # settled by the pull
    kinds = set(zip(rec.exceptions["kind"], rec.exceptions["id"], strict=True))
    assert ("identity_mismatch", acted["transcript_wrong_student"][0]) in kinds
    assert any(kind == "hold_overdue" for kind, _ in kinds)  # planned release already past
    consumer = rec.transcripts.set_index("transcript_id")["state"].astype(str)
    assert {consumer[i] for i in acted["acknowledgment"]} == {"acknowledged"}
    assert rec.headline["responses_by_status"] == {
        "Hold": 2, "TranscriptRequestReceived": 1, "NoRecord": 1}  # fmt: skip


@pytest.mark.parametrize("process_code", ["TEST", "PRODUCTION"])
def test_act_out_sends_every_document_in_the_partners_environment(
    tmp_path: Path, process_code: str
) -> None:
    settings = SandboxSettings(process_code=process_code)
    with wb.connect("sandbox", db=tmp_path / "w.db", sandbox=settings) as w:
        w.pull(progress=False)
        acted = act_out(w)
        assert w.sandbox is not None
        sent = [wb.pesc.flatten(d["payload"]) for d in w.sandbox.state.documents]
    assert len(sent) == sum(len(ids) for ids in acted.values())
    assert {d["process_code"] for d in sent} == {process_code}
