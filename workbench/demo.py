"""``workbench demo``: the embedded sandbox, a token per interface, every list, a few details.

>>> run_demo(print)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from workbench.client import Workbench, connect
from workbench.doctor import render, run_checks

DEMO_DB = "data/demo.db"
# Columns worth seeing in a terminal; the DataFrames hold many more.
_REQUEST_COLUMNS = [
    "request_id",
    "request_date",
    "student_first_name",
    "student_last_name",
    "transcript_purpose",
    "parse_error",
]
_TRANSCRIPT_COLUMNS = [
    "request_id",
    "student_first_name",
    "student_last_name",
    "school_name",
    "course_count",
    "award_count",
    "parse_error",
]


def run_demo(
    echo: Callable[[str], None], *, seed: int = 1, details: int = 3, db: str = DEMO_DB
) -> bool:
    """Start a sandbox, check tokens, print every list and ``details`` details of each kind,
    then pull everything into ``db`` (started afresh), let the partner move, and pull again."""
    from workbench.sandbox import SandboxSettings

    start = datetime.now(UTC).replace(microsecond=0)
    for leftover in Path(db).parent.glob(Path(db).name + "*"):
        leftover.unlink()  # the demo's own database: each run starts clean
    settings = SandboxSettings(seed=seed, start=start)
    with connect("sandbox", db=db, sandbox=settings) as w:
        echo(f"{w!r}\n")
        checks = run_checks(w)
        echo("Tokens and one read per interface:")
        echo(render(checks) + "\n")
        for title, df in _lists(w):
            _show(echo, f"{title}: {len(df)} row(s)", df)
        requests = w.supplier.pending_requests()
        picked = w.supplier.requests(requests["request_id"].head(details), progress=False)
        _show(echo, f"Details of {len(picked)} transcript request(s)", picked, _REQUEST_COLUMNS)
        transcripts = w.consumer.pending_transcripts()
        picked = w.consumer.transcripts(transcripts["request_id"].head(details), progress=False)
        _show(echo, f"Details of {len(picked)} transcript(s)", picked, _TRANSCRIPT_COLUMNS)
        first = w.pull(progress=False)
        echo(f"== Pull into {db}\n{first}\n")
        assert w.sandbox is not None
        w.sandbox.advance(hours=8)
        second = w.pull(progress=False)
        echo(f"== Eight hours later at the partner, pull again (incremental)\n{second}\n")
        echo(f"The snapshot store is {Path(db).resolve()}")
        echo(f"  try: .venv/bin/sqlite-utils tables {db} --counts")
        ok = (checks["status"] != "FAILED").all() and second.status == "ok"
        return bool(ok)


def _lists(w: Workbench) -> list[tuple[str, pd.DataFrame]]:
    return [
        ("Diagnostics (international)", w.diagnostics()),
        ("Pending placement events (international)", w.pending_placement_events()),
        ("Peek events, count=10 (domestic)", w.peek_events(count=10)),
        ("Transcript requests without a response (supplier)", w.supplier.pending_requests()),
        ("Transcripts without a response (consumer)", w.consumer.pending_transcripts()),
    ]


def _show(
    echo: Callable[[str], None], title: str, df: pd.DataFrame, columns: list[str] | None = None
) -> None:
    if columns is not None:
        df = df[[c for c in columns if c in df.columns]]
    else:
        df = df.drop(columns=["raw"], errors="ignore")
    with pd.option_context(
        "display.width", 120, "display.max_columns", 8, "display.max_colwidth", 36
    ):
        echo(f"== {title}\n{df.head(10).to_string(index=False) if len(df) else '(none)'}\n")
