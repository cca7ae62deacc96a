"""HTML for the explorer's panes. Every value from the store is escaped: documents and list
items are partner text, and a ``<script>`` in a student's name must stay text.

The stylesheet, missing values and the documents with their validation are the report's
(``workbench.report.markup`` and ``workbench.report.troubleshoot``): one way to show them.

>>> rows_html(store.table("runs"))  # doctest: +SKIP
'<div class="workbench-scroll"><table border="0" class="dataframe workbench-rows">...'
"""

from __future__ import annotations

from html import escape
from typing import Any

import pandas as pd

from workbench.report.markup import heading, plain
from workbench.report.troubleshoot import RequestDocument, documents_section

MAX_CELL = 120  # characters of a cell shown in a table; the rest is cut with an ellipsis
MAX_DOCUMENT = 500_000  # characters of one document shown


def cell_text(value: Any, *, max_chars: int = MAX_CELL) -> str:
    """A cell as short plain text: missing is empty, long text is cut with ``…``."""
    text = plain(value)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def rows_html(frame: pd.DataFrame, *, max_chars: int = MAX_CELL) -> str:
    """``frame`` as an escaped HTML table, each cell cut to ``max_chars``."""
    if frame.columns.empty:
        return "<p><em>No columns.</em></p>"
    shown = pd.DataFrame(
        {c: [cell_text(v, max_chars=max_chars) for v in frame[c]] for c in frame.columns},
        columns=frame.columns,
    )
    table = shown.to_html(
        index=False, escape=True, border=0, classes="workbench-rows", na_rep="", notebook=False
    )
    return f'<div class="workbench-scroll">{table}</div>'


def status_html(label: str, shown: int, total: int) -> str:
    """``showing 50 of 1,234 rows of table: calls``."""
    return (
        f'<span class="workbench-status">showing {shown:,} of {total:,} rows of '
        f"{escape(label)}</span>"
    )


def message_html(text: str, *, error: bool = False) -> str:
    kind = "workbench-error" if error else "workbench-note"
    return f'<p class="{kind}">{escape(text)}</p>'


def documents_html(item_id: str, found: list[RequestDocument], *, versions: str = "") -> str:
    """Every document about ``item_id`` as the troubleshooting report shows them (each cut at
    :data:`MAX_DOCUMENT` characters), after ``versions`` (the HTML of its versions and their
    diffs, ``report.versions_section``), or a note that there is none."""
    if not found:
        return message_html(
            f"No stored document for {item_id!r}: is the id right, and has a pull fetched its "
            "detail?"
        )
    shown = heading("Versions of the document received", 4) + versions if versions else ""
    return shown + documents_section(found, max_chars=MAX_DOCUMENT).data


def diff_html(frame: pd.DataFrame, *, limit: int, max_chars: int = 80) -> str:
    """A summary of ``store.diff`` (counts per list and change), then its first rows."""
    if frame.empty:
        return message_html("No list changed between these two runs.")
    counts = frame.groupby(["list", "change"]).size().rename("items").reset_index()
    shown = frame[["list", "key", "change", "before", "after"]].head(limit)
    return (
        rows_html(counts)
        + status_html("the differences", len(shown), len(frame))
        + rows_html(shown, max_chars=max_chars)
    )
