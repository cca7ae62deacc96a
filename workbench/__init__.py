"""workbench: partner data as DataFrames, a snapshot store, and reconciliation reports.

>>> import workbench as wb
>>> w = wb.connect()               # nothing configured: the embedded sandbox  # doctest: +SKIP
>>> w.supplier.pending_requests()  # doctest: +SKIP

``connect``, ``Workbench`` (pandas, httpx, the store) and ``__version__`` load on first use
(PEP 562): importing the package, and ``workbench --help``, stay light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from workbench.errors import (
    AuthError,
    ConfigError,
    DocumentMismatch,
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

if TYPE_CHECKING:
    from workbench._version import __version__
    from workbench.client import Workbench, connect

__all__ = [
    "AuthError",
    "ConfigError",
    "DocumentMismatch",
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
_LAZY = {"Workbench": "workbench.client", "connect": "workbench.client",
         "__version__": "workbench._version"}  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_LAZY[name]), name)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
