"""The reports: content the notebooks' kernels load (sections, charts, staleness, history,
troubleshoot; what one notebook alone shows, it defines itself), running a notebook
(``runner``, ``job``: no pandas) and delivery (``deliver``). Content names load on first use
(bench/report.py: about 20 % of ``report --no-pull``)."""

from __future__ import annotations

import importlib
from typing import Any

_CONTENT = {
    "charts": ("ageing_chart", "daily_volumes", "daily_volumes_chart", "figure_html",
               "funnel_chart", "trends_chart"),
    "history": ("Changes", "Trends", "changes", "changes_section", "pull_runs", "trends"),
    "sections": ("exception_counts", "exceptions_section", "headline_section",
                 "organisations_section"),
    "staleness": ("Freshness", "freshness", "freshness_section"),
    "stores": ("open_store", "report_zone"),
    "troubleshoot": ("documents_section", "version_diff", "versions_section"),
}  # fmt: skip
_HOME = {name: module for module, names in _CONTENT.items() for name in names}
__all__ = sorted(_HOME, key=lambda n: (not n[0].isupper(), n))  # classes, then functions


def __getattr__(name: str) -> Any:
    """A public name, or a submodule (``report.validation``), imported on first use."""
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":  # a module it imports is missing: say so
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return [*__all__, *_CONTENT]
