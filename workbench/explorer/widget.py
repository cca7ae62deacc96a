"""The explorer itself: three panes of ipywidgets over one store.

- **Rows**: a view, a table, or a partner list as it stood after a pull run; a free-text
  filter, a column + value filter, a row limit; the rows as an HTML table ("showing N of M").
- **Document**: an id (picked from the rows shown, or typed): every PESC document about it,
  pretty-printed, with its schema validation.
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
from workbench.report.changes import pull_runs
from workbench.report.markup import STYLE
from workbench.report.stores import open_store
from workbench.report.troubleshoot import request_documents, versions_section
from workbench.store import Store

ANY_COLUMN = "(any column)"
LATEST = "latest"
DEFAULT_SOURCE = query.Source("view", "open_requests")
MAX_LIMIT = 1000


class Explorer:
    """Browse a workbench database in JupyterLab.

    >>> from workbench.explorer import Explorer
    >>> explorer = Explorer.open("data/workbench.db")  # doctest: +SKIP
    >>> explorer  # doctest: +SKIP  (displays the widgets)
    >>> explorer.search.value = "Gonçalves"  # doctest: +SKIP
    >>> explorer.frame  # doctest: +SKIP  (the rows shown, as a DataFrame)
    """

    def __init__(self, store: Store, *, limit: int = 50) -> None:
        self.store = store
        self.frame = pd.DataFrame()  # the rows shown
        self.rows_found = query.Rows(pd.DataFrame(), 0, [])
        self.diff_frame = pd.DataFrame()  # the last comparison, whole
        self._quiet = False
        self._build(limit)
        self.reload()

    @classmethod
    def open(cls, db: str | Path | None = None, *, limit: int = 50) -> Explorer:
        """Open the explorer on an existing database (default: the profile's); ``StoreError``
        when there is none (an explorer never creates an empty database)."""
        store = open_store(db)
        try:
            return cls(store, limit=limit)
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
        self.status = widgets.HTML()
        self.rows = widgets.HTML()
        rows_pane = widgets.VBox(
            [
                widgets.HBox([self.source, self.run, self.reload_button]),
                widgets.HBox([self.search, self.column, self.value, self.limit]),
                self.status,
                self.rows,
            ]
        )

        self.document_id = widgets.Combobox(
            description="id", placeholder="pick from the rows shown, or type",
            ensure_option=False, continuous_update=False, layout=widgets.Layout(width="40em"),
        )  # fmt: skip
        self.document = widgets.HTML()
        document_pane = widgets.VBox([self.document_id, self.document])

        self.run_a = widgets.Dropdown(description="before", layout=wide)
        self.run_b = widgets.Dropdown(description="after", layout=wide)
        self.diff = widgets.HTML()
        compare_pane = widgets.VBox([widgets.HBox([self.run_a, self.run_b]), self.diff])

        self.tabs = widgets.Tab(
            children=[rows_pane, document_pane, compare_pane],
            titles=["Rows", "Document", "Compare runs"],
        )
        self.widget = widgets.VBox(
            [widgets.HTML(f"{STYLE}<b>{escape(str(self.store.path))}</b>"), self.tabs]
        )
        self.widget.add_class("workbench-explorer")

        for control in (self.source, self.run, self.search, self.column, self.value, self.limit):
            control.observe(self._on_rows_change, names="value")
        self.document_id.observe(self._on_document_change, names="value")
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
        labels = [(query.run_label(r), int(r.id)) for r in runs.itertuples()]
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
        try:
            found = query.load_rows(
                self.store, source, where, limit=int(self.limit.value), as_of=self._as_of()
            )
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
        self.status.value = render.status_html(label, len(found.frame), found.total)
        self.rows.value = render.rows_html(found.frame)

    def show_document(
        self, item_id: str | None = None, *, compare: tuple[int, int] | None = None
    ) -> None:
        """Show every stored document about ``item_id`` (default: the id in the id box): the
        versions of the document received with the diffs between them (``compare``: two
        versions to diff, e.g. ``(1, 3)``; default each against the one before), then the
        detail we received, what we sent, the partner's acknowledgments, each with its
        validation (``report.request_documents``)."""
        if item_id is not None and item_id != self.document_id.value:
            self.document_id.value = item_id  # its observer shows it
            if compare is None:
                return
        wanted = (self.document_id.value or "").strip()
        if not wanted:
            self.document.value = render.message_html("Pick or type an id.")
            return
        try:
            found = request_documents(self.store, wanted)
            versions = versions_section(
                self.store, wanted, compare=compare, max_chars=render.MAX_DOCUMENT
            ).data
        except WorkbenchError as exc:
            self.document.value = render.message_html(str(exc), error=True)
            return
        self.document.value = render.documents_html(wanted, found, versions=versions)

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
        self.diff.value = render.diff_html(self.diff_frame, limit=int(self.limit.value))

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
            self.show_document()

    def _on_compare_change(self, _change: Any) -> None:
        if not self._quiet:
            self.compare()


def _close_tree(widget: widgets.Widget) -> None:
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()
