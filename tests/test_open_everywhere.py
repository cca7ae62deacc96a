"""One meaning of "open" (``reconcile.OPEN_STATES``): the store's view, the explorer, ``workbench
export``, Datasette's canned query, the report's figures and its spreadsheet count the same
requests; a request we answered that the partner still lists is ``answered_still_listed``
everywhere, never open."""

from __future__ import annotations

import csv
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from typer.testing import CliRunner

import workbench as wb
from workbench import reconcile
from workbench.cli import app
from workbench.errors import TransportError
from workbench.explorer import DEFAULT_SOURCE, Source, load_rows
from workbench.reconcile import open_items
from workbench.sandbox import Sandbox
from workbench.scenario import act_out, transcript_for
from workbench.store import Store
from workbench.store.metadata import query_sql


def _canned(db: Path, name: str, **params: str) -> set[str]:
    """A canned query's request ids, run read-only as Datasette runs it."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        sql = query_sql(name)
        wanted = {p: params.get(p, "") for p in ("sla_days", "request_id") if f":{p}" in sql}
        return {str(row[0]) for row in conn.execute(sql, wanted)}


def _exported(db: Path, name: str, out: Path) -> set[str]:
    env = {k: None for k in os.environ if k.startswith("WORKBENCH_")}
    done = CliRunner().invoke(
        app, ["export", name, "--db", str(db), "--out", str(out), "--force"], env=env
    )
    assert done.exit_code == 0, done.output
    with out.open(encoding="utf-8", newline="") as f:
        return {row["request_id"] for row in csv.DictReader(f)}


def _everywhere(db: Path, tmp_path: Path) -> tuple[set[str], set[str]]:
    """The open requests and those answered but still listed, checked equal on every surface."""
    with Store(db, read_only=True) as store:
        view = set(store.table("open_requests")["request_id"].astype(str))
        still = set(store.table("answered_still_listed")["request_id"].astype(str))
        assert Source("view", "open_requests") == DEFAULT_SOURCE
        explorer = load_rows(store, DEFAULT_SOURCE, limit=10_000)
        rec = reconcile.reconcile(reconcile.load(store))
    states = rec.requests.set_index(rec.requests["request_id"].astype(str))["state"].astype(str)
    assert set(states[states == reconcile.OPEN_STATES["supplier"]].index) == view
    assert set(states[states == "answered_still_listed"].index) == still
    assert rec.headline["open_requests"] == len(view)
    assert rec.headline["answered_still_listed"] == len(still)
    assert rec.headline["requests_by_state"]["answered_still_listed"] == len(still)
    supplier = rec.by_organisation[rec.by_organisation["side"] == "supplier"]
    assert int(supplier["open"].sum()) == len(view)
    assert set(open_items(rec.requests, rec.transcripts)[0]["request_id"].astype(str)) == view
    assert set(explorer.frame["request_id"].astype(str)) == view and explorer.total == len(view)
    assert _exported(db, "open_requests", tmp_path / "open.csv") == view
    assert _exported(db, "answered_still_listed", tmp_path / "still.csv") == still
    assert _canned(db, "overdue_requests", sla_days="-1") == view  # every open one
    assert _canned(db, "answered_still_listed") == still
    assert not view & still
    return view, still


def test_a_transcript_acknowledged_but_still_listed_is_not_open_anywhere(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    w = connect_to(sandbox, db=db)
    w.pull(progress=False)
    acted = act_out(w)  # responses, transcripts (acknowledged), another student's, acks
    open_before = set(w.store.table("open_requests")["request_id"].astype(str))
    lost = sorted(open_before)[0]  # a send whose answer was lost: in doubt, not open either
    sandbox.set_faults(drop_after_rate=1.0, path_pattern=lost)
    try:
        document = w.store.document(lost, list_name="supplier_requests")
        w.supplier.send_transcript(lost, transcript_for(document, lost))
    except TransportError:
        pass
    finally:
        sandbox.set_faults(drop_after_rate=0.0, path_pattern="")

    # No pull since: the last list read still shows every request we answered.
    view, still = _everywhere(db, tmp_path)
    answered = {*acted["response"], *acted["transcript"], *acted["transcript_wrong_student"]}
    assert still == answered
    assert lost not in view and lost not in still
    with Store(db, read_only=True) as store:
        rec = reconcile.reconcile(reconcile.load(store))
    states = rec.requests.set_index(rec.requests["request_id"].astype(str))["state"].astype(str)
    assert states[lost] == "uncertain_send"
    acknowledged = rec.requests[rec.requests["acknowledged_at"].notna()]["request_id"]
    assert set(acknowledged.astype(str)) >= set(acted["transcript"])  # the case

    w.pull(progress=False)  # the partner took them off its list
    view_after, still_after = _everywhere(db, tmp_path)
    assert still_after == set() and view_after == view
