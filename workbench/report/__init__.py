"""What the HTML report shows: figures, charts, sections, changes since the previous run.

::

    from workbench import reconcile, report

    store = report.open_store("data/workbench.db")        # StoreError when there is none
    rec = reconcile.reconcile(reconcile.load(store), sla_days=5)
    display(report.headline_section(rec))                 # big numbers, data-figure="<key>"
    display(report.figure_html(report.funnel_chart(rec))) # charts as inline PNG
    display(report.exceptions_section(rec), report.organisations_section(rec))
    before = report.previous_reconciliation(store, rec)   # as of the previous pull run
    display(report.changes_section(store, current=rec, previous=before))  # since then
    fresh = report.freshness(store, as_of=rec.now)        # how old the data is
    display(report.freshness_section(fresh))
    report.publish_summary(rec, freshness=fresh)          # SUMMARY_MIME, for the runner

Layout::

    stores.py    open_store                 markup.py   escaping, tables, the stylesheet
    zones.py     report_zone                figures.py  charts (matplotlib)
    volumes.py   daily volumes              summary.py  the machine-readable summary
    sections.py  headline, exceptions, organisations, figure_html
    run_changes.py   changes since the previous pull run, pull_runs
    staleness.py     Freshness: how old the data is, stale or not, its JSON (no pandas)
    store_freshness.py  freshness() read from a store; the report's first section
    troubleshoot.py  one request's story    events.py   the two event feeds
    event_charts.py  the event feeds' charts
    trend_points.py  the figures as of each pull run, over the last days (trend_charts.py: chart)
    notebooks.py the three report notebooks, built from code
    exports.py   csv and xlsx beside a report   deliver.py  its summary to a webhook, by mail

No module is named like a name it defines (``trends``, ``changes``, ``freshness`` are
functions): every name loads on first use, and importing the package loads no pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
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
    from workbench.report.run_changes import (
        Changes,
        changes,
        changes_section,
        previous_reconciliation,
        pull_runs,
    )
    from workbench.report.sections import (
        exception_counts,
        exceptions_section,
        figure_html,
        headline_section,
        organisations_section,
        versions_overview,
        versions_overview_section,
    )
    from workbench.report.staleness import Freshness
    from workbench.report.store_freshness import freshness, freshness_section
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
    from workbench.report.trend_charts import trends_chart
    from workbench.report.trend_points import Trends, trends, trends_section
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
    from workbench.report.zones import report_zone

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
    "previous_reconciliation",
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

_LAZY = {  # public name -> the module defining it
    "Changes": "workbench.report.run_changes",
    "Freshness": "workbench.report.staleness",
    "Trends": "workbench.report.trend_points",
    "changes": "workbench.report.run_changes",
    "changes_section": "workbench.report.run_changes",
    "freshness": "workbench.report.store_freshness",
    "freshness_section": "workbench.report.store_freshness",
    "previous_reconciliation": "workbench.report.run_changes",
    "pull_runs": "workbench.report.run_changes",
    "trends": "workbench.report.trend_points",
    "trends_section": "workbench.report.trend_points",
    "SUMMARY_FIELDS": "workbench.report.summary",
    "SUMMARY_MIME": "workbench.report.summary",
    "SUMMARY_VERSION": "workbench.report.summary",
    "age_labels": "workbench.report.figures",
    "ageing": "workbench.report.figures",
    "ageing_chart": "workbench.report.figures",
    "daily_volumes": "workbench.report.volumes",
    "daily_volumes_chart": "workbench.report.figures",
    "document_diffs": "workbench.report.troubleshoot",
    "documents_section": "workbench.report.troubleshoot",
    "event_runs": "workbench.report.events",
    "events_breakdown": "workbench.report.events",
    "events_breakdown_chart": "workbench.report.event_charts",
    "events_breakdown_section": "workbench.report.events",
    "events_chart": "workbench.report.event_charts",
    "events_days_chart": "workbench.report.event_charts",
    "events_section": "workbench.report.events",
    "exception_counts": "workbench.report.sections",
    "exceptions_section": "workbench.report.sections",
    "figure_html": "workbench.report.sections",
    "find_summary": "workbench.report.summary",
    "funnel_chart": "workbench.report.figures",
    "headline_section": "workbench.report.sections",
    "latest_events": "workbench.report.events",
    "latest_events_section": "workbench.report.events",
    "open_store": "workbench.report.stores",
    "organisations_section": "workbench.report.sections",
    "publish_bundle": "workbench.report.summary",
    "publish_summary": "workbench.report.summary",
    "report_zone": "workbench.report.zones",
    "request_documents": "workbench.report.troubleshoot",
    "request_section": "workbench.report.troubleshoot",
    "require_known": "workbench.report.troubleshoot",
    "require_request_id": "workbench.report.troubleshoot",
    "summary_payload": "workbench.report.summary",
    "trends_chart": "workbench.report.trend_charts",
    "timeline_section": "workbench.report.troubleshoot",
    "version_diff": "workbench.report.troubleshoot",
    "versions_overview": "workbench.report.sections",
    "versions_overview_section": "workbench.report.sections",
    "versions_section": "workbench.report.troubleshoot",
    "write_bundle": "workbench.report.troubleshoot",
}


# Loaded on first use (PEP 562): importing the package stays light.
__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)
