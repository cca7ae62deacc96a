"""One table, view or partner list of the store, written to a csv, xlsx or parquet file.

::

    done = export(store, "open_requests", "xlsx")            # data/exports/open_requests-...xlsx
    done = export(store, "supplier_requests", "parquet", as_of="3")   # the list after run 3
    done.path, done.rows                                      # absolute path, rows written

Parquet keeps every dtype (ids as text, times as UTC timestamps) and is what DuckDB, Spark or
pandas read when an analysis outgrows one machine. xlsx has no time zones: times are written in
UTC, their column renamed ``<name>_utc`` (as the report's exports do). The files hold student
data: they are written for their owner only (mode 0600), and an existing file is replaced only
with ``force=True``. Partner text never becomes a live formula: an xlsx cell holds it as text
(shown as typed), a csv value a spreadsheet would run (``=``, ``+``, ``-``, ``@``, tab, CR)
gets a leading ``'`` (:func:`spreadsheet_safe`). The report's ``--export`` writes through the
same :func:`write_csv`, :func:`write_xlsx` and :func:`write_private`.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidParameter
from workbench.folders import check_folder

if TYPE_CHECKING:
    import pandas as pd

    from workbench.store import Store

FORMATS = ("csv", "xlsx", "parquet")
PARQUET_INSTALL = "pip install 'workbench[parquet]'"
XLSX_MAX_ROWS = 1_048_575  # Excel's 1,048,576 rows, less the header
XLSX_MAX_CELL = 32_767  # characters Excel shows in one cell
_XLSX_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # XML 1.0 refuses them
# what a spreadsheet reads as the start of a formula (OWASP's list, and its full-width forms)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


@dataclass(frozen=True)
class Exported:
    """What :func:`export` wrote: the absolute ``path``, its ``rows`` and ``columns``, what
    the source was (``kind``: table, view or list; ``snapshot`` for a list), and ``notes``
    on what the format could not keep as it was."""

    path: Path
    name: str
    kind: str
    fmt: str
    rows: int
    columns: int
    snapshot: str | None = None
    notes: list[str] = field(default_factory=list)
    sandbox: bool = False  # the embedded sandbox's data (the file name says so too)


def sources(store: Store) -> dict[str, str]:
    """What can be exported, name -> kind: the store's tables and views, the partner lists."""
    from workbench.store import LIST_NAMES

    found: dict[str, str] = {}
    for kind, names in (("table", store.db.table_names()), ("view", store.db.view_names())):
        found.update({n: kind for n in sorted(names) if not n.lower().startswith("sqlite_")})
    found.update({n: "list" for n in LIST_NAMES})  # a list is read from its snapshots
    return found


def export_format(fmt: str | None, out: str | os.PathLike[str] | None) -> str:
    """The format to write: ``fmt``, else the suffix of ``out``, else csv. ``InvalidParameter``
    for an unknown one, or when ``out``'s suffix names another."""
    suffix = Path(out).suffix.lower().lstrip(".") if out is not None else ""
    chosen = (fmt or (suffix if suffix in FORMATS else "csv")).strip().lower()
    if chosen not in FORMATS:
        raise InvalidParameter(
            f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}", parameter="format"
        )
    if suffix in FORMATS and suffix != chosen:
        raise InvalidParameter(
            f"--out ends in .{suffix} but the format is {chosen}: make them agree",
            parameter="format",
        )
    return chosen


def export(
    store: Store,
    name: str,
    fmt: str | None = None,
    out: str | os.PathLike[str] | None = None,
    *,
    as_of: str | int | None = None,
    force: bool = False,
) -> Exported:
    """Write table, view or partner list ``name`` to ``out`` as ``fmt`` (csv, xlsx, parquet).

    ``as_of`` (lists only): a pull run's id (the list as that run left it) or an ISO 8601 time
    (its latest snapshot then). ``out`` defaults to ``exports/NAME-<UTC time>.<fmt>`` beside
    the database. ``InvalidParameter`` (naming ``name``, ``as_of``, ``format`` or ``out``) for
    what cannot be exported; nothing is written then.
    """
    fmt = export_format(fmt, out)
    kinds = sources(store)
    kind = kinds.get(name)
    if kind is None:
        raise InvalidParameter(_unknown(name, kinds), parameter="name")
    if as_of is not None and kind != "list":
        lists = ", ".join(n for n, k in kinds.items() if k == "list")
        raise InvalidParameter(
            f"{name} is a {kind}: only the partner lists ({lists}) have a past to export",
            parameter="as_of",
        )
    writer = _writer(fmt)  # a missing optional library is said before anything is read
    path = _target(store, name, fmt, out, as_of=as_of, force=force)
    snapshot = None
    if kind == "list":
        moment, label = list_moment(store, as_of)
        frame = store.as_of(moment)[name]
        taken = frame.attrs.get("taken_at")
        snapshot = (
            f"snapshot {frame.attrs['snapshot_id']} taken at {taken.isoformat()} ({label})"
            if frame.attrs.get("snapshot_id") is not None
            else f"no snapshot of {name} ({label}): an empty list"
        )
    else:
        frame = store.table(name)
    notes = write_private(path, lambda target: writer(_portable(frame), target, name), force=force)
    sandbox = store.holds_sandbox_data()
    if sandbox and fmt == "xlsx":  # a spreadsheet says so in its title; a csv cannot
        from workbench.store.identity import SANDBOX_TITLE

        _retitle(path, f"{SANDBOX_TITLE}: {name}")
    return Exported(path, name, kind, fmt, len(frame), len(frame.columns), snapshot, notes, sandbox)


def _retitle(path: Path, title: str) -> None:
    """Set the title of the xlsx workbook at ``path`` (its document properties)."""
    from openpyxl import load_workbook

    book = load_workbook(path)
    book.properties.title = title
    book.save(path)


def list_moment(store: Store, as_of: str | int | None) -> tuple[Any, str]:
    """The moment a list is read at (``store.as_of``'s argument) and how to say it: now; a
    run's finish (its start while it runs, as the explorer reads it); or a time."""
    import pandas as pd

    if as_of is None:
        return None, "the latest"
    text = str(as_of).strip()
    if text.isdigit():
        runs = store.table("runs", where="id = ?", params=[int(text)])
        if runs.empty:
            known = store.table("runs", where="1 ORDER BY id DESC LIMIT 10")["id"].tolist()
            shown = ", ".join(map(str, known)) or "none: run `workbench pull` first"
            raise InvalidParameter(
                f"there is no run {text} in the store (the latest: {shown})", parameter="as_of"
            )
        run = runs.iloc[0]
        done = pd.notna(run["finished_at"])
        return (run["finished_at"] if done else run["started_at"]), f"as of run {text}"
    try:
        when = pd.Timestamp(text)
    except ValueError:
        when = None
    if when is None or pd.isna(when):
        raise InvalidParameter(
            f"{text!r} is neither a run id nor an ISO 8601 time", parameter="as_of"
        )
    when = when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")
    if when > pd.Timestamp.now(tz="UTC"):
        raise InvalidParameter(f"{text} is in the future", parameter="as_of")
    return when, f"as of {when.isoformat()}"


def _unknown(name: str, kinds: dict[str, str]) -> str:
    by_kind = {
        kind: ", ".join(n for n, k in kinds.items() if k == kind) for kind in ("view", "table")
    }
    lists = ", ".join(n for n, k in kinds.items() if k == "list")
    return (
        f"there is no table, view or partner list {name!r} in the store. Views: "
        f"{by_kind['view']}. Tables: {by_kind['table']}. Partner lists: {lists}"
    )


def _target(
    store: Store,
    name: str,
    fmt: str,
    out: str | os.PathLike[str] | None,
    *,
    as_of: str | int | None,
    force: bool,
) -> Path:
    if out is None:
        stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
        past = "" if as_of is None else "-as-of-" + re.sub(r"[^0-9A-Za-z]+", "", str(as_of))
        sandbox = "sandbox-" if store.holds_sandbox_data() else ""
        out = Path(store.path).parent / "exports" / f"{sandbox}{name}{past}-{stamp}.{fmt}"
    path = Path(out).expanduser().absolute()
    if path.is_dir():
        raise InvalidParameter(f"{path} is a folder: give a file name", parameter="out")
    if path.exists() and not force:
        raise InvalidParameter(
            f"{path} exists: pass --force to replace it, or another --out", parameter="out"
        )
    check_folder(path.parent, parameter="out")
    return path


def write_private(path: Path, write: Callable[[Path], list[str]], *, force: bool) -> list[str]:
    """Write through ``write`` into a 0600 file beside ``path``, then move it there: a reader
    never sees half a file, and nobody but its owner can read it, even for a moment."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    os.close(fd)
    try:
        notes = write(Path(temporary))
        os.chmod(temporary, 0o600)  # some writers replace the file they are given
        if force:
            os.replace(temporary, path)
        else:
            os.link(temporary, path)  # refuses, atomically, a file that appeared meanwhile
            os.unlink(temporary)
    except FileExistsError:
        os.unlink(temporary)
        raise InvalidParameter(
            f"{path} exists: pass --force to replace it, or another --out", parameter="out"
        ) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return notes


def formula_like(value: object) -> bool:
    """Whether a spreadsheet would run ``value`` as a formula: text starting with
    :data:`FORMULA_START`. A number (even a negative one) is a number, never a formula."""
    return isinstance(value, str) and value.startswith(FORMULA_START)


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text a spreadsheet would run as a formula made inert by a leading
    ``'`` (``=1+1`` -> ``'=1+1``), for a text format (csv). Numbers stay numbers.

    >>> import pandas as pd
    >>> spreadsheet_safe(pd.DataFrame({"a": ["=1+1", "ok", "-2"], "n": [-1, 2, 3]})).values.tolist()
    [["'=1+1", -1], ['ok', 2], ["'-2", 3]]
    """
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype == object or isinstance(series.dtype, pd.StringDtype):
            values = [f"'{v}" if formula_like(v) else v for v in series]
            out[column] = pd.Series(values, index=series.index, dtype=series.dtype)
    return out


def _portable(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with values no format knows (dicts and lists of a list's items) as JSON."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = out[column].map(
                lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v
            )
    return out


Writer = Callable[["pd.DataFrame", Path, str], list[str]]


def _writer(fmt: str) -> Writer:
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            from workbench.errors import ConfigError

            raise ConfigError(
                f"parquet needs pyarrow, which is not installed: `{PARQUET_INSTALL}` "
                "(or use --format csv or xlsx)"
            ) from None
        return _parquet
    if fmt == "csv":
        return lambda frame, path, _name: write_csv(frame, path)
    return lambda frame, path, name: write_xlsx({name: frame}, path)


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> list[str]:
    """``frame`` as csv: times as ISO 8601 in UTC (``2026-03-02T09:00:00.000000Z``), which
    every reader parses; text made :func:`spreadsheet_safe`. Rows end in CRLF (RFC 4180):
    the writer then quotes every value holding a CR or an LF, so none starts a row (or a
    formula) of its own in a spreadsheet.

    defusedcsv was weighed for the guard and not taken: it leaves a leading tab, CR and the
    full-width ``＝`` live, and takes the text "-2" for a number."""
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        if isinstance(out[column].dtype, pd.DatetimeTZDtype):
            utc = out[column].dt.tz_convert("UTC")
            out[column] = utc.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ").where(utc.notna(), None)
    spreadsheet_safe(out).to_csv(path, index=False, lineterminator="\r\n")
    return []


def _parquet(frame: pd.DataFrame, path: Path, _name: str) -> list[str]:
    """pandas' dtypes kept (ids as text, counts as nullable integers, times as UTC timestamps
    to the microsecond, which Spark reads); a column of mixed values becomes text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    notes = []
    frame = frame.copy()
    frame.attrs = {}  # pyarrow would store them, Timestamps and all
    for column in frame.columns:
        try:
            pa.Array.from_pandas(frame[column])
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed values: times and text, say
            frame[column] = frame[column].map(lambda v: None if _missing(v) else str(v))
            frame[column] = frame[column].astype("string")
            notes.append(f"{column}: mixed values, written as text")
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, path, coerce_timestamps="us", allow_truncated_timestamps=True)
    return notes


def write_xlsx(sheets: Mapping[str, pd.DataFrame], path: str | os.PathLike[str]) -> list[str]:
    """One worksheet per frame of ``sheets`` (name -> frame), times in UTC without a zone (the
    column renamed ``<name>_utc``); text is stored as text, never as a formula, and shown as
    typed (quote-prefixed when it looks like one). Notes on values Excel cannot hold whole."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    for name, frame in sheets.items():
        if len(frame) > XLSX_MAX_ROWS:
            raise InvalidParameter(
                f"{name} has {len(frame)} rows, more than a worksheet holds ({XLSX_MAX_ROWS}): "
                "use --format csv or parquet",
                parameter="format",
            )
    book = Workbook(write_only=True)
    cut: dict[str, int] = {}
    for name, frame in sheets.items():
        sheet_frame = _excel_frame(frame)
        sheet = book.create_sheet(title=name[:31])
        sheet.append([str(c) for c in sheet_frame.columns])
        for row in sheet_frame.itertuples(index=False, name=None):
            cells = []
            for column, value in zip(sheet_frame.columns, row, strict=True):
                cell = WriteOnlyCell(sheet, value=_cell_value(value, str(column), cut))
                if isinstance(cell.value, str):
                    cell.data_type = "s"  # text that starts with "=" stays text, not a formula
                    cell.quotePrefix = formula_like(cell.value)  # and stays so when edited
                cells.append(cell)
            sheet.append(cells)
    book.save(path)
    return [
        f"{column}: {n} value(s) longer than Excel's {XLSX_MAX_CELL} characters, cut "
        "(csv and parquet keep them whole)"
        for column, n in cut.items()
    ]


def _excel_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as xlsx takes it: times in UTC without a zone (xlsx has none, so the column's
    name ends in ``_utc``), other values that are not numbers or text as text."""
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if isinstance(series.dtype, pd.DatetimeTZDtype):
            out[column] = series.dt.tz_convert("UTC").dt.tz_localize(None)
            out = out.rename(columns={column: f"{column}_utc"})
        elif series.dtype == object:
            out[column] = series.map(
                lambda v: v if v is None or isinstance(v, str | int | float | bool) else str(v)
            )
    return out


def _cell_value(value: Any, column: str, cut: dict[str, int]) -> Any:
    if _missing(value):
        return None
    if hasattr(value, "item") and hasattr(value, "dtype"):  # a numpy scalar
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode("utf-8", "backslashreplace")
    if isinstance(value, str):
        value = _XLSX_ILLEGAL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)
        if len(value) > XLSX_MAX_CELL:
            cut[column] = cut.get(column, 0) + 1
            value = value[:XLSX_MAX_CELL]
    return value


def _missing(value: Any) -> bool:
    import pandas as pd

    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or an array: not a missing value
        return False


def export_from_profile(
    name: str,
    fmt: str | None = None,
    out: str | os.PathLike[str] | None = None,
    *,
    profile: str | None = None,
    db: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    as_of: str | int | None = None,
    force: bool = False,
) -> Exported:
    """:func:`export` from a profile's database (``db`` overrides it), opened read-only: the
    partner is not contacted. ``ConfigError`` when there is no workbench store there."""
    from workbench.config import load_profile
    from workbench.report.job import check_store
    from workbench.store import Store

    path = Path(db if db is not None else load_profile(profile, config_path=config_path).db)
    check_store(path, pulling=False)
    with Store(path, read_only=True) as store:
        return export(store, name, fmt, out, as_of=as_of, force=force)
