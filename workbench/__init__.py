"""workbench: partner data as DataFrames, a snapshot store, and reconciliation reports.

>>> import workbench as wb
>>> w = wb.connect()              # nothing configured: the embedded sandbox  # doctest: +SKIP
>>> w.supplier.pending_requests()  # doctest: +SKIP
"""

from __future__ import annotations

from workbench._version import __version__
from workbench.client import Workbench, connect
from workbench.errors import (
    AuthError,
    ConfigError,
    DuplicateSend,
    InvalidValue,
    NotebookFailed,
    NotFound,
    PartnerError,
    PescError,
    StoreError,
    TransportError,
    UnreadableAnswer,
    WorkbenchError,
)

__all__ = [
    "AuthError",
    "ConfigError",
    "DuplicateSend",
    "InvalidValue",
    "NotFound",
    "NotebookFailed",
    "PartnerError",
    "PescError",
    "StoreError",
    "TransportError",
    "UnreadableAnswer",
    "Workbench",
    "WorkbenchError",
    "__version__",
    "connect",
]
