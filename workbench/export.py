"""One table, view or partner list of the store written to a csv, xlsx or parquet file: 0600,
never half, partner text never a live formula.

>>> export(store, "supplier_requests", "parquet", as_of="3").path  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, InvalidParameter
from workbench.folders import check_folder

if TYPE_CHECKING:
    import pandas as pd

    from workbench.store import Store

FORMATS = ("csv", "xlsx", "parquet")
XLSX_MAX_ROWS = 1_048_575  # Excel's 1,048,576 rows, less the header
XLSX_MAX_CELL = 32_767  # characters Excel shows in one cell
_XLSX_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # XML 1.0 refuses them
# what a spreadsheet reads as the start of a formula (OWASP's list, and its full-width forms)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


@dataclass(frozen=True)
class Exported:
    """What :func:`export` wrote, and ``notes`` on what the format could not keep."""

    path: Path
    name: str
    kind: str  # table, view or list
    fmt: str
    rows: int
    columns: int
    snapshot: str | None = None  # for a list: which snapshot
    notes: list[str] = field(default_factory=list)
    sandbox: bool = False  # the embedded sandbox's data: its name and an xlsx's title say so


def export(
    store: Store,
    name: str,
    fmt: str | None = None,
    out: str | os.PathLike[str] | None = None,
    *,
    as_of: str | int | None = None,
    force: bool = False,
) -> Exported:
    """Write ``name`` to ``out`` (default: ``exports/NAME-<UTC time>.<fmt>`` beside the database)
    as ``fmt`` (else ``out``'s suffix, else csv); ``as_of``: a run id or an ISO time (lists)."""
    from workbench.store import LIST_NAMES

    suffix = Path(out).suffix.lower().lstrip(".") if out is not None else ""
    fmt = (fmt or (suffix if suffix in FORMATS else "csv")).strip().lower()
    if fmt not in FORMATS:
        raise InvalidParameter(
            f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}", parameter="format"
        )
    if suffix in FORMATS and suffix != fmt:
        raise InvalidParameter(
            f"--out ends in .{suffix} but the format is {fmt}: make them agree", parameter="format"
        )
    kinds = sources(store)
    kind = kinds.get(name)
    if kind is None:
        names = {k: ", ".join(n for n, of in kinds.items() if of == k) for k in set(kinds.values())}
        raise InvalidParameter(
            f"there is no table, view or partner list {name!r} in the store. Views: "
            f"{names.get('view', '')}. Tables: {names.get('table', '')}. Partner lists: "
            f"{', '.join(LIST_NAMES)}",
            parameter="name",
        )
    if as_of is not None and kind != "list":
        raise InvalidParameter(
            f"{name} is a {kind}: only the partner lists ({', '.join(LIST_NAMES)}) "
            "have a past to export",
            parameter="as_of",
        )
    if fmt == "parquet":  # a missing library is said before anything is read
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ConfigError(
                "parquet needs pyarrow, which is not installed: `pip install 'workbench[parquet]'` "
                "(or use --format csv or xlsx)"
            ) from None
    sandbox = store.holds_sandbox_data()
    if out is None:
        past = "" if as_of is None else "-as-of-" + re.sub(r"[^0-9A-Za-z]+", "", str(as_of))
        stem = f"{'sandbox-' if sandbox else ''}{name}{past}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
        out = Path(store.path).parent / "exports" / f"{stem}.{fmt}"
    path = Path(out).expanduser().absolute()
    if path.is_dir():
        raise InvalidParameter(f"{path} is a folder: give a file name", parameter="out")
    check_folder(path.parent, parameter="out")
    snapshot = None
    if kind == "list":
        moment, label = list_moment(store, as_of)
        frame = store.as_of(moment)[name]
        snapshot = (
            f"snapshot {frame.attrs['snapshot_id']} taken at "
            f"{frame.attrs['taken_at'].isoformat()} ({label})"
            if frame.attrs.get("snapshot_id") is not None
            else f"no snapshot of {name} ({label}): an empty list"
        )
    else:
        frame = store.table(name)
    plain = frame.copy()  # values no format knows (a list's dicts and lists) as JSON
    for column in plain.columns:
        if plain[column].dtype == object:
            plain[column] = plain[column].map(
                lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v
            )
    writers: dict[str, Callable[[Path], list[str]]] = {
        "csv": lambda target: write_csv(plain, target),
        "xlsx": lambda target: write_xlsx(plain, target, name, sandbox=sandbox),
        "parquet": lambda target: _parquet(plain, target),
    }
    notes = write_private(path, writers[fmt], force=force)
    return Exported(path, name, kind, fmt, len(frame), len(frame.columns), snapshot, notes, sandbox)


def sources(store: Store) -> dict[str, str]:
    """The store's views, tables (not SQLite's own) and partner lists, in that order: name, kind
    (a list is read from its snapshots)."""
    from workbench.store import LIST_NAMES

    views = sorted(store.db.view_names())
    tables = sorted(n for n in store.db.table_names() if not n.lower().startswith("sqlite_"))
    return (
        dict.fromkeys(views, "view")
        | dict.fromkeys(tables, "table")
        | dict.fromkeys(LIST_NAMES, "list")
    )


def list_moment(store: Store, as_of: str | int | None) -> tuple[Any, str]:
    """The moment a list is read at (``store.as_of``'s argument) and how to say it."""
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
        moment = run["finished_at"] if pd.notna(run["finished_at"]) else run["started_at"]
        return moment, f"as of run {text}"
    when = pd.to_datetime(text, errors="coerce")  # NaT when it is no time
    if pd.isna(when):
        raise InvalidParameter(
            f"{text!r} is neither a run id nor an ISO 8601 time", parameter="as_of"
        )
    when = when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")
    if when > pd.Timestamp.now(tz="UTC"):
        raise InvalidParameter(f"{text} is in the future", parameter="as_of")
    return when, f"as of {when.isoformat()}"


def write_private(path: Path, write: Callable[[Path], list[str]], *, force: bool) -> list[str]:
    """Write through ``write`` into a 0600 file beside ``path``, then move it there."""
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
    """Whether a spreadsheet would run ``value`` as a formula (a number never is)."""
    return isinstance(value, str) and value.startswith(FORMULA_START)


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with formula-like text made inert by a leading ``'`` (``=1+1`` -> ``'=1+1``)."""
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype == object or isinstance(series.dtype, pd.StringDtype):
            values = [f"'{v}" if formula_like(v) else v for v in series]
            out[column] = pd.Series(values, index=series.index, dtype=series.dtype)
    return out


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> list[str]:
    """``frame`` as csv: times ISO 8601 UTC, text :func:`spreadsheet_safe`, CRLF rows (RFC 4180).
    Not defusedcsv: it leaves a leading tab, CR and the full-width ``＝`` live."""
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        if isinstance(out[column].dtype, pd.DatetimeTZDtype):
            utc = out[column].dt.tz_convert("UTC")
            out[column] = utc.dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ").where(utc.notna(), None)
    spreadsheet_safe(out).to_csv(path, index=False, lineterminator="\r\n")
    return []


def _parquet(frame: pd.DataFrame, path: Path) -> list[str]:
    """pandas' dtypes kept (times in microseconds, as Spark reads); mixed values as text."""
    import pyarrow as pa

    from workbench.store.frames import is_missing

    notes, frame = [], frame.copy()
    frame.attrs = {}  # pyarrow would store them, Timestamps and all
    for column in frame.columns:
        try:
            pa.Array.from_pandas(frame[column])
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed values: times and text, say
            frame[column] = (
                frame[column].map(lambda v: None if is_missing(v) else str(v)).astype("string")
            )
            notes.append(f"{column}: mixed values, written as text")
    frame.to_parquet(path, index=False, coerce_timestamps="us", allow_truncated_timestamps=True)
    return notes


def write_xlsx(frame: pd.DataFrame, path: Path, name: str, *, sandbox: bool) -> list[str]:
    """``frame`` as worksheet ``name``: times in UTC (columns ``<name>_utc``), text never a formula;
    notes on values cut at Excel's limit."""
    import pandas as pd
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    if len(frame) > XLSX_MAX_ROWS:
        raise InvalidParameter(
            f"{name} has {len(frame)} rows, more than a worksheet holds "
            f"({XLSX_MAX_ROWS}): use --format csv or parquet",
            parameter="format",
        )
    times = [c for c in frame.columns if isinstance(frame[c].dtype, pd.DatetimeTZDtype)]
    out = frame.assign(
        **{c: frame[c].dt.tz_convert("UTC").dt.tz_localize(None) for c in times}
    ).rename(columns={c: f"{c}_utc" for c in times})
    book = Workbook(write_only=True)
    if sandbox:  # a spreadsheet says so in its title; a csv cannot
        from workbench.store.identity import SANDBOX_TITLE

        book.properties.title = f"{SANDBOX_TITLE}: {name}"
    sheet = book.create_sheet(title=name[:31])
    sheet.append([str(c) for c in out.columns])
    cut: dict[str, int] = {}
    for row in out.itertuples(index=False, name=None):
        cells = []
        for column, value in zip(out.columns, row, strict=True):
            cell = WriteOnlyCell(sheet, value=_cell_value(value, str(column), cut))
            if isinstance(cell.value, str):
                cell.data_type = "s"  # text that starts with "=" stays text
                cell.quotePrefix = formula_like(cell.value)  # and stays so when edited
            cells.append(cell)
        sheet.append(cells)
    book.save(path)
    return [
        f"{column}: {n} value(s) longer than Excel's {XLSX_MAX_CELL} characters, cut (csv and "
        "parquet keep them whole)"
        for column, n in cut.items()
    ]


def _cell_value(value: Any, column: str, cut: dict[str, int]) -> Any:
    """None for a missing value; text with XML's illegal characters escaped, cut at the limit."""
    from workbench.store.frames import is_missing

    if is_missing(value):
        return None
    if hasattr(value, "item") and hasattr(value, "dtype"):  # a numpy scalar
        value = value.item()
    if not isinstance(value, str | int | float | bool | datetime) or getattr(value, "tzinfo", None):
        value = str(value)  # a mixed column's zoned times, say, as text
    if isinstance(value, str):
        value = _XLSX_ILLEGAL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)
        if len(value) > XLSX_MAX_CELL:
            cut[column] = cut.get(column, 0) + 1
            value = value[:XLSX_MAX_CELL]
    return value
