"""The explorer itself: three panes of ipywidgets over one store.

- **Rows**: a view, a table, or a partner list as it stood after a pull run; a free-text
  filter, a column + value filter (both ignore case and accents), a row limit; the rows as an
  HTML table ("showing N of M") whose headers sort, times to the second in the profile's zone.
  The controls stay in view above the table, which scrolls on its own.
- **Document**: an id (picked from the rows shown, or typed): every PESC document about it as
  a record (student, identifiers, sessions, courses, awards), our transcript next to the
  partner's acknowledgment totals, the diff between any two versions received, and the raw
  XML with its schema validation one click away.
- **Compare runs**: two pull runs that finished ok or partial (``report.pull_runs``; a
  running or failed run's snapshots are partial): what appeared, vanished or changed in each
  list.

Every widget is an attribute and every pane has a method, so the explorer is driven from
Python as from the browser: set ``.value``, read the HTML widgets' ``.value``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from html import escape
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd

from workbench.errors import WorkbenchError
from workbench.explorer import query, render
from workbench.report.history import pull_runs
from workbench.report.markup import STYLE
from workbench.report.stores import open_store, report_zone
from workbench.report.troubleshoot import request_documents, versions_section
from workbench.store import Store

ANY_COLUMN = "(any column)"
LATEST = "latest"
EACH = 0  # the diff boxes' "each version against the one before" (versions count from 1)
DEFAULT_SOURCE = query.Source("view", "open_requests")
MAX_LIMIT = 1000


class Explorer:
    """Browse a workbench database in JupyterLab.

    >>> from workbench.explorer import Explorer
    >>> explorer = Explorer.open("data/workbench.db")  # doctest: +SKIP
    >>> explorer  # doctest: +SKIP  (displays the widgets)
    >>> explorer.search.value = "goncalves"  # doctest: +SKIP  (finds Gonçalves)
    >>> explorer.sort_by("last_seen_at", descending=True)  # doctest: +SKIP
    >>> explorer.frame  # doctest: +SKIP  (the rows shown, as a DataFrame)

    ``tz``: the zone times show in (None: the profile's ``timezone``, else UTC).
    """

    def __init__(self, store: Store, *, limit: int = 50, tz: str | None = None) -> None:
        self.store = store
        self.tz = report_zone(tz)
        self.frame = pd.DataFrame()  # the rows shown
        self.rows_found = query.Rows(pd.DataFrame(), 0, [])
        self.diff_frame = pd.DataFrame()  # the last comparison, whole
        self._quiet = False
        self._build(limit)
        self.reload()

    @classmethod
    def open(
        cls, db: str | Path | None = None, *, limit: int = 50, tz: str | None = None
    ) -> Explorer:
        """Open the explorer on an existing database (default: the profile's); ``StoreError``
        when there is none (an explorer never creates an empty database)."""
        store = open_store(db)
        try:
            return cls(store, limit=limit, tz=tz)
        except BaseException:
            store.close()
            raise

    # -- layout -------------------------------------------------------------------------------

    def _build(self, limit: int) -> None:
        wide = widgets.Layout(width="22em")
        self.source = widgets.Dropdown(description="show", layout=wide)
        self.run = widgets.Dropdown(description="as of run", disabled=True, layout=wide)
        self.search = widgets.Text(
            description="filter", placeholder="text anywhere in a row", continuous_update=False
        )
        self.column = widgets.Dropdown(description="column", options=[ANY_COLUMN])
        self.value = widgets.Text(
            description="equals", placeholder="value (any case)", continuous_update=False
        )
        self.limit = widgets.BoundedIntText(
            value=max(1, min(limit, MAX_LIMIT)), min=1, max=MAX_LIMIT, description="rows",
            layout=widgets.Layout(width="12em"),
        )  # fmt: skip
        self.reload_button = widgets.Button(description="Reload", icon="refresh")
        # "column" or "-column" (descending); "" as stored. A header's click writes it.
        self.sort = widgets.Text(continuous_update=False, layout=widgets.Layout(display="none"))
        self.sort.add_class(render.SORT_CLASS)
        self.status = widgets.HTML()
        self.rows = widgets.HTML()
        controls = widgets.VBox(
            [
                widgets.HBox([self.source, self.run, self.reload_button]),
                widgets.HBox([self.search, self.column, self.value, self.limit]),
                self.sort,
                self.status,
            ]
        )
        controls.add_class("workbench-controls")
        rows_pane = widgets.VBox([controls, self.rows])

        self.document_id = widgets.Combobox(
            description="id", placeholder="pick from the rows shown, or type",
            ensure_option=False, continuous_update=False, layout=widgets.Layout(width="40em"),
        )  # fmt: skip
        self.version_a = widgets.Dropdown(description="diff", layout=widgets.Layout(width="14em"))
        self.version_b = widgets.Dropdown(
            description="against", layout=widgets.Layout(width="14em")
        )
        self.document = widgets.HTML()
        document_controls = widgets.HBox([self.document_id, self.version_a, self.version_b])
        document_controls.add_class("workbench-controls")
        document_pane = widgets.VBox([document_controls, self.document])

        self.run_a = widgets.Dropdown(description="before", layout=wide)
        self.run_b = widgets.Dropdown(description="after", layout=wide)
        self.diff = widgets.HTML()
        compare_pane = widgets.VBox([widgets.HBox([self.run_a, self.run_b]), self.diff])

        self.tabs = widgets.Tab(
            children=[rows_pane, document_pane, compare_pane],
            titles=["Rows", "Document", "Compare runs"],
        )
        self.widget = widgets.VBox(
            [
                widgets.HTML(f"{STYLE}{render.STYLE}<b>{escape(str(self.store.path))}</b>"),
                self.tabs,
            ]
        )
        self.widget.add_class("workbench-explorer")

        rows_controls = (self.source, self.run, self.search, self.column, self.value, self.limit)
        for control in (*rows_controls, self.sort):
            control.observe(self._on_rows_change, names="value")
        self.document_id.observe(self._on_document_change, names="value")
        for control in (self.version_a, self.version_b):
            control.observe(self._on_versions_change, names="value")
        for control in (self.run_a, self.run_b):
            control.observe(self._on_compare_change, names="value")
        self.reload_button.on_click(lambda _button: self.reload())

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    @contextmanager
    def _quietly(self) -> Iterator[None]:
        """Change several widgets without each change recomputing the panes."""
        before, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = before

    # -- the panes ----------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the store again (new tables, new runs), keeping the choices that still exist."""
        found = query.sources(self.store)
        runs = pull_runs(self.store).iloc[::-1]  # newest first
        labels = [(query.run_label(r, self.tz), int(r.id)) for r in runs.itertuples()]
        with self._quietly():
            current = self.source.value
            self.source.options = [(s.label, s) for s in found]
            self.source.value = (
                current if current in found
                else DEFAULT_SOURCE if DEFAULT_SOURCE in found
                else found[0]
            )  # fmt: skip
            chosen = self.run.value
            self.run.options = [(LATEST, LATEST), *labels]
            self.run.value = chosen if chosen in {v for _, v in labels} else LATEST
            ids = [v for _, v in labels]
            keep_a, keep_b = self.run_a.value, self.run_b.value
            self.run_a.options = self.run_b.options = labels
            if len(ids) >= 2:  # the newest run against the one before, unless chosen
                self.run_a.value = keep_a if keep_a in ids else ids[1]
                self.run_b.value = keep_b if keep_b in ids else ids[0]
        self.refresh()
        self.compare()

    def refresh(self) -> None:
        """Show the rows of the chosen source that pass the filters."""
        source: query.Source = self.source.value
        with self._quietly():
            self.run.disabled = source.kind != "list"
        where = query.Filter(
            text=self.search.value,
            column=None if self.column.value == ANY_COLUMN else self.column.value,
            value=self.value.value,
        )
        order = query.Order.parse(self.sort.value)
        try:
            found = query.load_rows(
                self.store, source, where, limit=int(self.limit.value), as_of=self._as_of(),
                order=order,
            )  # fmt: skip
        except WorkbenchError as exc:
            # Nothing of the previous source stays on screen under this source's error.
            self.status.value = render.message_html(str(exc), error=True)
            self.rows.value = ""
            self.rows_found = query.Rows(pd.DataFrame(), 0, [])
            self.frame = self.rows_found.frame
            with self._quietly():
                self.document_id.options = []
            return
        with self._quietly():
            if list(self.column.options[1:]) != found.columns:
                chosen = self.column.value
                self.column.options = [ANY_COLUMN, *found.columns]
                self.column.value = chosen if chosen in found.columns else ANY_COLUMN
        if where.by_column and where.column not in found.columns:
            # The new source has no such column: the filter is gone, so are its zero rows.
            self.refresh()
            return
        self.rows_found = found
        self.frame = found.frame
        with self._quietly():
            self.document_id.options = query.row_ids(found.frame)
        label = source.label
        if source.kind == "list":
            label += f" ({self.run.label})"
        if order.column not in found.columns:
            order = query.Order()
        self.status.value = render.status_html(label, len(found.frame), found.total, tz=self.tz)
        self.rows.value = render.rows_html(found.frame, tz=self.tz, order=order)

    def sort_by(self, column: str | None, *, descending: bool = False) -> None:
        """Sort the rows by ``column`` (None: as stored), as a click on its header does."""
        self.sort.value = query.Order(column, descending=descending).key

    def show_document(
        self, item_id: str | None = None, *, compare: tuple[int, int] | None = None
    ) -> None:
        """Show every stored document about ``item_id`` (default: the id in the id box), each
        as a record; our transcript next to the partner's acknowledgment totals; the versions
        of the document received with the diffs between them (``compare``: two versions to
        diff, e.g. ``(1, 3)``, as the diff boxes choose; default each against the one before);
        then the raw documents with their validation (``report.request_documents``)."""
        if item_id is not None and item_id != self.document_id.value:
            with self._quietly():
                self.document_id.value = item_id
            self._offer_versions()
        offered = {value for _, value in self.version_a.options}
        if compare is not None and set(compare) <= offered:
            with self._quietly():
                self.version_a.value, self.version_b.value = compare
        wanted = (self.document_id.value or "").strip()
        if not wanted:
            self.document.value = render.message_html("Pick or type an id.")
            return
        chosen = (self.version_a.value, self.version_b.value)
        pair = compare or (chosen if EACH not in chosen else None)
        if pair is not None and pair[0] == pair[1]:
            self.document.value = render.message_html("Pick two different versions to diff.")
            return
        try:
            found = request_documents(self.store, wanted)
            versions = versions_section(
                self.store, wanted, compare=pair, max_chars=render.MAX_DOCUMENT
            ).data
        except WorkbenchError as exc:
            self.document.value = render.message_html(str(exc), error=True)
            return
        self.document.value = render.documents_html(wanted, found, versions=versions, tz=self.tz)

    def _offer_versions(self) -> None:
        """The versions of the id's document in the diff boxes: none chosen (each against the
        one before) until the analyst picks two."""
        wanted = (self.document_id.value or "").strip()
        try:
            numbers = [int(v) for v in self.store.versions(wanted)["version"]] if wanted else []
        except WorkbenchError:
            numbers = []
        options = [("each", EACH), *((f"v{n}", n) for n in numbers)]
        with self._quietly():
            self.version_a.options = options
            self.version_b.options = options
            self.version_a.value = self.version_b.value = EACH
            self.version_a.disabled = self.version_b.disabled = len(numbers) < 2

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

    def __repr__(self) -> str:
        return f"Explorer({str(self.store.path)!r})"

    # -- events -------------------------------------------------------------------------------

    def _as_of(self) -> Any:
        if self.run.value in (LATEST, None):
            return None
        runs = self.store.table("runs", where="id = ?", params=[self.run.value])
        run = runs.iloc[0]
        return run["finished_at"] if pd.notna(run["finished_at"]) else run["started_at"]

    def _on_rows_change(self, _change: Any) -> None:
        if not self._quiet:
            self.refresh()

    def _on_document_change(self, _change: Any) -> None:
        if not self._quiet:
            self._offer_versions()
            self.show_document()

    def _on_versions_change(self, _change: Any) -> None:
        if not self._quiet:
            self.show_document()

    def _on_compare_change(self, _change: Any) -> None:
        if not self._quiet:
            self.compare()


def _close_tree(widget: widgets.Widget) -> None:
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()
