"""The ipywidgets explorer of a workbench database: tables, views and lists (as of any pull run)
filtered and sorted ignoring case and accents, a request's documents, two pull runs compared.

>>> from workbench.explorer import Explorer
>>> explorer = Explorer.open("data/workbench.db")  # doctest: +SKIP
>>> explorer.search.value = "goncalves"  # doctest: +SKIP  (finds Gonçalves)
>>> explorer.frame  # doctest: +SKIP  (the rows shown, as a DataFrame)
"""

from __future__ import annotations

import sqlite3
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, NamedTuple

import ipywidgets as widgets
import pandas as pd

from workbench.bundle import request_documents
from workbench.errors import StoreError, WorkbenchError
from workbench.explorer import render
from workbench.explorer.render import parse_order
from workbench.export import list_moment, sources
from workbench.report.history import pull_runs
from workbench.report.markup import STYLE, plain
from workbench.report.stores import open_store, report_zone
from workbench.report.troubleshoot import versions_section
from workbench.store import Store

__all__ = ["DEFAULT_SOURCE", "Explorer"]

LATEST = "latest"
EACH = 0  # the diff boxes' "each version against the one before" (versions count from 1)
MAX_LIMIT = 1000
ID_COLUMNS = ("request_id", "transcript_id", "item_id", "item_key", "event_key")


@dataclass(frozen=True)
class Source:
    """A ``view`` or ``table`` of the store, or a partner ``list`` as it stood after a run."""

    kind: str
    name: str

    @property
    def label(self) -> str:
        return f"{self.kind}: {self.name}"


DEFAULT_SOURCE = Source("view", "open_requests")


class Rows(NamedTuple):
    """The first rows that match (at most the limit), and how many match."""

    frame: pd.DataFrame
    total: int


def load_rows(
    store: Store, source: Source, text: str = "", *, limit: int, as_of: Any = None, order: str = ""
) -> Rows:
    """At most ``limit`` rows of ``source`` (a list: as it stood at ``as_of``) holding ``text``,
    sorted by ``order`` (:func:`parse_order`; missing values last, a column it lacks ignored)."""
    column, descending = parse_order(order)
    needle = text.strip()
    if source.kind == "list":
        frame = store.as_of(as_of)[source.name]
        if needle:
            frame = frame[frame_mask(frame, needle)]
        if column in frame.columns:
            frame = frame.sort_values(
                column, ascending=not descending, na_position="last", kind="stable", key=_folded
            )
        return Rows(frame.head(limit).reset_index(drop=True), len(frame))
    conn = store.db.conn  # SQLite's LIKE folds ASCII only: the students' names are not ASCII
    conn.create_function("workbench_contains", -1, _contains, deterministic=True)
    conn.create_collation("workbench_fold", _compare)
    columns = [c.name for c in store.db[source.name].columns]
    condition, params = "1", []
    if needle and columns:  # one call: the widest table (56 columns) is far from 127 arguments
        condition, params = f"workbench_contains(?, {', '.join(map(_quote, columns))})", [needle]
    sql = condition
    if column in columns:
        name, direction = _quote(str(column)), " DESC" if descending else ""
        sql += f" ORDER BY ({name} IS NULL), {name} COLLATE workbench_fold{direction}"
    # ``store.table`` says clearly when the table is gone, so it runs before the count.
    frame = store.table(source.name, where=f"{sql} LIMIT ?", params=[*params, limit])
    try:
        total = store.db[source.name].count_where(condition, params)
    except sqlite3.Error as exc:
        raise StoreError(f"Cannot count the rows of {source.name}: {exc}.") from exc
    return Rows(frame, int(total))


def fold(value: Any) -> str:
    """``value`` as text without case or accents: ``fold("Gonçalves") == "goncalves"``."""
    decomposed = unicodedata.normalize("NFKD", str(value))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def frame_mask(frame: pd.DataFrame, text: str) -> pd.Series:
    """Which rows of ``frame`` hold ``text`` in a cell (the pandas twin of the SQL filter)."""
    needle = fold(text.strip())
    hits = [any(needle in fold(plain(v)) for v in row) for row in frame.itertuples(index=False)]
    return pd.Series(hits, index=frame.index, dtype=bool)


def _folded(series: pd.Series) -> pd.Series:
    """A column of text sorts by :func:`fold`; any other as it is."""
    if series.dropna().map(lambda v: isinstance(v, str)).all():
        return series.map(fold, na_action="ignore")
    return series


def _contains(needle: Any, *values: Any) -> bool:
    wanted = fold(needle)
    return any(wanted in fold(v) for v in values if v is not None)


def _compare(a: str, b: str) -> int:
    left, right = (fold(a), a), (fold(b), b)  # ties broken by the text itself: a total order
    return (left > right) - (left < right)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Explorer:
    """Browse a workbench database in JupyterLab, times in zone ``tz`` (None: the profile's)."""

    def __init__(self, store: Store, *, tz: str | None = None) -> None:
        self.store = store
        self.tz = report_zone(tz)
        self.diff_frame = pd.DataFrame()  # the last comparison, whole
        self._quiet = False
        wide, narrow = widgets.Layout(width="22em"), widgets.Layout(width="14em")
        self.source = widgets.Dropdown(description="show", layout=wide)
        self.run = widgets.Dropdown(description="as of run", disabled=True, layout=wide)
        self.search = widgets.Text(
            description="filter", placeholder="text anywhere in a row", continuous_update=False
        )
        self.limit = widgets.BoundedIntText(
            value=50, min=1, max=MAX_LIMIT, description="rows", layout=widgets.Layout(width="12em")
        )
        reload = widgets.Button(description="Reload", icon="refresh")
        reload.on_click(lambda _button: self.reload())
        # The sort key ("column", "-column" descending, "" as stored): a header's click writes it.
        self.sort = widgets.Text(continuous_update=False, layout=widgets.Layout(display="none"))
        self.sort.add_class(render.SORT_CLASS)
        self.status, self.rows = widgets.HTML(), widgets.HTML()
        top = widgets.HBox([self.source, self.run, reload])
        filters = widgets.HBox([self.search, self.limit])
        controls = widgets.VBox([top, filters, self.sort, self.status])

        self.document_id = widgets.Combobox(
            description="id", placeholder="pick from the rows shown, or type",
            ensure_option=False, continuous_update=False, layout=widgets.Layout(width="40em"),
        )  # fmt: skip
        self.version_a = widgets.Dropdown(description="diff", layout=narrow)
        self.version_b = widgets.Dropdown(description="against", layout=narrow)
        self.document = widgets.HTML()
        pick = widgets.HBox([self.document_id, self.version_a, self.version_b])

        self.run_a = widgets.Dropdown(description="before", layout=wide)
        self.run_b = widgets.Dropdown(description="after", layout=wide)
        self.diff = widgets.HTML()

        for sticky in (controls, pick):  # in view above a table that scrolls on its own
            sticky.add_class("workbench-controls")
        self.tabs = widgets.Tab(
            children=[
                widgets.VBox([controls, self.rows]),
                widgets.VBox([pick, self.document]),
                widgets.VBox([widgets.HBox([self.run_a, self.run_b]), self.diff]),
            ],
            titles=["Rows", "Document", "Compare runs"],
        )
        title = widgets.HTML(f"{STYLE}{render.STYLE}<b>{escape(str(self.store.path))}</b>")
        self.widget = widgets.VBox([title, self.tabs])
        self.widget.add_class("workbench-explorer")

        self._on((self.source, self.run, self.search, self.limit, self.sort), self.refresh)
        self._on((self.document_id,), self._offer_versions)
        self._on((self.version_a, self.version_b), self.show_document)
        self._on((self.run_a, self.run_b), self.compare)
        self.reload()

    @classmethod
    def open(cls, db: str | Path | None = None, *, tz: str | None = None) -> Explorer:
        """The explorer on an existing database (default: the profile's), else ``StoreError``."""
        store = open_store(db)
        try:
            return cls(store, tz=tz)
        except BaseException:
            store.close()
            raise

    def _on(self, controls: tuple[widgets.Widget, ...], action: Callable[[], None]) -> None:
        def changed(_change: Any) -> None:
            if not self._quiet:
                action()

        for control in controls:
            control.observe(changed, names="value")

    @contextmanager
    def _quietly(self) -> Iterator[None]:
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def reload(self) -> None:
        """Read the store again (new tables, new runs), keeping the choices that still exist."""
        found = [Source(kind, name) for name, kind in sources(self.store).items()]
        labels = [
            (f"#{r.id} · {render.cell_text(r.started_at, tz=self.tz)} · {r.status}", int(r.id))
            for r in pull_runs(self.store).iloc[::-1].itertuples()  # newest first
        ]
        ids = [run for _, run in labels]
        with self._quietly():
            source, run, run_a, run_b = (self.source.value, self.run.value,
                                         self.run_a.value, self.run_b.value)  # fmt: skip
            self.source.options = [(s.label, s) for s in found]
            fallback = DEFAULT_SOURCE if DEFAULT_SOURCE in found else found[0]
            self.source.value = source if source in found else fallback
            self.run.options = [(LATEST, LATEST), *labels]
            self.run.value = run if run in ids else LATEST
            self.run_a.options = self.run_b.options = labels
            if len(ids) >= 2:  # the newest run against the one before, unless chosen
                self.run_a.value = run_a if run_a in ids else ids[1]
                self.run_b.value = run_b if run_b in ids else ids[0]
        self.refresh()
        self.compare()

    def refresh(self) -> None:
        """Show the rows of the chosen source that hold the filter's text."""
        source: Source = self.source.value
        try:
            found = load_rows(
                self.store, source, self.search.value, limit=int(self.limit.value),
                as_of=self._as_of(), order=self.sort.value,
            )  # fmt: skip
        except WorkbenchError as exc:  # nothing of the previous source stays on screen
            found, rows = Rows(pd.DataFrame(), 0), ""
            self.status.value = render.message_html(str(exc), error=True)
        else:
            rows = render.rows_html(found.frame, tz=self.tz, order=self.sort.value)
            label = source.label + (f" ({self.run.label})" if source.kind == "list" else "")
            shown = len(found.frame)
            self.status.value = render.status_html(label, shown, found.total, tz=self.tz)
        self.rows_found, self.frame, self.rows.value = found, found.frame, rows  # frame: shown
        ids: Any = next((found.frame[c] for c in ID_COLUMNS if c in found.frame.columns), [])
        with self._quietly():
            self.run.disabled = source.kind != "list"
            self.document_id.options = list(dict.fromkeys(t for t in map(plain, ids) if t))

    def show_document(self, item_id: str | None = None) -> None:
        """Show the documents about ``item_id`` (default: the id box's): :func:`documents_html`."""
        if item_id is not None and item_id != self.document_id.value:
            self.document_id.value = item_id  # which offers its versions and shows it
            return
        wanted = (self.document_id.value or "").strip()
        pair = (self.version_a.value, self.version_b.value)
        if not wanted:
            self.document.value = render.message_html("Pick or type an id.")
            return
        if EACH not in pair and pair[0] == pair[1]:
            self.document.value = render.message_html("Pick two different versions to diff.")
            return
        try:
            found = request_documents(self.store, wanted)
            versions = versions_section(
                self.store, wanted, compare=None if EACH in pair else pair,
                max_chars=render.MAX_DOCUMENT,
            ).data  # fmt: skip
        except WorkbenchError as exc:
            self.document.value = render.message_html(str(exc), error=True)
            return
        self.document.value = render.documents_html(wanted, found, versions=versions, tz=self.tz)

    def _offer_versions(self) -> None:
        wanted = (self.document_id.value or "").strip()
        try:
            numbers = [int(v) for v in self.store.versions(wanted)["version"]] if wanted else []
        except WorkbenchError:
            numbers = []
        with self._quietly():
            for box in (self.version_a, self.version_b):
                box.options = [("each", EACH), *((f"v{n}", n) for n in numbers)]
                box.value, box.disabled = EACH, len(numbers) < 2
        self.show_document()

    def compare(self) -> None:
        """Show what changed in each list between the two chosen pull runs."""
        run_a, run_b = self.run_a.value, self.run_b.value
        if run_a is None or run_b is None:
            self.diff.value = render.message_html(
                "Comparing needs two pull runs that finished ok or partial; run "
                "`workbench pull` again later."
            )
            return
        if run_a == run_b:
            self.diff.value = render.message_html("Pick two different runs.")
            return
        try:
            self.diff_frame = self.store.diff(run_a, run_b)
        except WorkbenchError as exc:
            self.diff.value = render.message_html(str(exc), error=True)
            return
        self.diff.value = render.diff_html(self.diff_frame, limit=int(self.limit.value), tz=self.tz)

    def close(self) -> None:
        """Close the widgets and the store."""
        _close_tree(self.widget)
        self.store.close()

    def __enter__(self) -> Explorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _as_of(self) -> Any:
        return (
            None if self.run.value in (LATEST, None) else list_moment(self.store, self.run.value)[0]
        )


def _close_tree(widget: widgets.Widget) -> None:
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()
