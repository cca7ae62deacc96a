"""The client against partners it has never met: one flow, run against every answer to an open
point of DESIGN §3 alone and against seeded unknown partners (``unknown_partner(seed)``).

The flow is an analyst's day: doctor, a pull, the three sends (each taken exactly once, for the
interfaces the account has), a pull that sees them, eight hours at the partner, a pull, then
the reconciliation and events reports as their notebooks call them. Each partner starts with
one transcript, so the pull after its acknowledgment reads an empty list.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import workbench as wb
from tests.conftest import FAST
from tests.notebook_code import notebook_code
from workbench import pesc, reconcile, report
from workbench.cli.doctor import passed, render, run_checks
from workbench.sandbox import Sandbox, SandboxSettings
from workbench.scenario import transcript_for

# What every partner of these tests starts with besides its answers to the open points.
DATA = {"initial_transcripts": 1}


def live_a_day(sb: Sandbox, db: Path) -> None:
    """The flow against ``sb`` into the store ``db``, each step held to what the sandbox knows;
    fails the test at the first step that does not pass, saying why."""
    with wb.connect(env={**sb.env, **FAST}, db=db) as w:
        checks = run_checks(w)
        assert passed(checks), render(checks)
        _pull(w, sb)
        sent: dict[str, str] = {}  # operation -> request id
        if "supplier" in w.profile.interfaces:
            sent.update(_send_supplier(w))
        if "consumer" in w.profile.interfaces:
            sent.update(_send_acknowledgment(w))
        taken = [(r["operation"], r["request_id"]) for r in sb.received]
        assert Counter(taken) == Counter(sent.items()), taken  # each once, nothing else
        _pull(w, sb)
        sb.advance(hours=8)
        _pull(w, sb)
    summary = reports(db)
    assert summary["transcripts_sent"] == ("send_transcript" in sent)
    consumer = "consumer" in sb.settings.account
    assert summary["transcripts_received"] == (len(sb.state.transcripts) if consumer else 0)
    if sb.settings.account != ("international", "domestic"):  # documents were read
        assert summary["environment"] == sb.settings.process_code


def hides_events(settings: SandboxSettings, feed: int, *, peek_count: int = 100) -> bool:
    """Whether a partner of ``settings`` with ``feed`` domestic events hides some from every
    reader asking at most ``peek_count``: its peek keeps them and its feed is longer than the
    most it hands out. A pull then is ``partial``, and says so."""
    domestic = "domestic" in settings.account
    return domestic and not settings.peek_removes and feed > min(settings.max_peek_count,
                                                                 peek_count)  # fmt: skip


def _pull(w: wb.Workbench, sb: Sandbox) -> None:
    """A pull: ``ok``, or ``partial`` for events the partner hides (:func:`hides_events`);
    every event the partner lists (and hides not) stored."""
    account = sb.settings.account
    hidden = hides_events(sb.settings, len(sb.state.domestic_events),
                          peek_count=w.profile.peek_count)  # fmt: skip
    listed = [
        *(sb.state.placement_events if "international" in account else []),
        *(sb.state.domestic_events if "domestic" in account and not hidden else []),
    ]
    summary = w.pull(progress=False)
    if hidden:
        assert summary.status == "partial", str(summary)
        assert [(f["list"], f["id"]) for f in summary.failures] == [
            ("domestic_events", "(feed)")
        ], str(summary)
    else:
        assert summary.status == "ok", str(summary)
    stored = set(w.store.table("events")["event_key"])
    assert {e["eventId"] for e in listed} <= stored


def reports(db: Path) -> dict[str, Any]:
    """What ``notebooks/reconcile.ipynb`` and ``events.ipynb`` show, called in process: the
    reconciliation and events sections, as HTML; it returns the reconciliation's headline.
    Their charts, trends and changes since the previous pull (three quarters of a report's
    time) run in the slow tests, in the notebooks."""
    with report.open_store(db) as store:
        rec = reconcile.reconcile(reconcile.load(store))
        fresh = report.freshness(store, as_of=rec.now)
        shown = [
            report.freshness_section(fresh),
            report.headline_section(rec),
            report.exceptions_section(rec),
            notebook_code("reconcile").versions_overview_section(rec),
            report.organisations_section(rec),
            notebook_code("events").events_section(store),
            notebook_code("events").latest_events_section(store, 20),
        ]
        assert all(section.data for section in shown)
        return dict(rec.headline)


def _open_requests(w: wb.Workbench) -> list[str]:
    requests = w.store.table("open_requests")
    usable = requests[requests["has_detail"].astype(bool) & requests["parse_error"].isna()]
    return usable["request_id"].astype(str).tolist()


def _send_supplier(w: wb.Workbench) -> dict[str, str]:
    """A response (a hold) to one open request, a transcript to another: request ids by send."""
    first, second, *_ = _open_requests(w)
    document = w.store.document(first, list_name="supplier_requests")
    w.supplier.send_response(
        first, pesc.build_response(document, status="Hold", hold_reason="Financial")
    )
    document = w.store.document(second, list_name="supplier_requests")
    w.supplier.send_transcript(second, transcript_for(document, second))
    return {"send_response": first, "send_transcript": second}


def _send_acknowledgment(w: wb.Workbench) -> dict[str, str]:
    waiting = w.store.table("transcripts_awaiting_ack")
    transcript_id = str(waiting[waiting["has_detail"].astype(bool)]["transcript_id"].iloc[0])
    w.consumer.send_acknowledgment(transcript_id)
    return {"send_acknowledgment": transcript_id}
