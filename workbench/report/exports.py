"""Spreadsheets beside a report: what needs an analyst, as csv or xlsx.

::

    rec = reconcile.reconcile(reconcile.load(store), sla_days=5)
    write_exports(rec, "data/reports/reconcile-20260302T090000Z.html", ("csv", "xlsx"))
    # reconcile-20260302T090000Z.exceptions.csv, .open_requests.csv,
    # .transcripts_awaiting_ack.csv, and one .xlsx with a sheet for each

They hold student data, like the report itself: they are written for their owner only (mode
0600), through the writers of ``workbench export`` (:mod:`workbench.export`), so partner text
never becomes a live formula. They replace the files of an earlier report of the same name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path

import pandas as pd

from workbench.errors import InvalidParameter
from workbench.export import write_csv, write_private, write_xlsx
from workbench.reconcile import Reconciliation, open_items

EXPORT_FORMATS = ("csv", "xlsx")
# name -> what it holds; the order of the xlsx's sheets
EXPORT_TABLES = {
    "exceptions": "what needs an analyst (rec.exceptions)",
    "open_requests": "open requests: awaiting our response (reconcile.OPEN_STATES)",
    "transcripts_awaiting_ack": "transcripts received awaiting our acknowledgment",
}


def export_formats(text: str | Iterable[str] | None) -> tuple[str, ...]:
    """The formats of ``--export csv,xlsx`` (order kept, repeats dropped); ``InvalidParameter``
    naming the known ones for anything else.

    >>> export_formats("xlsx, CSV")
    ('xlsx', 'csv')
    """
    if text is None:
        return ()
    parts = text.split(",") if isinstance(text, str) else [p for t in text for p in t.split(",")]
    names = tuple(dict.fromkeys(p.strip().lower() for p in parts if p.strip()))
    unknown = [n for n in names if n not in EXPORT_FORMATS]
    if unknown or not names:
        raise InvalidParameter(
            f"unknown format {', '.join(map(repr, unknown)) or '(none)'}; "
            f"use one or more of {', '.join(EXPORT_FORMATS)}, separated by commas",
            parameter="export",
        )
    return names


def export_tables(rec: Reconciliation) -> dict[str, pd.DataFrame]:
    """The tables an export holds (:data:`EXPORT_TABLES`), as the reconciliation has them."""
    requests, transcripts = open_items(rec.requests, rec.transcripts)
    return {
        "exceptions": rec.exceptions.reset_index(drop=True),
        "open_requests": requests.reset_index(drop=True),
        "transcripts_awaiting_ack": transcripts.reset_index(drop=True),
    }


def write_exports(
    rec: Reconciliation, report: str | os.PathLike[str], formats: Iterable[str]
) -> list[Path]:
    """Write :func:`export_tables` next to ``report`` (its stem + ``.<table>.csv``, one
    ``.xlsx`` with a sheet per table); the paths written, in order."""
    report = Path(report)
    tables = export_tables(rec)
    written = []
    for fmt in export_formats(list(formats)):
        if fmt == "csv":
            for name, frame in tables.items():
                path = report.with_name(f"{report.stem}.{name}.csv")
                write_private(path, partial(write_csv, frame), force=True)
                written.append(path)
        else:
            path = report.with_name(f"{report.stem}.xlsx")
            write_private(path, lambda target: write_xlsx(tables, target), force=True)
            written.append(path)
    return written
