"""The Python API's contract (DESIGN §5): recorded calls, declared dtypes, a closed workbench."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from workbench import pesc
from workbench.api.frames import DATE, SCHEMA
from workbench.http.session import Exchange
from workbench.sandbox import Sandbox

UNKNOWN = "0" * 32  # a well-formed id the partner does not know: a NotFound row


def _calls(db: Path) -> dict[int, dict[str, object]]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return {r["id"]: dict(r) for r in conn.execute("SELECT * FROM calls")}


def test_calls_are_recorded_before_the_store_is_touched(
    sandbox: Sandbox,
    connect_to: Callable[..., wb.Workbench],
    exchanges: list[Exchange],
    tmp_path: Path,
) -> None:
    db = tmp_path / "wb.db"
    w = connect_to(sandbox, db=db)
    frames = [w.diagnostics(), w.supplier.pending_requests(), w.consumer.pending_transcripts()]
    calls = _calls(db)  # read beside the workbench: w.store was never used
    for df in frames:
        call_id = df.attrs["call_id"]
        assert isinstance(call_id, int)
        assert calls[call_id]["operation"] == df.attrs["operation"]
    assert len(calls) == len(exchanges)  # every exchange, token requests included


def test_a_batch_keeps_its_declared_dtypes_whatever_fails(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    w = connect_to(sandbox, db=db)
    ids = sandbox.pending_request_ids()[:3]
    full = w.supplier.requests(ids)
    one_failed = w.supplier.requests([ids[0], UNKNOWN, ids[1]])
    all_failed = w.supplier.requests([UNKNOWN])
    assert full["error"].isna().all()
    assert one_failed["error"].notna().tolist() == [False, True, False]
    for df in (one_failed, all_failed, w.supplier.requests([])):
        assert list(df.columns) == list(full.columns)
        assert df.dtypes.to_dict() == full.dtypes.to_dict()
    dtypes = full.dtypes
    assert dtypes["request_count"] == "Int64" and dtypes["recipient_count"] == "Int64"
    assert dtypes["release_authorized"] == "boolean"
    assert dtypes["request_id"] == dtypes["document_id"] == dtypes["error"] == "string"
    assert str(dtypes["request_date"]) == str(dtypes["created_at"]) == "datetime64[us, UTC]"
    assert dtypes["call_id"] == "Int64"
    assert {c: str(t) for c, t in dtypes.items() if c in SCHEMA} == {
        c: SCHEMA[c] for c in full.columns if c in SCHEMA
    }


def test_each_row_of_a_batch_names_its_own_call(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    w = connect_to(sandbox, db=db)
    asked = [*sandbox.pending_request_ids()[:4], UNKNOWN]
    df = w.consumer.transcripts(sandbox.pending_transcript_ids()[:2])
    df = pd.concat([df, w.supplier.requests(asked)], ignore_index=True)
    calls = _calls(db)
    assert df["call_id"].notna().all()
    assert df["call_id"].is_unique  # one call per id
    for row in df.itertuples():
        call = calls[int(row.call_id)]
        assert str(call["url"]).endswith(f"/{row.request_id}")
        assert (call["status"] == 200) == (row.request_id != UNKNOWN)  # a failure's call too
    batch = w.supplier.requests(asked)
    assert batch.attrs["call_id"] is None  # many calls: each row names its own
    assert batch.attrs["call_ids"] == batch["call_id"].astype(int).tolist()


def test_birth_dates_are_dates(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    w = connect_to(sandbox, db=tmp_path / "wb.db")
    for df in (
        w.supplier.request(sandbox.pending_request_ids()[0]),
        w.consumer.transcript(sandbox.pending_transcript_ids()[0]),
    ):
        assert df["student_birth_date"].dtype == DATE
        written = pesc.flatten(df.loc[0, "pescxml"])["student_birth_date"]
        assert written  # the sandbox writes one
        day = df.loc[0, "student_birth_date"]
        assert day == pd.Timestamp(written) and day.date().isoformat() == written


def test_a_birth_date_that_is_no_date_is_nat_and_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from workbench.api.frames import frame

    rows = [
        {"student_birth_date": "1990-05-17"},
        {"student_birth_date": "1990-05-17T00:00:00-05:00"},
        {"student_birth_date": "17/05/1990"},
        {"student_birth_date": None},
    ]
    df = frame(rows, columns=("student_birth_date",), operation="op")
    assert df["student_birth_date"].dtype == DATE
    assert df["student_birth_date"].tolist()[:2] == [pd.Timestamp("1990-05-17")] * 2
    assert df["student_birth_date"].isna().tolist() == [False, False, True, True]
    assert "1 value(s) are not dates" in caplog.text
    assert "17/05/1990" not in caplog.text  # a student's birth date never reaches a log


def test_a_closed_workbench_raises_a_workbench_error(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    w = connect_to(sandbox, db=tmp_path / "wb.db")
    request_id = w.supplier.pending_requests()["request_id"].iloc[0]
    w.close()
    for use in (
        w.diagnostics,
        w.supplier.pending_requests,
        lambda: w.supplier.request(request_id),
        lambda: w.supplier.requests([request_id]),
        lambda: w.store,
        w.pull,
        lambda: w.consumer.send_acknowledgment(request_id),
    ):
        with pytest.raises(wb.WorkbenchError, match=r"closed.*[Cc]onnect again"):
            use()
    w.close()  # still safe twice


def test_a_closed_workbench_never_opened_its_store(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    db = tmp_path / "never.db"
    w = connect_to(sandbox, db=db)
    w.close()
    with pytest.raises(wb.WorkbenchError, match="closed"):
        w.diagnostics()
    assert not db.exists()


def test_opening_a_claimed_store_takes_no_write_lock(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    connect_to(sandbox, db=db).diagnostics()  # creates the store and claims it
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process mid-write
    try:
        store = connect_to(sandbox, db=db).store  # would wait on the lock, then fail
        assert store.meta("partner_profile")
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_record_false_records_only_once_the_store_is_used(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    w = connect_to(sandbox, db=db, settings={"record": False})
    assert w.diagnostics().attrs["call_id"] is None
    assert not db.exists()  # a dry run's reads leave no file behind
    w.store  # noqa: B018 - from here on, every call is recorded
    call_id = w.supplier.pending_requests().attrs["call_id"]
    assert _calls(db)[call_id]["operation"] == "supplier.pending_requests"


@pytest.mark.parametrize("partner", ["the same partner", "another partner"])
def test_a_newer_store_loses_its_records_with_one_line(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    partner: str,
) -> None:
    db, sb = tmp_path / "wb.db", sandbox_factory()
    connect_to(sb, db=db).diagnostics()
    with sqlite3.connect(db) as conn:  # written by a newer workbench
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    w = connect_to(sb if partner == "the same partner" else sandbox_factory(), db=db)
    for _ in range(3):
        assert w.supplier.pending_requests().attrs["call_id"] is None
    lost = [r for r in caplog.records if "was not recorded" in r.getMessage()]
    assert len(lost) == 1 and "newer" in lost[0].getMessage()
    with pytest.raises(wb.StoreError, match="newer"):
        w.store  # noqa: B018 - it says why, every time it is asked for


def test_another_partners_store_is_read_and_its_calls_dropped_without_a_word(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = tmp_path / "wb.db"
    connect_to(sandbox_factory(), db=db).pull(progress=False)
    stored = len(_calls(db))
    w = connect_to(sandbox_factory(), db=db)  # another partner, the current schema
    for _ in range(2):
        assert w.supplier.pending_requests().attrs["call_id"] is None
    assert not w.store.table("transcript_requests").empty
    assert len(_calls(db)) == stored
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_store_that_cannot_be_opened_yet_is_tried_again_and_then_records(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")  # a file where the store's folder must go
    w = connect_to(sandbox_factory(), db=blocker / "wb.db")
    assert w.supplier.pending_requests().attrs["call_id"] is None
    assert [r for r in caplog.records if "was not recorded" in r.getMessage()]
    blocker.unlink()
    call_id = w.supplier.pending_requests().attrs["call_id"]
    assert _calls(blocker / "wb.db")[call_id]["operation"] == "supplier.pending_requests"
