"""Checks on the folders the workbench writes in, made before anything is written, and the
private files it writes there (reports and bundles name students: their owner alone reads them)."""

from __future__ import annotations

import os
from pathlib import Path

from workbench.errors import InvalidParameter


def check_folder(folder: str | os.PathLike[str], *, parameter: str) -> None:
    """``InvalidParameter`` when ``folder`` cannot be a folder we write in: a file stands there
    or on its way, or its nearest existing parent is not writable."""
    path = Path(folder)
    for existing in (path, *path.parents):
        if not existing.exists():
            continue
        if not existing.is_dir():
            raise InvalidParameter(
                f"{existing} is a file, not a folder: pick another folder", parameter=parameter
            )
        if not os.access(existing, os.W_OK | os.X_OK):
            raise InvalidParameter(
                f"{existing} is not writable: pick another folder", parameter=parameter
            )
        return


def create_private(path: Path) -> None:
    """Create ``path``, empty, readable and writable by its owner only (0600), for a writer that
    then fills it (opening it again keeps the mode); ``FileExistsError`` when it exists."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
