"""The partner moves: simulated clock, determinism, persistence, things closed elsewhere."""

from __future__ import annotations

from tests.sandbox.wire import exchange, gateway, path, pescxml
from workbench import spec
from workbench.sandbox import serve


def _pending(sb):
    return [i.id for i in sb.state.listed(sb.state.requests)]


def _details(sb, template, ids, role):
    with exchange(sb, role) as client:
        return [pescxml(client.get(path(template, i)).json()[0]) for i in ids]


def test_same_seed_same_data(sandbox_factory):
    a, b = sandbox_factory(seed=11), sandbox_factory(seed=11)
    assert a.pending_request_ids() == b.pending_request_ids()
    assert a.pending_transcript_ids() == b.pending_transcript_ids()
    ids = a.pending_request_ids()[:5]
    assert _details(a, spec.SUPPLIER_REQUEST_PATH, ids, "supplier") == _details(
        b, spec.SUPPLIER_REQUEST_PATH, ids, "supplier"
    )
    a.advance(5)
    b.advance(5)
    assert a.pending_request_ids() == b.pending_request_ids()
    with gateway(a, "domestic") as ca, gateway(b, "domestic") as cb:
        assert ca.get(spec.PEEK_EVENTS_PATH).json() == cb.get(spec.PEEK_EVENTS_PATH).json()


def test_other_seed_other_data(sandbox_factory):
    assert (
        sandbox_factory(seed=1).pending_request_ids()
        != sandbox_factory(seed=2).pending_request_ids()
    )


def test_advance_brings_new_items_at_the_configured_rates(sandbox_factory):
    sb = sandbox_factory(
        requests_per_hour=2,
        transcripts_per_hour=1,
        closed_elsewhere_per_hour=0,
        placement_events_per_hour=1,
    )
    before = set(sb.pending_request_ids())
    added = sb.advance(3)
    assert added["request"] == 6 and added["transcript"] == 3
    after = set(sb.pending_request_ids())
    assert before < after and len(after - before) == 6
    assert len(sb.pending_transcript_ids()) == sb.settings.initial_transcripts + 3
    with exchange(sb, "supplier") as client:
        dates = [i["RequestDate"] for i in client.get(spec.SUPPLIER_PENDING_PATH).json()]
    assert dates == sorted(dates)
    assert dates[-1] > sb.settings.start.strftime("%Y-%m-%dT%H:%M")


def test_fractional_rates_accumulate(sandbox_factory):
    sb = sandbox_factory(requests_per_hour=0.5, closed_elsewhere_per_hour=0)
    counts = [sb.advance(1)["request"] for _ in range(4)]
    assert counts == [0, 1, 0, 1]


def test_requests_closed_elsewhere_leave_the_list(sandbox_factory):
    sb = sandbox_factory(requests_per_hour=0, closed_elsewhere_per_hour=1)
    before = set(sb.pending_request_ids())
    sb.advance(3)
    gone = before - set(sb.pending_request_ids())
    assert len(gone) == 3
    assert all(sb.state.requests[i].closed_by == "elsewhere" for i in gone)
    assert sb.received == []  # nobody here sent anything


def test_events_drain_as_the_clock_moves(sandbox_factory):
    sb = sandbox_factory(placement_events_per_hour=0, domestic_events_per_hour=0)
    with gateway(sb) as client:
        assert len(client.get(spec.PENDING_PLACEMENT_EVENTS_PATH).json()) == 6
    sb.advance(25)
    with gateway(sb) as client:  # a new token: the first expired as the clock moved a day
        assert client.get(spec.PENDING_PLACEMENT_EVENTS_PATH).json() == []


def test_state_persists_across_restarts(tmp_path):
    state = tmp_path / "sandbox.json"
    with serve(seed=4, state_path=str(state)) as sb:
        sb.advance(2)
        closed = _pending(sb)[0]
        with exchange(sb, "supplier") as client:
            document = client.get(path(spec.SUPPLIER_REQUEST_PATH, closed)).json()[0]
        sb.state.record_post("send_response", sb.state.requests[closed], "<x/>", "response")
        ids, now = _pending(sb), sb.state.now
    assert state.exists()
    with serve(seed=4, state_path=str(state)) as again:
        assert _pending(again) == ids
        assert again.state.now == now
        assert closed not in ids
        assert len(again.received) == 1
        with exchange(again, "supplier") as client:
            assert client.get(path(spec.SUPPLIER_REQUEST_PATH, closed)).json()[0] == document


def test_a_state_file_of_another_seed_is_refused(tmp_path):
    import pytest

    state = tmp_path / "sandbox.json"
    with serve(seed=4, state_path=str(state)):
        pass
    with pytest.raises(ValueError, match="another sandbox"), serve(seed=5, state_path=str(state)):
        pass


def test_large_sandboxes_start_quickly_and_lazily(sandbox_factory):
    sb = sandbox_factory(initial_requests=5000, initial_transcripts=5000)
    assert len(sb.pending_request_ids()) == 5000
    assert len(set(sb.pending_request_ids()) | set(sb.pending_transcript_ids())) == 10_000
