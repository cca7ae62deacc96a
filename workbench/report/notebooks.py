"""The report notebooks, built from code: ``python -m workbench.report.notebooks [folder]``.

Each notebook is thin (DESIGN §2): a title, one cell tagged ``parameters`` (papermill's
convention; credentials are never parameters), then calls into :mod:`workbench.report`.
Outputs are empty and cell ids fixed, so the files in git only change when this module does
(a test checks that ``notebooks/`` matches it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

DB = (
    "db = None  # None: the profile's database (WORKBENCH_DB, the profiles file, "
    "else data/workbench.db)"
)
MAX_AGE = "max_age_hours = 24.0  # data read longer ago is called stale at the top"
FRESHNESS = (
    "fresh = report.freshness(store, as_of={as_of})\n"
    "report.freshness_section(fresh, max_age_hours=max_age_hours{tz})"
)  # the first section of a report: how old its data is (the summary carries it too)
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}

RECONCILE = [
    ("md", "# Reconciliation report\n\nOpen requests, sends and acknowledgments, exceptions, "
           "and what changed since the previous pull. Run it with `workbench report`, or "
           "`papermill notebooks/reconcile.ipynb out.ipynb -p db data/workbench.db`."),
    ("parameters", f"{DB}\nas_of = None  # ISO time: the store as it was then\n"
                   "sla_days = 5.0\n"
                   "grace_hours = 0.0  # hours past the SLA before an item is overdue\n"
                   "pull = False  # pull everything first\n"
                   "profile = None  # the profile to pull with (credentials come from it)\n"
                   "tz = None  # the zone times show in (None: the profile's timezone, else UTC)\n"
                   "trend_days = 14  # the trends cover the pull runs of this many days\n"
                   f"{MAX_AGE}"),
    ("code", "import workbench as wb\nfrom workbench import reconcile, report\n\n"
             "if pull:\n    with wb.connect(profile, db=db) as w:\n        w.pull(progress=False)\n"
             "store = report.open_store(db, profile=profile)\n"
             "tables = reconcile.load(store, as_of=as_of)\n"
             "rec = reconcile.reconcile(tables, sla_days=sla_days, grace_hours=grace_hours)\n"
             "tz = report.report_zone(tz, profile=profile)"),
    ("code", FRESHNESS.format(as_of="rec.now", tz=", tz=tz")),
    ("md", "## Headline"),
    ("code", "report.headline_section(rec, tz=tz)"),
    ("md", "## Lifecycle"),
    ("code", "display(\n    report.figure_html(report.funnel_chart(rec, tz=tz)),\n"
             "    report.figure_html(report.ageing_chart(rec)),\n"
             "    report.figure_html(report.daily_volumes_chart(tables, until=rec.now, "
             "tz=tz)),\n)"),
    ("md", "## Exceptions by severity"),
    ("code", "report.exceptions_section(rec)"),
    ("md", "## Resubmitted, re-issued and cancelled"),
    ("code", "report.versions_overview_section(rec)"),
    ("md", "## By organisation"),
    ("code", "report.organisations_section(rec)"),
    ("md", "## Changes since the previous run"),
    ("code", "before = report.previous_reconciliation(store, rec)  # changes and trends share it\n"
             "report.changes_section(store, current=rec, previous=before, tz=tz)"),
    ("md", "## Trends\n\nThe figures as of each pull run: the store keeps every pull."),
    ("code", "report.trends_section(\n    report.trends(\n        store, days=trend_days, "
             "until=rec.now, sla_days=rec.sla_days,\n        grace_hours=rec.grace_hours, tz=tz, "
             "reuse=[before],\n    ),\n    tz=tz,\n)"),
    ("code", "report.publish_summary(rec, freshness=fresh)  # what `workbench report` reads"),
]  # fmt: skip

TROUBLESHOOT = [
    ("md", "# Troubleshooting one request\n\nEverything the store holds about one request (or "
           "received transcript): its reconciliation, timeline, documents with their "
           "validation, and a support bundle. Run it with `workbench troubleshoot REQUEST_ID`, "
           "or `papermill ... -p request_id ID`."),
    ("parameters", f'{DB}\nrequest_id = ""  # the request (or received transcript) to look '
                   'into: set it here in JupyterLab\nbundle_dir = "data/bundles"'),
    ("code", "from workbench import reconcile, report\n\n"
             "rid = report.require_request_id(request_id)\nstore = report.open_store(db)\n"
             "report.require_known(store, rid)\n"
             "rec = reconcile.reconcile(reconcile.load(store))"),
    ("md", "## Reconciliation"),
    ("code", "report.request_section(rec, rid)"),
    ("md", "## Timeline"),
    ("code", "report.timeline_section(store, rid)"),
    ("md", "## Versions\n\nEvery document received for this id (Original, Resubmission, "
           "Reissue, Cancellation), and what changed between them. Compare any two with "
           "`report.versions_section(store, rid, compare=(1, 3))`."),
    ("code", "report.versions_section(store, rid)"),
    ("md", "## Documents and their validation"),
    ("code", "documents = report.request_documents(store, rid)\n"
             "report.documents_section(documents)"),
    ("md", "## Support bundle"),
    ("code", "bundle = report.write_bundle(store, rid, out_dir=bundle_dir)\n"
             "report.publish_bundle(bundle)"),
]  # fmt: skip

EVENTS = [
    ("md", "# Event feeds\n\nPlacement events (international interface) and domestic "
           "on-demand events, as the pulls saw them."),
    ("parameters", f"{DB}\n"
                   "tz = None  # the zone times show in (None: the profile's timezone, else UTC)\n"
                   f"{MAX_AGE}"),
    ("code", "from workbench import report\n\nstore = report.open_store(db)\n"
             "tz = report.report_zone(tz)"),
    ("code", FRESHNESS.format(as_of="None", tz=", tz=tz")),
    ("md", "## Feeds, per pull run and per day they occurred"),
    ("code", "report.events_section(store, tz=tz)"),
    ("md", "## Over time"),
    ("code", "display(\n    report.figure_html(report.events_days_chart(store, tz=tz)),\n"
             "    report.figure_html(report.events_chart(store, tz=tz)),\n)"),
    ("md", "## By type, program, campus and when they occurred"),
    ("code", "display(\n    report.figure_html(report.events_breakdown_chart(store, tz=tz)),\n"
             "    report.events_breakdown_section(store, tz=tz),\n)"),
    ("md", "## Latest events"),
    ("code", "report.latest_events_section(store, 20, tz=tz)"),
]  # fmt: skip

EXPLORE = [
    ("md", "# Explore the workbench database\n\nRun all cells (**Run > Run All Cells**), then:\n\n"
           "- **Rows**: pick a view, a table, or a partner list as it stood after a pull run; "
           "filter by text anywhere in a row, or by one column's value (case and accents "
           "ignored); click a header to sort, again to reverse; the table shows at most "
           "*rows* rows.\n"
           "- **Document**: pick an id from the rows shown (or type one) to read its PESC "
           "documents as records (student, identifiers, sessions, courses, awards), our "
           "transcript next to the partner's acknowledgment totals, a diff between any two "
           "versions, and the raw XML with its schema validation (set "
           "`WORKBENCH_PESC_SCHEMAS` to the XSD folder).\n"
           "- **Compare runs**: two pull runs, and what appeared, vanished or changed in each "
           "list.\n\n"
           "Set `db` below to open another database. The documents hold students' personal "
           "data: clear the outputs before sharing this notebook."),
    ("parameters", DB),
    ("code", "from workbench.explorer import Explorer\n\nexplorer = Explorer.open(db)\nexplorer"),
]  # fmt: skip

# Notebooks that are not reports: opened in JupyterLab, refused by ``workbench report``.
INTERACTIVE = {"explore": "it is interactive: open it in JupyterLab (`make lab`)"}
REPORT_KEY = "workbench"  # the notebook metadata saying whether it is a report

NOTEBOOKS = {
    "reconcile": RECONCILE,
    "troubleshoot": TROUBLESHOOT,
    "events": EVENTS,
    "explore": EXPLORE,
}


def build(name: str) -> NotebookNode:
    """The notebook ``name`` (a key of ``NOTEBOOKS``), outputs empty."""
    cells = []
    for n, (kind, source) in enumerate(NOTEBOOKS[name]):
        cell_id = f"{name}-{n:02d}"
        if kind == "md":
            cells.append(new_markdown_cell(source, id=cell_id))
        else:
            tags = {"tags": ["parameters"]} if kind == "parameters" else {}
            cells.append(new_code_cell(source, id=cell_id, metadata=tags))
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    if name in INTERACTIVE:
        nb.metadata[REPORT_KEY] = {"report": False, "why": INTERACTIVE[name]}
    return nb


def require_report(path: str | Path) -> None:
    """``ConfigError`` when the notebook at ``path`` says it is not a report (its
    ``workbench.report`` metadata), naming why and what to do instead."""
    from workbench.errors import ConfigError

    meta = nbformat.read(path, as_version=4).metadata.get(REPORT_KEY, {})
    if meta.get("report", True) is False:
        why = meta.get("why") or "it is not a report"
        raise ConfigError(
            f"Notebook {Path(path).stem!r} is not a report: {why}. `workbench report` runs "
            f"the reports: {', '.join(n for n in NOTEBOOKS if n not in INTERACTIVE)}."
        )


def write_notebooks(folder: str | Path = "notebooks") -> list[Path]:
    """Write every notebook into ``folder``; their paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in NOTEBOOKS:
        nb = build(name)
        nbformat.validate(nb)
        path = out / f"{name}.ipynb"
        nbformat.write(nb, path)
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    for written in write_notebooks(sys.argv[1] if len(sys.argv) > 1 else "notebooks"):
        print(written)
