"""The API's DataFrames (DESIGN §5), the ``PESCXML`` field of answers, many details at once.

snake_case columns, the same whether empty or full; ``df.attrs``: ``operation``, ``fetched_at``,
``call_id``. Dtypes come from :data:`SCHEMA` (else the name), never from the rows: ids and text
``string``, times ``datetime64[us, UTC]`` (text when not ISO 8601), dates ``datetime64[s]``
(``NaT`` where not ``YYYY-MM-DD``), counts ``Int64``, flags ``boolean``.

>>> frame([{"RequestID": "A1"}], columns=["request_id"], operation="x").dtypes["request_id"]
string[python]
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, NamedTuple

import pandas as pd
from tqdm.auto import tqdm

from workbench import pesc
from workbench.errors import PescError, WorkbenchError
from workbench.http.answers import list_items
from workbench.pesc.fields import KEYS
from workbench.pesc.tables import TIME_DTYPE as PESC_TIME
from workbench.pesc.tables import dtype_of
from workbench.store.details import pescxml_of
from workbench.store.frames import events_flat, is_missing, snake, utc

logger = logging.getLogger(__name__)

RAW, CALL_ID, ERROR, PESCXML, PARSE_ERROR = "raw", "call_id", "error", "pescxml", "parse_error"
TIME = "datetime64[us, UTC]"
DATE = "datetime64[s]"  # a calendar date: no time of day, no time zone
HANDFUL = 5  # more ids than this, in an interactive session, and a progress bar appears
_pools = itertools.count()  # each pool's threads named apart, to be joined by name
_TIME_NAME = re.compile(r"(^|_)(at|time|timestamp|datetime)$|^request_date$")
_ID_NAME = re.compile(r"(^|_)id$")
_DATE = r"^\s*(\d{4}-\d{2}-\d{2})(?:$|[TZ+\-\s])"
# Every column an operation may return: the PESC fields (typed as pesc.to_frames does), then ours.
SCHEMA: dict[str, str] = {
    **{key: dtype_of(key) for keys in KEYS.values() for key in keys},
    **{key: TIME for keys in KEYS.values() for key in keys if dtype_of(key) == PESC_TIME},
    "student_birth_date": DATE,
    "planned_release_date": DATE,
    "request_id": "string",
    "request_date": TIME,
    PESCXML: "string",
    PARSE_ERROR: "string",
    ERROR: "string",
    RAW: "string",
    CALL_ID: "Int64",
}
Rows = list[dict[str, Any]]


def dtype_for(column: str) -> str | None:
    """The declared dtype of a column (:data:`SCHEMA`, else by its name); None: as read."""
    if column in SCHEMA:
        return SCHEMA[column]
    return "string" if _ID_NAME.search(column) else TIME if _TIME_NAME.search(column) else None


def snake_keys(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record with snake_case keys; on a clash the first key keeps the name."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = snake(key)
        while name in out:
            name += "_"
        out[name] = value
    return out


def frame(
    records: Iterable[Mapping[str, Any]],
    *,
    columns: Sequence[str],
    operation: str,
    tail: Sequence[str] = (),
    call_id: Any = None,
) -> pd.DataFrame:
    """A DataFrame of snake-cased ``records``: ``columns``, any other fields, then ``tail``."""
    rows = [snake_keys(r) for r in records]
    fixed = {*columns, *tail}
    extra = list(dict.fromkeys(k for row in rows for k in row if k not in fixed))
    df = pd.DataFrame.from_records(rows, columns=[*columns, *extra, *tail])
    return finish(df, operation=operation, call_id=call_id)


def finish(df: pd.DataFrame, *, operation: str, call_id: Any = None) -> pd.DataFrame:
    """Give every column its declared dtype (:func:`dtype_for`) and stamp ``df.attrs``."""
    for column in df.columns:
        dtype = dtype_for(str(column))
        if dtype is not None:
            df[column] = _typed(df[column], dtype, str(column))
    df.attrs.update(operation=operation, fetched_at=pd.Timestamp.now(tz="UTC"), call_id=call_id)
    return df


def events_frame(
    payload: Any, *, operation: str, call_id: Any = None, paths: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Events (an array, or an object holding one): id, type and time first (found at the
    profile's ``paths`` first), then every field flattened; ``raw`` keeps each event's JSON."""
    items = list_items(payload, operation=operation)
    flat = events_flat(items, paths)
    raw = [json.dumps(e, ensure_ascii=False, sort_keys=True) for e in items]
    flat[RAW] = pd.array(raw, dtype="string")
    return finish(flat, operation=operation, call_id=call_id)


def _typed(series: pd.Series, dtype: str, name: str) -> pd.Series:
    if dtype == "string":
        text = series.map(lambda v: v if is_missing(v) or isinstance(v, str) else str(v))
        return text.astype("string")
    if dtype == TIME:
        typed = utc(series)
        if not isinstance(typed.dtype, pd.DatetimeTZDtype):
            logger.warning("column %s holds values that are not ISO 8601 times; kept as text", name)
        return typed
    if dtype == DATE:
        if pd.api.types.is_datetime64_any_dtype(series.dtype):
            return series.dt.tz_localize(None) if series.dt.tz else series
        text = series.map(lambda v: None if is_missing(v) else str(v)).astype("string")
        day = text.str.extract(_DATE, expand=False)
        days = pd.to_datetime(day, format="%Y-%m-%d", errors="coerce").astype(DATE)
        unread = int((text.notna() & day.isna()).sum())
        if unread:  # never the values: they are students' personal data
            logger.warning(
                "column %s: %d value(s) are not dates (YYYY-MM-DD) and read as NaT; each "
                "document (pescxml) keeps what it wrote",
                name,
                unread,
            )
        return days
    try:
        return pd.Series(
            pd.array([None if is_missing(v) else v for v in series], dtype=dtype),
            index=series.index,
        )
    except (TypeError, ValueError):
        logger.warning("column %s holds values that are not %s; kept as read", name, dtype)
        return series


class Parsed(NamedTuple):
    """A ``PESCXML`` value parsed: its XML (unescaped once), its document or ``error``."""

    xml: str | None
    document: pesc.PescDocument | None
    error: str | None


def parse_pescxml(value: str | None) -> Parsed:
    """A ``PESCXML`` value parsed (escaped twice is refused, not repaired); never raises."""
    if not value:
        return Parsed(value, None, "no PESCXML in the answer")
    try:
        document = pesc.parse(value)
    except PescError as exc:
        return Parsed(value, None, f"{exc.reason}: {exc}")
    return Parsed(document.text, document, None)


def document_row(item: dict[str, Any]) -> dict[str, Any]:
    """An answer item as a row: its fields, the parsed document's fields, ``pescxml`` last."""
    value, rest = pescxml_of(item)
    xml, document, error = parse_pescxml(value)
    row = snake_keys(rest)
    fields = pesc.flatten(document) if document is not None else {}
    for key, field in {**fields, PARSE_ERROR: error}.items():
        row[key if key not in row else f"pesc_{key}"] = field
    row[PESCXML] = xml
    return row


def text_of(document: Any) -> str:
    """The XML text of what a caller sends: a string, bytes, or a parsed document."""
    if isinstance(document, bytes):
        return document.decode("utf-8")
    text = document if isinstance(document, str) else getattr(document, "text", None)
    if isinstance(text, str):
        return text
    raise TypeError(f"pescxml must be XML text or a parsed PESC document, not {type(document)}")


def ids_of(ids: Iterable[Any] | pd.DataFrame | pd.Series | str) -> list[Any]:
    """The ids to fetch, in order, each once: a list, a Series, or a frame's ``request_id``."""
    if isinstance(ids, str):
        ids = [ids]
    elif isinstance(ids, pd.DataFrame):
        if "request_id" not in ids.columns:
            raise ValueError("a DataFrame of ids needs a request_id column")
        ids = ids["request_id"]
    unique: list[Any] = []
    seen: set[Any] = set()
    for value in ids:
        try:
            if value in seen:
                continue
            seen.add(value)
        except TypeError:  # unhashable: kept, and refused later with its own error row
            pass
        unique.append(value)
    return unique


def fetch_all(
    ids: list[Any],
    fetch: Callable[[Any], Rows],
    *,
    concurrency: int,
    progress: bool | None = None,
    desc: str = "details",
    then: Callable[[Rows], Rows] | None = None,
) -> Rows:
    """``fetch(id)`` for every id on ``concurrency`` threads (not asyncio: Jupyter runs a
    loop), rows in the order of ``ids``; a ``WorkbenchError`` is its id's ``error`` row, anything
    else (a bug, Ctrl-C) stops the batch. ``then``: in the calling thread, the rows of the
    fetches finished so far made into as many rows, while the next ones run (at most
    ``4 * concurrency`` fetched wait for it)."""
    if not ids:
        return []
    show = (interactive() if progress is None else progress) and len(ids) > HANDFUL
    prefix = f"wb-{next(_pools)}"
    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(ids)), thread_name_prefix=prefix)
    bar = tqdm(total=len(ids), desc=desc, unit="id", disable=not show, leave=False)
    todo = iter(enumerate(ids))
    rows: dict[int, Rows] = {}

    def submit(count: int) -> set[Future[tuple[int, Rows]]]:
        return {pool.submit(_guarded, fetch, i, v) for i, v in itertools.islice(todo, count)}

    try:
        pending = submit(4 * concurrency if then else len(ids))
        while pending:  # asleep until some end (with a bar or a then), all end, or one fails
            until = FIRST_COMPLETED if show or then else FIRST_EXCEPTION
            done, pending = wait(pending, return_when=until)
            finished = dict(future.result() for future in done)
            pending |= submit(len(done))
            if then is not None:
                order = sorted(finished)
                out = iter(then([row for i in order for row in finished[i]]))
                finished = {i: [next(out) for _ in finished[i]] for i in order}
            rows.update(finished)
            bar.update(len(done))
        return [row for i in sorted(rows) for row in rows[i]]
    finally:
        # On Ctrl-C (or any escape) drop what has not started; running fetches end on timeouts.
        pool.shutdown(wait=True, cancel_futures=True)
        # A Ctrl-C inside submit() can land while it starts a thread, which the pool then never
        # joins: joined here, so no fetch records its call after the caller closed the store.
        for thread in threading.enumerate():
            if thread.name.startswith(f"{prefix}_"):
                thread.join()
        bar.close()


def _guarded(fetch: Callable[[Any], Rows], index: int, value: Any) -> tuple[int, Rows]:
    try:
        return index, fetch(value)
    except WorkbenchError as exc:
        shown = value if isinstance(value, str) else None
        error = {"request_id": shown, ERROR: f"{type(exc).__name__}: {exc}", CALL_ID: exc.call_id}
        return index, [error]


def interactive() -> bool:
    """True in a Jupyter kernel or at a terminal; False under cron, CI or a pipe."""
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None else None
    return type(ip).__name__ == "ZMQInteractiveShell" or sys.stderr.isatty()
