"""The installed workbench's version, importable without importing the package root."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("workbench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
