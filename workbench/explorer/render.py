"""HTML for the explorer's panes. Every value from the store is escaped: documents and list
items are partner text, and a ``<script>`` in a student's name must stay text.

>>> rows_html(store.table("runs"))  # doctest: +SKIP
'<table border="0" class="dataframe workbench-rows">...'
"""

from __future__ import annotations

import copy
from html import escape
from typing import Any

import pandas as pd
from lxml import etree

from workbench import pesc
from workbench.errors import PescError

MAX_CELL = 120  # characters of a cell shown in a table; the rest is cut with an ellipsis
MAX_DOCUMENT = 500_000  # characters of one document shown
MAX_ISSUES = 20
STYLE = """<style>
.workbench-explorer .workbench-scroll { overflow: auto; max-height: 36em; max-width: 100%; }
.workbench-explorer table.workbench-rows { border-collapse: collapse; font-size: 12px; }
.workbench-explorer table.workbench-rows th,
.workbench-explorer table.workbench-rows td {
  padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top;
  white-space: nowrap;
}
.workbench-explorer table.workbench-rows th { position: sticky; top: 0; background: #f3f3f3; }
.workbench-explorer pre.workbench-xml { max-height: 40em; overflow: auto; font-size: 12px; }
.workbench-explorer .workbench-error { color: #b00020; }
</style>"""


def cell_text(value: Any, *, max_chars: int = MAX_CELL) -> str:
    """A cell as short plain text: missing is empty, long text is cut with ``…``."""
    if value is None:
        return ""
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):  # lists and dicts from JSON items
        pass
    text = str(value)
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


def pretty_xml(xml: str) -> tuple[str, pesc.PescDocument | None, str | None]:
    """(indented XML, the parsed document, None); when the text is refused as PESC:
    (the text as it is, None, why)."""
    try:
        doc = pesc.parse(xml)
    except PescError as exc:
        return xml, None, str(exc)
    root = copy.deepcopy(doc.root)
    etree.indent(root, space="  ")
    return etree.tostring(root, encoding="unicode"), doc, None


def validation_html(doc: pesc.PescDocument) -> str:
    """The validation status, its note and its first errors."""
    result = pesc.validate(doc)
    note = f": {result.note}" if result.note else ""
    html = (
        f'<p class="workbench-validation" data-status="{escape(result.status)}">'
        f"<b>Validation: {escape(result.status)}</b>{escape(note)}</p>"
    )
    if result.errors:
        items = "".join(f"<li>{escape(str(e))}</li>" for e in result.errors[:MAX_ISSUES])
        more = len(result.errors) - MAX_ISSUES
        extra = f"<li>… and {more} more</li>" if more > 0 else ""
        html += f"<ul>{items}{extra}</ul>"
    return html


def document_html(title: str, xml: str) -> str:
    """One document: its title, its validation and the XML pretty-printed in ``<pre>``."""
    text, doc, error = pretty_xml(xml)
    if doc is None:
        head = (
            '<p class="workbench-validation" data-status="not parsed">'
            f"<b>Not parsed as PESC:</b> {escape(str(error))}</p>"
        )
    else:
        kind = f"{doc.message_type} v{doc.version}" if doc.version else doc.message_type
        head = f"<p>{escape(kind)}</p>" + validation_html(doc)
    cut = ""
    if len(text) > MAX_DOCUMENT:
        text, cut = text[:MAX_DOCUMENT], f"<p>… cut at {MAX_DOCUMENT:,} characters.</p>"
    return (
        f'<div class="workbench-document"><h4>{escape(title)}</h4>{head}'
        f'<pre class="workbench-xml">{escape(text)}</pre>{cut}</div>'
    )


def documents_html(item_id: str, found: list[tuple[str, str]]) -> str:
    """Every document about ``item_id``, or a note that there is none."""
    if not found:
        return message_html(
            f"No stored document for {item_id!r}: is the id right, and has a pull fetched its "
            "detail?"
        )
    return "".join(document_html(title, xml) for title, xml in found)


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
