"""The profiles file: found from any folder, and read only when it is a small regular file.

The file is ``WORKBENCH_CONFIG`` (or ``--config``) when given, else the first
``workbench.toml`` of: the working folder, ``WORKBENCH_HOME``, the user's config folder
(``platformdirs``: ``~/.config/workbench`` on Linux). A scheduled job started in another folder
still finds the profiles of the user running it.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

DEFAULT_CONFIG = "workbench.toml"
# A profiles file is a few kilobytes; anything larger is not one (or is /dev/zero).
MAX_CONFIG_BYTES = 1024 * 1024
# Its lines are short: one of tens of thousands of characters is a nesting made to be slow
# (a table header 100,000 keys deep takes tomllib half a minute), never a setting.
MAX_LINE_CHARACTERS = 4096


def user_config_dir(env: Mapping[str, str]) -> Path:
    """The user's config folder for the workbench (``XDG_CONFIG_HOME`` honoured)."""
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg) / "workbench"
    from platformdirs import user_config_path

    return user_config_path("workbench", appauthor=False)


def candidates(env: Mapping[str, str]) -> list[Path]:
    """Where a profiles file is looked for, in order, when none is named."""
    places = [Path.cwd()]
    if env.get("WORKBENCH_HOME"):
        places.append(Path(env["WORKBENCH_HOME"]).absolute())
    places.append(user_config_dir(env))
    return [place / DEFAULT_CONFIG for place in dict.fromkeys(places)]


def find_config(
    config_path: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> tuple[Path | None, list[Path]]:
    """The profiles file to read (None: there is none) and the places looked at."""
    explicit = config_path or env.get("WORKBENCH_CONFIG")
    if explicit:
        path = Path(explicit)
        if not path.is_absolute() and env.get("WORKBENCH_HOME"):
            path = Path(env["WORKBENCH_HOME"]) / path
        path = path.absolute()
        if not path.exists():
            how = "--config" if config_path else "WORKBENCH_CONFIG"
            raise ConfigError(f"Profiles file {path} does not exist (check {how}).")
        return path, [path]
    looked = candidates(env)
    return next((p for p in looked if p.exists()), None), looked


def read_config(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``; ``ConfigError`` unless it is a regular file of at most
    :data:`MAX_CONFIG_BYTES` holding TOML (a folder, a FIFO or a device is never opened)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise ConfigError(f"Profiles file {path} cannot be read: {exc.strerror}.") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(
            f"Profiles file {path} is not a regular file (a folder, a pipe or a device): "
            "name a workbench.toml file."
        )
    if info.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"Profiles file {path} has {info.st_size:,} bytes; a profiles file holds at most "
            f"{MAX_CONFIG_BYTES:,}. Check that it is the right file."
        )
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:  # it grew while we read it
            raise ConfigError(f"Profiles file {path} is larger than {MAX_CONFIG_BYTES:,} bytes.")
        text = raw.decode("utf-8")
        longest = max(map(len, text.splitlines()), default=0)
        if longest > MAX_LINE_CHARACTERS:
            raise ConfigError(
                f"Profiles file {path} has a line of {longest:,} characters; a profiles file's "
                f"lines hold at most {MAX_LINE_CHARACTERS:,}. Check that it is the right file."
            )
        return tomllib.loads(text)
    except OSError as exc:
        raise ConfigError(f"Profiles file {path} cannot be read: {exc.strerror}.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Profiles file {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(
            f"Profiles file {path} nests its tables or arrays too deep to be a profiles file."
        ) from None
