"""Either id scheme: the API level joins by RequestID, the documents by their tracking id.

Under ``tracking`` the API id is the document's RequestTrackingID (OCAS' examples); under
``guid`` it is a GUID distinct from it (the spec's transcript detail). The same story gives
the same rows under both; only a document that contradicts what it answers is flagged.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from tests.reconcile.builders import NOW, Partner, request_flat, transcript_flat
from tests.students import of_student
from workbench import pesc, reconcile
from workbench.sandbox import Sandbox, generator
from workbench.store import Store

# name in the story -> (API id under "guid", tracking id); under "tracking" both are the latter
ITEMS = {
    "R-OK": ("6f1c2a3e-0000-4000-8000-00000000000a", "C2026030200001"),
    "R-WRONG": ("6f1c2a3e-0000-4000-8000-00000000000b", "C2026030200002"),
    "R-ACK-WRONG": ("6f1c2a3e-0000-4000-8000-00000000000c", "C2026030200003"),
    "T-OK": ("6f1c2a3e-0000-4000-8000-00000000000d", "C2026030250001"),
    "T-WRONG": ("6f1c2a3e-0000-4000-8000-00000000000e", "C2026030250002"),
}


@pytest.fixture(params=["tracking", "guid"])
def scheme(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def rec(scheme: str, partner: Partner) -> tuple[reconcile.Reconciliation, dict[str, str]]:
    api = {
        name: (guid if scheme == "guid" else tracking) for name, (guid, tracking) in ITEMS.items()
    }
    tracking = {name: t for name, (_, t) in ITEMS.items()}
    p = partner
    for name in ("R-OK", "R-WRONG", "R-ACK-WRONG"):
        p.request(api[name], flat=request_flat(api[name], request_tracking_id=tracking[name]))
    for name in ("T-OK", "T-WRONG"):
        flat = transcript_flat(api[name], request_tracking_id=tracking[name],
                               student_oen=tracking[name], student_last_name=name)  # fmt: skip
        p.transcript(api[name], flat=flat)
    p.respond(api["R-OK"], tracking=tracking["R-OK"])
    p.send_transcript(api["R-OK"], request_tracking_id=tracking["R-OK"],
                      ack_changes={"request_tracking_id": tracking["R-OK"]})  # fmt: skip
    p.respond(api["R-WRONG"], tracking=tracking["R-OK"])  # another request's tracking id
    p.send_transcript(api["R-ACK-WRONG"], request_tracking_id=tracking["R-ACK-WRONG"],
                      ack_changes={"request_tracking_id": tracking["R-OK"]})  # fmt: skip
    p.acknowledge(api["T-OK"], tracking=tracking["T-OK"])
    p.acknowledge(api["T-WRONG"], tracking=tracking["T-OK"])  # built from another transcript
    names = {v: k for k, v in api.items()}
    return reconcile.reconcile(reconcile.load(p.store), now=NOW, sla_days=5), names


def test_states_are_the_same_under_either_scheme(rec) -> None:
    r, names = rec
    requests = r.requests.assign(name=r.requests["request_id"].map(names)).set_index("name")
    transcripts = r.transcripts.assign(name=r.transcripts["transcript_id"].map(names))
    assert requests["state"].astype(str).to_dict() == {
        "R-OK": "acknowledged", "R-WRONG": "responded", "R-ACK-WRONG": "acknowledged",
    }  # fmt: skip
    assert transcripts.set_index("name")["state"].astype(str).to_dict() == {
        "T-OK": "acknowledged", "T-WRONG": "acknowledged",
    }  # fmt: skip


def test_only_contradicting_documents_are_flagged(rec) -> None:
    r, names = rec
    checks = r.checks[r.checks["check"] == "tracking_id"]
    rows = sorted(
        (names[i], side, subject, field, expected, found)
        for i, side, subject, field, expected, found in checks[
            ["id", "side", "subject", "field", "expected", "found"]
        ].itertuples(index=False)
    )
    assert rows == [
        ("R-ACK-WRONG", "supplier", "acknowledgment received", "request_tracking_id",
         "C2026030200003", "C2026030200001"),
        ("R-WRONG", "supplier", "response sent", "request_tracking_id", "C2026030200002",
         "C2026030200001"),
        ("T-WRONG", "consumer", "acknowledgment sent", "request_tracking_id", "C2026030250002",
         "C2026030250001"),
    ]  # fmt: skip
    mismatches = r.exceptions[r.exceptions["kind"] == "tracking_id_mismatch"]
    assert sorted(mismatches["id"].map(names)) == ["R-ACK-WRONG", "R-WRONG", "T-WRONG"]


# -- against the sandbox ---------------------------------------------------------------------


def _reconcile(w: wb.Workbench, sb: Sandbox) -> reconcile.Reconciliation:
    w.pull(progress=False)
    return reconcile.reconcile(reconcile.load(w.store), now=sb.state.now, sla_days=5)


@pytest.mark.parametrize("id_scheme", ["tracking", "guid"])
def test_round_trip_and_an_acknowledgment_of_each_version(
    sandbox_factory, tmp_path: Path, id_scheme: str
) -> None:
    """Supplier and consumer round trip, sends included; a transcript re-issued after our
    acknowledgment awaits ours again, and our second one acknowledges its second version."""
    sb = sandbox_factory(id_scheme=id_scheme, initial_requests=2, initial_transcripts=1,
                         requests_per_hour=0, transcripts_per_hour=0, closed_elsewhere_per_hour=0,
                         reissue_per_hour=0, resubmission_per_hour=0,
                         cancellation_per_hour=0)  # fmt: skip
    with wb.connect(env=sb.env, db=tmp_path / "x.db") as w:
        w.pull(progress=False)
        request_id = sb.pending_request_ids()[0]
        request = w.store.document(request_id)
        w.supplier.send_response(request_id, pesc.build_response(request, status="Hold"))
        tracking = sb.state.requests[request_id].tracking
        transcript = generator.college_transcript_xml(1, 900, request_id=tracking,
                                                      created=sb.state.now)  # fmt: skip
        w.supplier.send_transcript(request_id, of_student(transcript, request))
        transcript_id = sb.pending_transcript_ids()[0]
        w.consumer.send_acknowledgment(transcript_id)  # version 1, from the store
        first = _reconcile(w, sb)

        sb.settings.reissue_per_hour = 1
        sb.advance(1)  # the transcript is re-issued, and back on the list
        reissued = _reconcile(w, sb)
        w.consumer.send_acknowledgment(transcript_id, force=True)  # version 2, from the store
        second = _reconcile(w, sb)
        versions = w.store.versions(transcript_id)

    assert list(versions["version"]) == [1, 2]
    assert list(versions["transmission_type"])[-1] == "Reissue"
    rows = first.requests.set_index("request_id")
    assert str(rows.loc[request_id, "state"]) == "acknowledged"
    assert (request_id == tracking) == (id_scheme == "tracking")
    columns = ["state", "current_version", "acknowledged_version", "reissued_after_ack"]
    by_stage = [
        tuple(None if pd.isna(v) else str(v) for v in
              r.transcripts.set_index("transcript_id").loc[transcript_id, columns])
        for r in (first, reissued, second)
    ]  # fmt: skip
    assert by_stage == [
        ("acknowledged", "1", "1", "False"),
        ("awaiting_ack", "2", "1", "True"),
        ("acknowledged", "2", "2", "False"),
    ]
    for r in (first, reissued, second):
        assert not (r.checks["check"] == "tracking_id").any()
    kinds = set(zip(reissued.exceptions["kind"], reissued.exceptions["id"], strict=True))
    assert ("reissued_after_ack", transcript_id) in kinds
    acks = [r for r in sb.received if r["operation"] == "send_acknowledgment"]
    assert len(acks) == 2


def test_a_store_of_either_scheme_loads_its_versions(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.db") as store:
        tables = reconcile.load(store)
    assert list(tables["versions"].columns) == list(reconcile.TABLES["versions"])
    assert tables["versions"].empty
