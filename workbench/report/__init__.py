"""What the HTML report shows: figures, charts, sections, changes since the previous run.

::

    from workbench import reconcile, report

    store = report.open_store("data/workbench.db")        # StoreError when there is none
    rec = reconcile.reconcile(reconcile.load(store), sla_days=5)
    display(report.headline_section(rec))                 # big numbers, data-figure="<key>"
    display(report.figure_html(report.funnel_chart(rec))) # charts as inline PNG
    display(report.exceptions_section(rec), report.organisations_section(rec))
    display(report.changes_section(store, current=rec))   # since the previous pull run
    report.publish_summary(rec)                           # SUMMARY_MIME, for the runner

Layout::

    stores.py    open_store                 markup.py   escaping, tables, the stylesheet
    figures.py   charts (matplotlib)        volumes.py  daily volumes
    sections.py  headline, exceptions, organisations, figure_html
    changes.py   since the previous run     summary.py  the machine-readable summary
    freshness.py how old the data is: the report's first section
    troubleshoot.py  one request's story    events.py   the two event feeds
    event_charts.py  the event feeds' charts
    trends.py    the figures as of each pull run, over the last days
    notebooks.py the three report notebooks, built from code
    exports.py   csv and xlsx beside a report   deliver.py  its summary to a webhook, by mail
"""

from __future__ import annotations

from workbench.report.changes import Changes, changes, changes_section, pull_runs
from workbench.report.event_charts import (
    events_breakdown_chart,
    events_chart,
    events_days_chart,
)
from workbench.report.events import (
    event_runs,
    events_breakdown,
    events_breakdown_section,
    events_section,
    latest_events,
    latest_events_section,
)
from workbench.report.figures import (
    age_labels,
    ageing,
    ageing_chart,
    daily_volumes_chart,
    funnel_chart,
)
from workbench.report.freshness import Freshness, freshness, freshness_section
from workbench.report.markup import report_zone
from workbench.report.sections import (
    exception_counts,
    exceptions_section,
    figure_html,
    headline_section,
    organisations_section,
    versions_overview,
    versions_overview_section,
)
from workbench.report.stores import open_store
from workbench.report.summary import (
    SUMMARY_FIELDS,
    SUMMARY_MIME,
    SUMMARY_VERSION,
    find_summary,
    publish_bundle,
    publish_summary,
    summary_payload,
)
from workbench.report.trends import Trends, trends, trends_chart, trends_section
from workbench.report.troubleshoot import (
    document_diffs,
    documents_section,
    request_documents,
    request_section,
    require_known,
    require_request_id,
    timeline_section,
    version_diff,
    versions_section,
    write_bundle,
)
from workbench.report.volumes import daily_volumes

__all__ = [
    "SUMMARY_FIELDS",
    "SUMMARY_MIME",
    "SUMMARY_VERSION",
    "Changes",
    "Freshness",
    "Trends",
    "age_labels",
    "ageing",
    "ageing_chart",
    "changes",
    "changes_section",
    "daily_volumes",
    "daily_volumes_chart",
    "document_diffs",
    "documents_section",
    "event_runs",
    "events_breakdown",
    "events_breakdown_chart",
    "events_breakdown_section",
    "events_chart",
    "events_days_chart",
    "events_section",
    "exception_counts",
    "exceptions_section",
    "figure_html",
    "find_summary",
    "freshness",
    "freshness_section",
    "funnel_chart",
    "headline_section",
    "latest_events",
    "latest_events_section",
    "open_store",
    "organisations_section",
    "publish_bundle",
    "publish_summary",
    "pull_runs",
    "report_zone",
    "request_documents",
    "request_section",
    "require_known",
    "require_request_id",
    "summary_payload",
    "timeline_section",
    "trends",
    "trends_chart",
    "trends_section",
    "version_diff",
    "versions_overview",
    "versions_overview_section",
    "versions_section",
    "write_bundle",
]
