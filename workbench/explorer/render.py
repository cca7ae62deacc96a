"""HTML for the explorer's panes, every value from the store escaped (partner text)."""

from __future__ import annotations

from datetime import datetime
from html import escape
from typing import Any

import pandas as pd

from workbench import pesc
from workbench.bundle import Document
from workbench.errors import WorkbenchError
from workbench.pesc.student import comparable
from workbench.report.markup import clock, cut, heading, plain
from workbench.report.troubleshoot import documents_section

MAX_CELL = 120  # characters of a cell shown in a table; the rest is cut with an ellipsis
MAX_DOCUMENT = 500_000  # characters of one document shown
SORT_CLASS = "workbench-sort"  # the hidden text box a header's click writes its sort key into

# Beside the report's stylesheet: controls in view above a table that scrolls on its own.
STYLE = """<style>
.workbench-explorer .workbench-controls { position: sticky; top: 0; z-index: 5;
  background: var(--jp-layout-color0, #fff); padding-bottom: 4px; }
.workbench-explorer .workbench-scroll { overflow: auto; max-height: 60vh; max-width: 100%; }
.workbench-explorer table.workbench-rows { border-collapse: collapse; font-size: 12px; }
.workbench-explorer table.workbench-rows th, .workbench-explorer table.workbench-rows td {
  padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top;
  white-space: nowrap; }
.workbench-explorer table.workbench-rows th { position: sticky; top: 0; z-index: 1;
  background: #f3f3f3; }
.workbench-explorer .workbench-error { color: #b00020; }
.workbench-explorer button.workbench-sort-header { all: unset; cursor: pointer; font-weight: 600; }
.workbench-explorer .workbench-mismatch { color: #b00020; font-weight: 600; }
.workbench-explorer .workbench-unstated { color: #616e7c; font-style: italic; }
</style>"""
# A header's click: write its key into the sort box and tell the widget (ipywidgets syncs a
# text box that is not ``continuous_update`` on its ``change`` event).
_CLICK = (
    "const box = this.closest('.workbench-explorer').querySelector('.workbench-sort input');"
    "box.value = this.dataset.sort; box.dispatchEvent(new Event('change', {bubbles: true}));"
)
# (label, our transcript's field, the acknowledgment's, required): the totals are what an
# acknowledgment is for; the student's fields are its to leave out.
ACK_TOTALS = (
    ("courses", "course_count", "course_total", True),
    ("awards", "award_count", "academic_award_total", True),
    ("student last name", "student_last_name", "student_last_name", False),
    ("student first name", "student_first_name", "student_first_name", False),
    ("birth date", "student_birth_date", "student_birth_date", False),
    ("OEN", "student_oen", "student_oen", False),
)


def parse_order(key: str) -> tuple[str | None, bool]:
    """``"name"`` ascending, ``"-name"`` descending, ``""`` as stored: (column, descending)."""
    key = key.strip()
    descending = key.startswith("-")
    return (key[1:] if descending else key) or None, descending


def cell_text(value: Any, *, tz: str | None = None) -> str:
    """A cell as short plain text: missing is empty, a time to the second in zone ``tz``."""
    if isinstance(value, datetime) and not pd.isna(value):
        return clock(value, tz, seconds=True)
    return cut(plain(value), MAX_CELL)


def rows_html(frame: pd.DataFrame, *, tz: str | None = None, order: str | None = None) -> str:
    """``frame`` as a table; with ``order`` (the sort key) each header a button sorting by it."""
    head = "".join(_header(str(c), order) for c in frame.columns)
    body = "".join(
        "<tr>\n" + "".join(f"<td>{escape(cell_text(v, tz=tz))}</td>\n" for v in row) + "</tr>\n"
        for row in frame.itertuples(index=False, name=None)
    )
    return (
        '<div class="workbench-scroll"><table class="dataframe workbench-rows">\n'
        f"<thead><tr>\n{head}</tr></thead>\n<tbody>\n{body}</tbody></table></div>"
    )


def _header(column: str, order: str | None) -> str:
    if order is None:
        return f"<th>{escape(column)}</th>\n"
    sorted_by, descending = parse_order(order)
    here = sorted_by == column
    following = f"-{column}" if here and not descending else column
    mark = (" ▼" if descending else " ▲") if here else ""
    sort = ("descending" if descending else "ascending") if here else "none"
    return (
        f'<th aria-sort="{sort}"><button class="workbench-sort-header" type="button" '
        f'title="sort by {escape(column)}" data-sort="{escape(following)}" '
        f'onclick="{escape(_CLICK)}">{escape(column)}{mark}</button></th>\n'
    )


def status_html(label: str, shown: int, total: int, *, tz: str | None = None) -> str:
    """``showing 50 of 1,234 rows of table: calls`` (and the zone times show in)."""
    zone = f" · times in {escape(tz)}" if tz else ""
    return (
        f'<span class="workbench-status">showing {shown:,} of {total:,} rows of '
        f"{escape(label)}{zone}</span>"
    )


def message_html(text: str, *, error: bool = False) -> str:
    kind = "workbench-error" if error else "workbench-note"
    return f'<p class="{kind}">{escape(text)}</p>'


def documents_html(
    item_id: str, found: list[Document], *, versions: str = "", tz: str | None = None
) -> str:
    """Each document as a record, our transcript against the acknowledgment, ``versions``, then
    the raw XML with its validation one click away."""
    if not found:
        return message_html(
            f"No stored document for {item_id!r}: is the id right, and has a pull fetched its "
            "detail?"
        )
    shown = "".join(
        f'<section class="workbench-record" data-document="{doc.number}">'
        f"{heading(doc.title, 4)}{record_html(doc.text, tz=tz)}</section>"
        for doc in found
    )
    shown += ack_totals_html(found)
    if versions:
        shown += heading("Versions of the document received", 4) + versions
    raw = documents_section(found, max_chars=MAX_DOCUMENT).data
    summary = "<summary>Raw XML and validation</summary>"
    return f'{shown}<details class="workbench-raw">{summary}{raw}</details>'


def record_html(xml: str, *, tz: str | None = None) -> str:
    """A document's fields, then each table of ``pesc.to_frames`` that has rows."""
    frames = _frames(xml)
    if frames is None:
        return message_html("Cannot read this document as a record: see its raw XML below.")
    header = frames.pop("document").iloc[0]
    fields = [(name, value) for name, value in header.items() if not pd.isna(value)]
    tables = {"document": pd.DataFrame(fields, columns=["field", "value"])}
    tables |= {k: v.drop(columns="document_id") for k, v in frames.items() if not v.empty}
    return "".join(
        f'<div class="workbench-table" data-table="{name}">'
        f"{heading(name.replace('_', ' ').capitalize(), 5)}{rows_html(table, tz=tz)}</div>"
        for name, table in tables.items()
    )


def ack_totals_html(found: list[Document]) -> str:
    """The last transcript we sent against the last acknowledgment, by ``comparable``'s rule."""
    sent = [d for d in found if d.kind == "sent" and d.message_type.endswith("Transcript")]
    acks = [d for d in found if d.kind == "received" and d.message_type == "Acknowledgment"]
    ours = _frames(sent[-1].text) if sent else None
    theirs = _frames(acks[-1].text) if acks else None
    if ours is None or theirs is None:
        return ""
    mine, partner = ours["document"].iloc[0], theirs["document"].iloc[0]
    rows = []
    for label, our_field, their_field, required in ACK_TOTALS:
        a, b = mine.get(our_field), partner.get(their_field)
        said = _compared(comparable(a, our_field), comparable(b, our_field), required)
        rows.append(
            f'<tr data-total="{escape(label)}"><td>{escape(label)}</td>'
            f"<td>{escape(plain(a, missing='not stated'))}</td>"
            f"<td>{escape(plain(b, missing='not stated'))}</td>{said}</tr>\n"
        )
    return (
        heading("Our transcript against the partner's acknowledgment", 4)
        + '<table class="dataframe workbench-rows workbench-ack-totals"><thead><tr>'
        "<th></th><th>our transcript (sent)</th><th>the partner&#x27;s acknowledgment</th>"
        "<th></th></tr>"
        f"</thead>\n<tbody>\n{''.join(rows)}</tbody></table>"
    )


def _compared(ours: str | None, theirs: str | None, required: bool) -> str:
    """The verdict cell of one line of :func:`ack_totals_html`."""
    if ours is not None and theirs is not None:
        return "<td>same</td>" if ours == theirs else '<td class="workbench-mismatch">differs</td>'
    if ours is None:
        said = "stated by neither" if theirs is None else "not stated by our transcript"
    else:  # a total the acknowledgment owes is a mismatch; a student's field is its to leave out
        said = "not stated by the acknowledgment" + (" (a required total)" if required else "")
    css = "workbench-mismatch" if ours is not None and required else "workbench-unstated"
    return f'<td class="{css}">{said}</td>'


def _frames(xml: str) -> dict[str, pd.DataFrame] | None:
    try:
        return pesc.to_frames(xml)
    except (WorkbenchError, ValueError):
        return None


def diff_html(frame: pd.DataFrame, *, limit: int, tz: str | None = None) -> str:
    """``store.diff``'s counts per list and change, then its first ``limit`` rows."""
    if frame.empty:
        return message_html("No list changed between these two runs.")
    counts = frame.groupby(["list", "change"]).size().rename("items").reset_index()
    shown = frame[["list", "key", "change", "before", "after"]].head(limit)
    return (
        rows_html(counts)
        + status_html("the differences", len(shown), len(frame))
        + rows_html(shown, tz=tz)
    )
