"""`w.pull()` against the sandbox: incremental, history, departures, the outbox, partial runs.

Every test on ``connected`` runs under both of the sandbox's id schemes (the API id is the
tracking id, or a GUID distinct from it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import workbench as wb
import workbench.storing
from tests.students import of_student, request_xml
from tests.watched import secrets_of
from workbench import pesc
from workbench.cli import app
from workbench.sandbox import generator


@pytest.fixture(params=["tracking", "guid"])
def id_scheme(request) -> str:
    return str(request.param)


@pytest.fixture
def connected(sandbox_factory, connect_to, tmp_path: Path, id_scheme: str):
    """``connected(**sandbox_overrides)``: (sandbox, workbench on a fresh database)."""

    def make(**overrides):
        sb = sandbox_factory(**{"id_scheme": id_scheme, **overrides})
        return sb, connect_to(sb, db=tmp_path / f"{sb.port}.sqlite")

    return make


def _calls(w, run_id: int) -> list[str]:
    return list(w.store.table("calls", where="run_id = ?", params=[run_id])["operation"])


def _ids(w, table: str, column: str, *, where: str = "1") -> set[str]:
    return set(w.store.table(table, where=where)[column])


def test_first_pull_stores_every_list_and_detail_then_only_lists(connected):
    sb, w = connected()
    first = w.pull(progress=False)
    assert first.status == "ok"
    assert first.lists["supplier_requests"].details_fetched == 25
    assert first.lists["consumer_transcripts"].details_fetched == 15
    assert _ids(w, "transcript_requests", "request_id") == set(sb.pending_request_ids())
    assert _ids(w, "transcripts_received", "transcript_id") == set(sb.pending_transcript_ids())
    assert len(w.store.table("courses")) > 15
    assert len(w.store.table("events")) == 36

    second = w.pull(progress=False)
    operations = _calls(w, second.run_id)
    assert not [o for o in operations if o.endswith("pull_detail")]
    assert len([o for o in operations if o != "token"]) == 4  # two lists, two event feeds
    assert second.lists["supplier_requests"].new == 0


def test_incremental_pulls_follow_a_moving_partner(connected):
    sb, w = connected(requests_per_hour=2, transcripts_per_hour=1, closed_elsewhere_per_hour=0)
    w.pull(progress=False)
    sb.advance(3)
    second = w.pull(progress=False)
    assert second.lists["supplier_requests"].new == 6
    assert second.lists["supplier_requests"].details_fetched == 6
    assert second.lists["consumer_transcripts"].details_fetched == 3
    details = [o for o in _calls(w, second.run_id) if o.endswith("pull_detail")]
    assert len(details) == 9
    diff = w.store.diff(second.run_id - 1, second.run_id)
    appeared = diff[(diff["list"] == "supplier_requests") & (diff["change"] == "appeared")]
    assert len(appeared) == 6


def test_departures_say_who_closed_them(connected):
    sb, w = connected(requests_per_hour=0, closed_elsewhere_per_hour=0)
    w.pull(progress=False)
    ours = sb.pending_request_ids()[0]
    request = w.supplier.request(ours)
    w.supplier.send_response(ours, pesc.build_response(request.loc[0, "pescxml"], status="Hold",
                                                       hold_reason="Financial"))  # fmt: skip
    sb.settings.closed_elsewhere_per_hour = 1
    sb.advance(1)
    theirs = (set(w.store.table("transcript_requests")["request_id"])
              - set(sb.pending_request_ids()) - {ours})  # fmt: skip
    assert len(theirs) == 1
    summary = w.pull(progress=False)
    assert summary.lists["supplier_requests"].closed_by_us == 1
    assert summary.lists["supplier_requests"].closed_elsewhere == 1
    rows = w.store.table("transcript_requests").set_index("request_id")
    assert rows.loc[ours, "left_reason"] == "outbox"
    assert rows.loc[theirs.pop(), "left_reason"] == "elsewhere"
    timeline = w.store.timeline(ours)
    assert len(timeline) >= 3  # listed, detail, the send (and its call)


def _transcript_for(sb, request_id: str) -> str:
    """A CollegeTranscript answering the request ``request_id`` (its tracking id, not its API
    id)."""
    tracking = sb.state.requests[request_id].tracking
    xml = generator.college_transcript_xml(
        5, 1, request_id=tracking, created=sb.state.now, namespaces=sb.settings.namespaces
    )
    return of_student(xml, request_xml(sb, request_id))


def test_outbox_sent_duplicate_forced(connected):
    sb, w = connected()
    request_id = sb.pending_request_ids()[0]
    ack = w.supplier.send_transcript(request_id, _transcript_for(sb, request_id))
    assert ack.loc[0, "message_type"] == "Acknowledgment"
    assert ack.attrs["call_id"] is not None
    with pytest.raises(wb.DuplicateSend, match="force=True"):
        w.supplier.send_transcript(request_id, _transcript_for(sb, request_id))
    assert len(sb.received) == 1  # refused before any byte left
    w.supplier.send_transcript(request_id, _transcript_for(sb, request_id), force=True)
    assert len(sb.received) == 2
    outbox = w.store.table("outbox")
    assert list(outbox["state"]) == ["sent", "sent"]
    acks = w.store.table("acknowledgments")
    assert len(acks) == 2 and set(acks["course_total"].astype(int)) == {
        len(pesc.records(_transcript_for(sb, request_id))["courses"])
    }


def test_outbox_failed_send_can_be_sent_again(connected):
    sb, w = connected()
    request_id = sb.pending_request_ids()[0]
    sb.set_faults(error_rate=0.0)
    wrong_root = pesc.build_acknowledgment(_transcript_for(sb, request_id))
    with pytest.raises(wb.InvalidValue):  # refused locally: the wrong message type
        w.supplier.send_transcript(request_id, wrong_root)
    assert w.store.table("outbox").empty  # nothing was even attempted
    transcript = _transcript_for(sb, request_id)
    w.pull(progress=False)  # the store holds the request it answers (under either id scheme)
    sb.state.requests.pop(request_id)  # the partner forgets it: its 400 is a failed send
    with pytest.raises(wb.NotFound):
        w.supplier.send_transcript(request_id, transcript)
    assert list(w.store.table("outbox")["state"]) == ["failed"]


def test_outbox_uncertain_send_is_settled_by_the_next_pull_not_resent(connected):
    sb, w = connected()
    w.pull(progress=False)
    request_id = sb.pending_request_ids()[0]
    sb.set_faults(drop_after_rate=1.0)  # the partner processes it, the answer never comes
    with pytest.raises(wb.TransportError, match="may or may not have processed"):
        w.supplier.send_transcript(request_id, _transcript_for(sb, request_id))
    sb.set_faults(drop_after_rate=0.0)
    assert list(w.store.table("outbox")["state"]) == ["uncertain"]
    with pytest.raises(wb.DuplicateSend):  # an uncertain send blocks a blind resend
        w.supplier.send_transcript(request_id, _transcript_for(sb, request_id))
    w.pull(progress=False)
    assert list(w.store.table("outbox")["state"]) == ["sent"]
    assert len(sb.received) == 1


def test_read_only_profile_refuses_sends_and_stays_read_only(sandbox, tmp_path):
    with wb.connect(env=sandbox.env, db=tmp_path / "ro.db", read_only=True) as w:
        request_id = sandbox.pending_request_ids()[0]
        with pytest.raises(wb.ConfigError, match="read-only"):
            w.supplier.send_transcript(request_id, _transcript_for(sandbox, request_id))
    assert sandbox.received == []
    assert not (tmp_path / "ro.db").exists()


DETAILS = r"/api/transcriptrequests/[0-9a-f-]{32,36}$"  # either id scheme


@pytest.mark.parametrize("process_from", [500, 1], ids=["thread", "process"])
def test_failed_details_make_a_partial_run_and_are_retried(connected, monkeypatch, process_from):
    monkeypatch.setattr(workbench.storing, "PROCESS_FROM", process_from)  # who stores them
    sb, w = connected(initial_requests=12, initial_transcripts=3)
    sb.set_faults(error_rate=1.0, path_pattern=DETAILS)  # lists answer, request details fail
    summary = w.pull(progress=False)
    assert summary.status == "partial"
    assert summary.lists["supplier_requests"].details_failed == 12
    assert summary.lists["consumer_transcripts"].details_fetched == 3
    assert {f["id"] for f in summary.failures} == set(sb.pending_request_ids())
    assert len(w.store.table("detail_failures")) == 12
    sb.set_faults(error_rate=0.0)
    again = w.pull(progress=False)
    assert again.status == "ok"
    assert again.lists["supplier_requests"].details_fetched == 12
    stored = w.store.table("transcript_requests")
    assert set(stored["request_id"]) == set(sb.pending_request_ids())
    assert stored["detail_call_id"].notna().all()
    runs = w.store.table("runs")
    assert list(runs["status"]) == ["partial", "ok"]


def test_cli_pull_exit_codes(sandbox_factory, tmp_path, monkeypatch, id_scheme):
    sb = sandbox_factory(id_scheme=id_scheme)
    for name, value in sb.env.items():
        monkeypatch.setenv(name, value)
    runner = CliRunner()
    db = str(tmp_path / "cli.db")
    ok = runner.invoke(app, ["pull", "--db", db])
    assert ok.exit_code == 0, ok.output
    assert "supplier_requests" in ok.output
    monkeypatch.setenv("WORKBENCH_MAX_ATTEMPTS", "1")
    sb.set_faults(error_rate=1.0, path_pattern=DETAILS)
    sb.advance(4)  # new requests, whose details will fail
    partial = runner.invoke(app, ["pull", "--db", db])
    assert partial.exit_code == 1
    assert "partial" in partial.output
    assert "--allow-partial accepts a partial pull" in partial.stderr  # what to do about it
    allowed = runner.invoke(app, ["pull", "--db", db, "--allow-partial"])
    assert allowed.exit_code == 0, allowed.output


def test_a_pull_that_reads_nothing_failed_even_with_allow_partial(
    sandbox_factory, tmp_path, monkeypatch
):
    down = sandbox_factory()
    down.stop()  # every call is refused at once
    for name, value in down.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("WORKBENCH_MAX_ATTEMPTS", "1")
    db = str(tmp_path / "down.db")
    for extra in ([], ["--allow-partial"]):
        result = CliRunner().invoke(app, ["pull", "--db", db, *extra])
        assert result.exit_code == 1, result.output
        assert "The pull failed: no list or event feed could be read" in result.stderr
    with wb.connect(env=down.env, db=db) as w:
        assert list(w.store.table("runs")["status"]) == ["failed", "failed"]


def test_one_list_failing_is_partial(connected):
    sb, w = connected(initial_requests=3, initial_transcripts=3)
    sb.set_faults(error_rate=1.0, path_pattern=r"/transcripts/no_response$")
    summary = w.pull(progress=False)
    assert summary.status == "partial"
    assert summary.lists["consumer_transcripts"].error
    assert summary.lists["supplier_requests"].details_fetched == 3


def test_the_database_holds_no_secret_and_no_token(connected, tmp_path):
    sb, w = connected()
    w.pull(progress=False)
    request_id = sb.pending_request_ids()[0]
    w.supplier.send_transcript(request_id, _transcript_for(sb, request_id))
    w.consumer.send_acknowledgment(sb.pending_transcript_ids()[0])
    w.pull(progress=False)
    w.close()
    secrets = secrets_of(sb.credentials) + sb.issued_tokens
    assert len(sb.issued_tokens) >= 4
    for path in tmp_path.glob("db0.sqlite*"):
        data = path.read_bytes()
        leaked = [s[:12] for s in secrets if s.encode() in data]
        assert leaked == [], f"{path.name} holds secrets starting {leaked}"


def test_documents_are_validated_when_schemas_are_configured(connected, xsd_dir, monkeypatch):
    monkeypatch.setenv("WORKBENCH_PESC_SCHEMAS", str(xsd_dir))
    _, w = connected(invalid_share=0.3, malformed_share=0.1, initial_requests=30)
    assert w.pull(progress=False).status == "ok"  # bad documents are stored, never dropped
    rows = w.store.table("transcript_requests")
    validation = w.store.current_documents("supplier_requests")["validation"]
    statuses = [json.loads(v)["status"] for v in validation]
    assert set(statuses) == {"valid", "invalid"}
    assert rows["parse_error"].notna().sum() >= 1  # the malformed ones, kept with the reason
    assert len(rows) == 30


def test_a_detail_that_cannot_be_processed_fails_alone_and_is_retried(connected):
    sb, w = connected(initial_requests=6, initial_transcripts=2)
    broken = sb.pending_request_ids()[2]
    prepare = w.store.prepare_detail

    def failing_for_one(list_name, item_id, **values):  # a bug that hits one document only
        if item_id == broken:
            raise RuntimeError("cannot lay this one out")
        return prepare(list_name, item_id, **values)

    w.store.prepare_detail = failing_for_one
    summary = w.pull(progress=False)
    assert summary.status == "partial"
    assert summary.failures == [
        {
            "list": "supplier_requests",
            "id": broken,
            "error": "RuntimeError: cannot lay this one out",
        }
    ]
    assert summary.lists["supplier_requests"].details_fetched == 5
    del w.store.prepare_detail
    again = w.pull(progress=False)
    assert again.status == "ok" and again.lists["supplier_requests"].details_fetched == 1
    assert broken in _ids(
        w, "transcript_requests", "request_id", where="detail_call_id IS NOT NULL"
    )


def test_a_detail_that_cannot_be_written_is_never_counted_as_stored(connected, exchanges):
    sb, w = connected(initial_requests=6, initial_transcripts=2)
    broken = sb.pending_request_ids()[3]
    write = w.store.write_details

    def refusing_one(prepared):  # any failure of a write, not only the store's own errors
        prepared = list(prepared)
        if any(p.item_id == broken for p in prepared):
            raise RuntimeError("the write failed")
        return write(prepared)

    w.store.write_details = refusing_one
    summary = w.pull(progress=False)
    assert summary.status == "partial"
    assert [f["id"] for f in summary.failures] == [broken]
    stored = _ids(w, "transcript_requests", "request_id", where="detail_call_id IS NOT NULL")
    assert summary.lists["supplier_requests"].details_fetched == len(stored) == 5
    assert broken not in stored
    # Its call is recorded once, by the store and by the caller's recorder alike.
    calls = w.store.table("calls", where="operation = 'supplier.pull_detail'")
    assert [url for url in calls["url"] if broken in url] != []
    assert len([url for url in calls["url"] if broken in url]) == 1
    given = [e.url for e in exchanges if e.operation == "supplier.pull_detail" and broken in e.url]
    assert len(given) == 1


def test_the_closing_failed_lines_name_every_list_that_failed_and_every_item() -> None:
    from workbench.pull import LIST_FAILED, ListResult, PullSummary

    summary = PullSummary(run_id=3, status="partial")
    summary.lists["supplier_requests"] = ListResult(listed=2, details_fetched=1, details_failed=1)
    error = "PartnerError: 503 twice\x1b[2J"
    summary.lists["domestic_events"] = ListResult(error=error)
    # the run's stored summary holds the list's failure too: said once, not twice
    summary.failures.append({"list": "domestic_events", "id": LIST_FAILED, "error": error})
    summary.failures.append({"list": "supplier_requests", "id": "R-1", "error": "timed out"})
    lines = str(summary).splitlines()
    failed = [line.strip() for line in lines if line.strip().startswith("failed:")]
    assert failed == [
        "failed: domestic_events: PartnerError: 503 twice\\x1b[2J",
        "failed: supplier_requests R-1: timed out",
    ]
    assert any(line.split() == ["domestic_events", "FAILED", "(below)"] for line in lines)
