"""HTML pieces the report's sections and the explorer share: escaped values and times,
tables, the report's stylesheet. Every value reaches the page through :func:`text` (escaped)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any

import pandas as pd
from IPython.display import HTML

from workbench.reconcile.inputs import timestamp
from workbench.store.frames import is_missing

MISSING = "–"
MAX_ROWS = 200
MAX_CELL_CHARS = 1000  # characters of one table cell shown; the rest is cut
# Where a word of an identifier starts: inside camelCase (TranscriptRequest), after an
# underscore (WORKBENCH_PESC_SCHEMAS) or a slash (a path).
_WORD_STARTS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[_/])(?=[A-Za-z0-9])")

STYLE = """<style>
.wb-report { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2933; }
.wb-report h3, .wb-report h4 { margin: 0.8em 0 0.3em; }
.wb-report .wb-meta { color: #52606d; margin: 0.2em 0 0.6em; }
.wb-report .wb-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(11em, 1fr));
  gap: 0.6em; }
.wb-report .wb-figure { border: 1px solid #d9e2ec; border-radius: 6px; padding: 0.5em 0.7em;
  background: #f8fafc; overflow-wrap: normal; word-break: normal; hyphens: manual; }
.wb-report .wb-figure.wb-alert { border-color: #e12d39; background: #fff5f5; }
.wb-report .wb-value { font-size: 2em; font-weight: 600; line-height: 1.1; }
.wb-report .wb-label { font-size: 0.9em; color: #3e4c59; }
.wb-report .wb-sub { font-size: 0.8em; color: #616e7c; margin-top: 0.2em; }
.wb-report table.wb-table { border-collapse: collapse; font-size: 0.85em; margin: 0.3em 0 0.8em;
  table-layout: auto; }
.wb-report table.wb-table th, .wb-report table.wb-table td { border: 1px solid #d9e2ec;
  padding: 0.2em 0.45em; text-align: left; vertical-align: top; white-space: normal;
  overflow-wrap: break-word; max-width: 40em; }
.wb-report table.wb-table th { background: #f0f4f8; }
.wb-report table.wb-table td.wb-num { text-align: right; font-variant-numeric: tabular-nums; }
.wb-report table.wb-table td.wb-time { white-space: nowrap; }
.wb-report tr.wb-sev-critical td { color: #a61b1b; font-weight: 700; }
.wb-report tr.wb-sev-high td { color: #c63d0f; font-weight: 600; }
.wb-report tr.wb-sev-low td { color: #52606d; }
.wb-report .wb-more, .wb-report .wb-empty { color: #616e7c; font-style: italic; }
.wb-report pre { background: #f8fafc; border: 1px solid #d9e2ec; padding: 0.5em;
  overflow-x: auto; font-size: 0.8em; max-height: 40em; }
</style>"""


def plain(value: Any, *, missing: str = "") -> str:
    """``value`` as unescaped text, as ``str`` writes it; a missing value as ``missing``."""
    return missing if is_missing(value) else str(value)


def local_time(value: Any, tz: str | None = None) -> pd.Timestamp:
    """A time in zone ``tz`` (None: UTC); a time without a zone is taken as UTC, as stored."""
    return timestamp(value).tz_convert(tz or "UTC")


def clock(value: Any, tz: str | None = None, *, seconds: bool = False, space: str = " ") -> str:
    """A time in zone ``tz`` as ``YYYY-MM-DD HH:MM[:SS]``, any year pandas holds."""
    t = local_time(value, tz)
    shown = f"{t.year:04d}-{t.month:02d}-{t.day:02d}{space}{t.hour:02d}:{t.minute:02d}"
    return f"{shown}:{t.second:02d}" if seconds else shown


def moment(value: Any, tz: str | None = None) -> str:
    """A time to the minute in zone ``tz``, with the zone's abbreviation, unescaped.

    >>> moment("2026-03-02T14:00Z", "America/Toronto")
    '2026-03-02 09:00 EST'
    """
    stamp = local_time(value, tz)
    try:
        zone = stamp.tzname() or tz or "UTC"
    except (ValueError, NotImplementedError, OverflowError):  # a year Python's datetime lacks
        zone = tz or "UTC"
    return f"{clock(stamp, tz)} {zone}"


def text(value: Any, tz: str | None = None) -> str:
    """``value`` as escaped text: times to the minute in zone ``tz``, missing as a dash."""
    if is_missing(value):
        return MISSING
    if isinstance(value, pd.Timestamp | datetime):
        return html.escape(clock(value, tz))
    if isinstance(value, date):
        return html.escape(value.isoformat())
    if isinstance(value, float):
        return f"{value:g}"
    return html.escape(str(value))


def breakable(value: Any) -> str:
    """``value`` escaped, wrapping only where a word of it starts, never mid-word.

    >>> breakable("TranscriptRequestReceived WORKBENCH_PESC")
    'Transcript<wbr>Request<wbr>Received WORKBENCH_<wbr>PESC'
    """
    return "<wbr>".join(text(part) for part in _WORD_STARTS.split(plain(value, missing=MISSING)))


def page(*parts: str) -> HTML:
    """Parts of HTML (already escaped) in one styled block, as IPython displays it."""
    return HTML(STYLE + '<div class="wb-report">' + "".join(parts) + "</div>")


def heading(title: str, level: int = 3) -> str:
    return f"<h{level}>{text(title)}</h{level}>"


def paragraph(words: str, css: str = "wb-meta") -> str:
    return f'<p class="{css}">{text(words)}</p>'


def table(
    frame: pd.DataFrame, columns: Mapping[str, str] | Iterable[str] | None = None, *,
    max_rows: int = MAX_ROWS, row_class: str | None = None, empty: str = "Nothing to show.",
    tz: str | None = None, max_chars: int = MAX_CELL_CHARS,
) -> str:  # fmt: skip
    """``frame`` as an HTML table of ``columns`` (a mapping gives headers), cells cut."""
    if frame.empty:
        return paragraph(empty, "wb-empty") if empty else ""
    if columns is None:
        columns = list(frame.columns)
    labels = dict(columns) if isinstance(columns, Mapping) else {c: c for c in columns}
    labels = {c: h for c, h in labels.items() if c in frame.columns}
    shown = frame.head(max_rows)
    css_of = {  # numbers align right; times do not wrap
        c: ' class="wb-time"' if pd.api.types.is_datetime64_any_dtype(frame[c].dtype)
        else ' class="wb-num"' if pd.api.types.is_numeric_dtype(frame[c].dtype)
        and not pd.api.types.is_bool_dtype(frame[c].dtype) else ""
        for c in labels
    }  # fmt: skip
    head = "".join(f"<th>{text(h)}</th>" for h in labels.values())
    rows = []
    for _, row in shown.iterrows():
        css = f' class="wb-sev-{text(row[row_class])}"' if row_class else ""
        cells = "".join(f"<td{css_of[c]}>{text(cut(row[c], max_chars), tz)}</td>" for c in labels)
        rows.append(f"<tr{css}>{cells}</tr>")
    more = len(frame) - len(shown)
    note = paragraph(f"… and {more} more rows not shown.", "wb-more") if more > 0 else ""
    return (
        f'<table class="wb-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{note}"
    )


def cut(value: Any, limit: int) -> Any:
    """A long text cut to ``limit`` characters, an ellipsis ending it."""
    too_long = isinstance(value, str) and len(value) > limit
    return value[: max(limit - 1, 0)] + "\u2026" if too_long else value
