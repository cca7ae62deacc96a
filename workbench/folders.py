"""Checks on the folders the workbench writes in, made before anything is written."""

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
