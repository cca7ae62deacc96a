"""The input tables reconciliation reads (``TABLES``), :func:`load` reading them from a store
as they are now or as they were at a moment, and the vectorised helpers the rules share.

A hand-built table may leave out any column or table: :func:`conform` adds them, all missing,
and gives every column its dtype (ids and text ``string``, a few known values ``category``,
times tz-aware UTC, counts ``Int64``, flags ``boolean``).
"""

from __future__ import annotations

from collections.abc import Mapping
from string import Formatter
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.pesc.fields import IDENTITY  # the fields that name a student
from workbench.store.schema import PLAUSIBLE_AHEAD_DAYS, PLAUSIBLE_FROM, json_object

if TYPE_CHECKING:
    from workbench.store import Store

TIME = "datetime64[us, UTC]"
TEXT = pd.StringDtype("python")  # the same with or without pyarrow installed
COUNT = "Int64"
FLAG = "boolean"
CODE = "category"  # hashed once when conformed: the rules then compare integer codes

SUPPLIER_OPERATIONS = ("send_response", "send_transcript")
ACK_OPERATION = "send_acknowledgment"
UNSETTLED = ("uncertain", "pending")  # outbox states that may or may not have reached the partner
_DOCUMENT = {
    "detail_error": TEXT, "parse_error": TEXT, "validation_status": CODE,
    "validation_error": TEXT, "document_id": TEXT, "request_tracking_id": TEXT,
    "source_org_id": TEXT, "source_org_name": TEXT, "destination_org_id": TEXT,
    "destination_org_name": TEXT,
    "process_code": CODE,  # TEST or PRODUCTION: the environment the document comes from
    **dict.fromkeys(IDENTITY, TEXT),
}  # fmt: skip
_LISTED = {
    "request_date": TIME, "on_list": FLAG, "first_seen_at": TIME, "left_at": TIME,
    "left_reason": CODE,
}  # fmt: skip
# Which of an id's documents the row's fields are from (``versions``); a current Cancellation
# closes the item.
_VERSIONED = {
    "transmission_type": CODE, "current_version": COUNT, "version_count": COUNT,
    "cancelled_at": TIME,
}  # fmt: skip

# table -> column -> dtype: what ``load`` returns and what the pure functions read.
TABLES: dict[str, dict[str, str]] = {
    # transcript requests of the supplier's no-response list (one row per RequestID)
    "requests": {"request_id": TEXT, **_LISTED, **_DOCUMENT, **_VERSIONED},
    # transcripts of the consumer's list (one row per RequestID)
    "transcripts": {"transcript_id": TEXT, **_LISTED, **_DOCUMENT, **_VERSIONED,
                    "award_count": COUNT, "course_count": COUNT},
    # every distinct document received for an id (the store's ``documents``), oldest first;
    # ``entity``: transcript_requests or transcripts_received, ``item_id``: the API RequestID
    "versions": {
        "entity": TEXT, "item_id": TEXT, "version": COUNT, "document_id": TEXT,
        "transmission_type": CODE, "request_tracking_id": TEXT, "request_date": TIME,
        "first_seen_at": TIME,
    },
    # every POST of ours; ``sent_*``: fields of the document we sent (``outbox.payload_flat``)
    "outbox": {
        "outbox_id": COUNT, "operation": CODE, "request_id": TEXT, "state": CODE,
        "created_at": TIME, "updated_at": TIME, "resolved_at": TIME, "error": TEXT,
        "resolution": TEXT, "sent_document_id": TEXT, "sent_request_tracking_id": TEXT,
        "sent_response_status": TEXT, "sent_award_count": COUNT, "sent_course_count": COUNT,
        **{f"sent_{c}": TEXT for c in IDENTITY},
    },
    # TranscriptResponses we sent (filed from the outbox)
    "responses": {
        "outbox_id": COUNT, "request_id": TEXT, "sent_at": TIME, "inferred": FLAG,
        "response_status": CODE, "hold_reason": TEXT, "planned_release_date": TEXT,
        "request_tracking_id": TEXT,
    },
    # acknowledgments received back for our transcripts, or sent by us for theirs
    "acknowledgments": {
        "outbox_id": COUNT, "direction": CODE, "request_id": TEXT, "recorded_at": TIME,
        "inferred": FLAG, "document_id": TEXT, "request_tracking_id": TEXT,
        "academic_award_total": COUNT, "course_total": COUNT,
    },
}  # fmt: skip
AGE_EDGES = (2.0, 5.0, 10.0)  # days: the age buckets end here, and at the SLA
# The dates a partner can plausibly send, here, in the reports and the views (docs/reconcile.md).
EARLIEST = pd.Timestamp(PLAUSIBLE_FROM, tz="UTC")
AHEAD = pd.Timedelta(days=PLAUSIBLE_AHEAD_DAYS)
WINDOW = "from 1990-01-01 to a day past the as-of time"  # for messages without the moment


def empty_tables() -> dict[str, pd.DataFrame]:
    """Every input table, empty, with its columns and dtypes (``docs/reconcile.md``)."""
    return conform({})


def conform(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each input table with exactly its contract's columns (one left out: all missing; extra
    ones dropped) and dtypes."""
    frames = {name: pd.DataFrame(tables.get(name)).reset_index(drop=True) for name in TABLES}
    return {n: typed(frames[n].reindex(columns=[*cs]), cs) for n, cs in TABLES.items()}


def prepared(tables: Mapping[str, pd.DataFrame], *, now: pd.Timestamp) -> dict[str, pd.DataFrame]:
    """The conformed tables as the rules read them: requests and transcripts indexed by their
    id (a repeated id keeps its last row; the rules align on it, hashed once), a ``request_date``
    implausible at ``now`` moved to ``implausible_request_date``; the outbox oldest first; each
    response and acknowledgment with ``answers``, the id its outbox entry was sent for (else its
    own). No ``attrs``: pandas deep-copies them at every step (``reconcile`` stamps its outputs)."""
    t = conform(tables)
    for name, id_column in (("requests", "request_id"), ("transcripts", "transcript_id")):
        unique = t[name].drop_duplicates(id_column, keep="last").set_index(id_column)
        bad = outside(unique["request_date"], now)
        dates = unique["request_date"]
        t[name] = unique.assign(
            request_date=dates.where(~bad), implausible_request_date=dates.where(bad)
        )
    t["outbox"] = t["outbox"].sort_values("outbox_id", kind="stable", ignore_index=True)
    sent_for = by_entry(t["outbox"], "request_id")
    for name in ("responses", "acknowledgments"):
        frame = t[name]
        answers = frame["outbox_id"].map(sent_for).astype(TEXT).fillna(frame["request_id"])
        t[name] = frame.assign(answers=answers)
    return t


def by_entry(outbox: pd.DataFrame, column: str) -> pd.Series:
    """``column`` of each outbox entry, indexed by ``outbox_id`` (a repeated id: its last row)."""
    known = outbox[["outbox_id", column]].dropna(subset=["outbox_id"])
    return known.drop_duplicates("outbox_id", keep="last").set_index("outbox_id")[column]


def newest_acknowledgments(acknowledgments: pd.DataFrame, direction: str) -> pd.DataFrame:
    """Per outbox entry (the index), its newest readable acknowledgment of ``direction``: when
    it was recorded, its totals, and ``acked`` (True). A row with every field empty (the
    partner's reply held none we could read) is no acknowledgment."""
    fields = ["document_id", "request_tracking_id", "academic_award_total", "course_total"]
    readable = acknowledgments[fields].notna().any(axis=1)
    mine = readable & (acknowledgments["direction"] == direction).fillna(False)
    columns = ["outbox_id", "recorded_at", "academic_award_total", "course_total"]
    newest = acknowledgments.loc[mine, columns].dropna(subset=["outbox_id"])
    newest = newest.sort_values("recorded_at", kind="stable")
    newest = newest.drop_duplicates("outbox_id", keep="last").set_index("outbox_id")
    return newest.assign(acked=pd.Series(True, index=newest.index, dtype=FLAG))


def typed(frame: pd.DataFrame, columns: Mapping[str, str | None]) -> pd.DataFrame:
    """``frame``'s ``columns`` in that order, each in its dtype (None: as it is)."""
    return pd.DataFrame(
        {c: frame[c] if d is None else as_dtype(frame[c], d) for c, d in columns.items()},
        index=frame.index,
        copy=False,
    )


def as_dtype(series: pd.Series, dtype: str) -> pd.Series:
    """``series`` in one of the contract's dtypes; what does not convert becomes missing."""
    if dtype == TIME:
        return utc_times(series)
    if series.dtype == dtype:  # not str(): "string" also names pyarrow-backed text
        return series
    if dtype == COUNT:
        if series.dtype == object or isinstance(series.dtype, pd.StringDtype):
            series = pd.to_numeric(series, errors="coerce")
        return series.astype(COUNT)
    if dtype == CODE:
        return as_dtype(series, TEXT).astype(CODE)
    return series.astype(dtype)  # TEXT or FLAG


def utc_times(series: pd.Series) -> pd.Series:
    """Times as tz-aware UTC (naive ones taken as UTC); text that does not parse is NaT."""
    if str(series.dtype) == TIME:
        return series
    return pd.to_datetime(series, utc=True, errors="coerce", format="ISO8601").astype(TIME)


def timestamp(value: Any) -> pd.Timestamp:
    """A moment as a UTC ``Timestamp`` (naive taken as UTC)."""
    ts = pd.Timestamp(value)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.as_unit("us")


def window(now: Any) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The first and last plausible moments of data reconciled or reported at ``now``."""
    return EARLIEST, timestamp(now) + AHEAD


def outside(times: pd.Series, now: Any) -> pd.Series:
    """Which of ``times`` (tz-aware) are present and outside the window, as plain bools."""
    first, last = window(now)
    return ((times < first) | (times > last)).fillna(False).astype(bool)


def resolve_now(now: Any, tables: Mapping[str, pd.DataFrame]) -> pd.Timestamp:
    """``now`` as given; else the ``as_of`` that ``load`` stamped on the tables; else now."""
    if now is not None:
        return timestamp(now)
    for frame in tables.values():
        as_of = frame.attrs.get("as_of") if isinstance(frame, pd.DataFrame) else None
        if as_of is not None:
            return timestamp(as_of)
    return timestamp(pd.Timestamp.now(tz="UTC"))


def days_between(start: pd.Series, end: pd.Timestamp | pd.Series) -> pd.Series:
    """Days from ``start`` to ``end`` rounded to 0.1, never below 0 (missing where ``start`` is)."""
    delta = (end - start) / pd.Timedelta(days=1)
    return delta.astype("Float64").clip(lower=0).round(1)


def aged(frame: pd.DataFrame, now: pd.Timestamp, *, sla_days: float) -> pd.Series:
    """Add ``age_days`` and ``age_bucket`` to ``frame``, aged since its ``request_date``, else
    since we first saw it; return that moment."""
    since = frame["request_date"].fillna(frame["first_seen_at"])
    frame["age_days"] = days_between(since, now)
    frame["age_bucket"] = age_buckets(frame["age_days"], sla_days)
    return since


def overdue(
    frame: pd.DataFrame, since: pd.Series, now: pd.Timestamp, *, sla_days: float, grace_days: float
) -> pd.Series:
    """Past the SLA: the ``age_days`` shown (to 0.1 day) is over ``sla_days``, and the exact
    wait since ``since`` over ``sla_days + grace_days`` (so what arrived minutes ago is not
    overdue). Missing ages are not overdue."""
    waited = (now - since) / pd.Timedelta(days=1)
    shown = (frame["age_days"] > sla_days).fillna(False).to_numpy(dtype=bool)
    exact = (waited > sla_days + grace_days).fillna(False).to_numpy(dtype=bool)
    return pd.Series(shown & exact, index=frame.index, dtype=FLAG)


def age_edges(sla_days: float) -> tuple[float, ...]:
    """Where the age buckets end, in days: ``AGE_EDGES`` and the SLA (``age_edges(7)``:
    ``(2.0, 5.0, 7.0, 10.0)``), so that no bucket holds items on both sides of the SLA."""
    return tuple(sorted({*AGE_EDGES, float(sla_days)}))


def age_labels(sla_days: float) -> tuple[str, ...]:
    """The age buckets' labels: each holds ages above its lower edge up to and including its
    upper one, the last everything older (``age_labels(5)``: ``('0-2', '2-5', '5-10', '>10')``)."""
    edges = age_edges(sla_days)
    spans = zip((0.0, *edges[:-1]), edges, strict=True)
    return (*(f"{low:g}-{high:g}" if low < high else f"{high:g}" for low, high in spans),
            f">{edges[-1]:g}")  # fmt: skip


def age_buckets(ages: pd.Series, sla_days: float) -> pd.Series:
    """Each age (days) in its bucket of ``age_labels``, an ordered categorical; below 0 counts
    as 0, missing stays missing. An age at the SLA is within it."""
    edges = [-np.inf, *age_edges(sla_days), np.inf]
    return pd.cut(ages.astype("float64"), edges, labels=list(age_labels(sla_days)), right=True)


def states(conditions: list[tuple[str, pd.Series]], default: str, order: tuple[str, ...]) -> Any:
    """An ordered categorical of the first condition that holds, in precedence order.

    ``np.select`` on category codes: ``Series.case_when`` on the names costs 6x
    (bench/reconcile.py)."""
    codes = np.select(
        [c.fillna(False).to_numpy(dtype=bool) for _, c in conditions],
        [order.index(name) for name, _ in conditions],
        default=order.index(default),
    )
    return pd.Categorical.from_codes(codes, categories=list(order), ordered=True)


def text(series: pd.Series, missing: str = "?") -> np.ndarray:
    """Values as display text for messages (``missing`` where missing), an object array: times
    as ``2026-03-02 09:00 UTC``, floats with one decimal at most (``9``, ``9.5``)."""
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        shown = series.dt.tz_convert("UTC").dt.strftime("%Y-%m-%d %H:%M UTC")
    elif pd.api.types.is_float_dtype(series.dtype):
        shown = days_text(series).str.removesuffix(".0")
    else:
        shown = series.astype(TEXT)
    return shown.astype(object).where(shown.notna(), missing).to_numpy(dtype=object)


def days_text(days: pd.Series) -> pd.Series:
    """Days as text with one decimal, as messages show ages: ``9.8``, ``9.0`` (missing stays)."""
    values = days.to_numpy(dtype="float64", na_value=np.nan)
    shown = [None if np.isnan(v) else f"{round(v, 1) + 0.0:.1f}" for v in values]
    return pd.Series(shown, index=days.index, dtype=TEXT)


def fill(template: str, frame: pd.DataFrame) -> np.ndarray:
    """``template.format`` over the rows of ``frame``, vectorised: ``{column}`` is each row's
    value as :func:`text` shows it (``fill("open {days} days", frame)``)."""
    out = np.full(len(frame), "", dtype=object)
    for literal, name, _spec, _conversion in Formatter().parse(template):
        if literal:
            out = out + literal
        if name:
            out = out + text(frame[name])
    return out


# payload_flat field -> outbox column
_SENT_FIELDS = {
    "document_id": "sent_document_id", "request_tracking_id": "sent_request_tracking_id",
    "response_status": "sent_response_status", "award_count": "sent_award_count",
    "course_count": "sent_course_count", **{c: f"sent_{c}" for c in IDENTITY},
}  # fmt: skip
# input table, store table, id column, list
_ENTITIES = (
    ("requests", "transcript_requests", "request_id", "supplier_requests"),
    ("transcripts", "transcripts_received", "transcript_id", "consumer_transcripts"),
)


def load(store: Store, *, as_of: Any = None) -> dict[str, pd.DataFrame]:
    """The tables ``reconcile`` needs (``TABLES``) from ``store``, as the store knew them at
    ``as_of`` (a time; None: now; ``docs/reconcile.md``), which each frame's ``attrs`` carry."""
    at = None if as_of is None else timestamp(as_of)
    cut = None if at is None else at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # as the store writes
    versions = _versions(store, cut)
    raw = {
        "outbox": _outbox(store, cut),
        "responses": _read(store, "responses", "sent_at", cut),
        "acknowledgments": _read(store, "acknowledgments", "recorded_at", cut),
        "versions": versions,
    }
    for name, table, id_column, list_name in _ENTITIES:
        frame = _entity(store, table, id_column, list_name, cut)
        raw[name] = frame if cut is None else _current_as_of(frame, versions, table, id_column, cut)
    tables = conform(raw)
    for frame in tables.values():
        frame.attrs.update(operation="reconcile.load", as_of=at, db=str(store.path))
    return tables


def _read(store: Store, table: str, time_column: str, cut: str | None) -> pd.DataFrame:
    if cut is None:
        return store.table(table)
    return store.table(table, where=f"{time_column} <= ?", params=[cut])


def _versions(store: Store, cut: str | None) -> pd.DataFrame:
    """Every document received for an id (without its XML), as received by ``cut``."""
    columns = ", ".join(TABLES["versions"])
    where = "" if cut is None else " WHERE first_seen_at <= :cut"
    rows = store.db.query(
        f"SELECT {columns} FROM documents{where} ORDER BY entity, item_id, version",  # noqa: S608
        {"cut": cut},
    )
    return pd.DataFrame(list(rows), columns=list(TABLES["versions"]))


def _current_as_of(
    frame: pd.DataFrame, versions: pd.DataFrame, entity: str, id_column: str, cut: str
) -> pd.DataFrame:
    """The entity rows' version columns as the versions received by ``cut`` give them: a
    version that came later (a Reissue, a Cancellation) is not current yet."""
    mine = versions[versions["entity"] == entity].sort_values("version")
    latest = mine.drop_duplicates("item_id", keep="last").set_index("item_id")
    ids = frame[id_column]
    has = ids.isin(latest.index)
    current = ids.map(latest["version"]).where(has, frame["current_version"])
    cancelled_by_then = frame["cancelled_at"] <= timestamp(cut)
    still = (current == frame["current_version"]) & cancelled_by_then
    return frame.assign(
        current_version=current,
        version_count=ids.map(mine.groupby("item_id").size()).where(has, frame["version_count"]),
        transmission_type=ids.map(latest["transmission_type"]).where(
            has, frame["transmission_type"]
        ),
        cancelled_at=frame["cancelled_at"].where(still.fillna(False)),
    )


def _entity(store: Store, table: str, id_column: str, list_name: str, cut: str | None) -> Any:
    frame = _read(store, table, "first_seen_at", cut)
    validation = store.current_documents(list_name)["validation"]  # the current version's
    found = [json_object(v) for v in frame[id_column].map(validation)]
    found = pd.DataFrame(found, index=frame.index, columns=["status", "errors", "note"])
    first = found["errors"].map(lambda e: str(e[0]) if isinstance(e, list) and e else None)
    frame["validation_status"] = found["status"]
    frame["validation_error"] = first.fillna(found["note"]).where(found["status"] == "invalid")
    if cut is not None:
        frame = _membership(store, frame, id_column, list_name, cut)
    return frame


def _membership(
    store: Store, frame: pd.DataFrame, id_column: str, list_name: str, cut: str
) -> pd.DataFrame:
    """``on_list``, ``left_at`` and ``left_reason`` as the snapshots taken by ``cut`` had them."""
    snapshots = store.table(
        "snapshots", where="list_name = ? AND taken_at <= ?", params=[list_name, cut]
    )
    listed: pd.Series = pd.Series(dtype="string")
    if not snapshots.empty:
        last = snapshots.sort_values(["taken_at", "id"]).iloc[-1]
        items = store.table("snapshot_items", where="snapshot_id = ?", params=[int(last["id"])])
        listed = items["item_key"]
    departures = store.table(
        "departures", where="list_name = ? AND left_at <= ?", params=[list_name, cut]
    )
    departures = departures.sort_values(["left_at", "id"]).drop_duplicates("item_id", keep="last")
    latest = departures.set_index("item_id").reindex(frame[id_column].to_numpy())
    on_list = frame[id_column].isin(listed).to_numpy(dtype=bool)
    return frame.assign(
        on_list=on_list,
        left_at=latest["left_at"].where(~on_list).to_numpy(),
        left_reason=latest["left_reason"].where(~on_list).to_numpy(),
    )


def _outbox(store: Store, cut: str | None) -> pd.DataFrame:
    frame = _read(store, "outbox", "created_at", cut).rename(columns={"id": "outbox_id"})
    flats = [json_object(value) for value in frame["payload_flat"]]
    sent = pd.DataFrame(flats, index=frame.index, columns=[*_SENT_FIELDS], dtype=object)
    frame = frame.join(sent.rename(columns=_SENT_FIELDS))
    if cut is not None and not frame.empty:
        at = timestamp(cut)
        settled_later = (frame["resolved_at"] > at).fillna(False)
        marked_later = (frame["updated_at"] > at).fillna(False)
        frame["state"] = np.where(
            settled_later, "uncertain", np.where(marked_later, "pending", frame["state"])
        )
        frame["resolved_at"] = frame["resolved_at"].where(~settled_later)
        frame["resolution"] = frame["resolution"].where(~settled_later)
    return frame[[c for c in TABLES["outbox"] if c in frame.columns]]
