"""workbench: partner data as DataFrames, a snapshot store, and reconciliation reports.

>>> import workbench as wb
>>> w = wb.connect()              # nothing configured: the embedded sandbox  # doctest: +SKIP
>>> w.supplier.pending_requests()  # doctest: +SKIP

Importing the package is cheap: ``connect``, ``Workbench`` (pandas, httpx, the store) and
``__version__`` load on first use (PEP 562), and so does any submodule named as an attribute
(``wb.pesc``), so that ``workbench --help`` starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_names as _lazy_names
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

_LAZY = {
    "Workbench": "workbench.client",
    "connect": "workbench.client",
    "__version__": "workbench._version",
}


# Loaded on first use (PEP 562): importing the package stays light.
__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)
