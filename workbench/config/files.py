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


def home(env: Mapping[str, str]) -> Path | None:
    """``WORKBENCH_HOME``, absolute; ``ConfigError`` when it is set but no folder (a mistyped
    home must not leave a job to the sandbox in a folder of its own)."""
    value = env.get("WORKBENCH_HOME")
    if not value:
        return None
    path = Path(value).absolute()
    if not path.is_dir():
        raise ConfigError(f"WORKBENCH_HOME is {value!r}, which is no folder: fix or unset it.")
    return path


def candidates(env: Mapping[str, str]) -> list[Path]:
    """Where a profiles file is looked for, in order, when none is named."""
    places = [Path.cwd()]
    if (folder := home(env)) is not None:
        places.append(folder)
    places.append(user_config_dir(env))
    return [place / DEFAULT_CONFIG for place in dict.fromkeys(places)]


def _present(path: Path) -> bool:
    """Whether ``path`` is there: a file, or a link to one. A link to nothing, or a folder
    that cannot be searched, is a ``ConfigError``: either would silently skip the user's
    profiles."""
    try:
        if path.exists():
            return True
        if path.is_symlink():
            raise ConfigError(f"Profiles file {path} is a link to nothing: fix or remove it.")
    except PermissionError:
        raise ConfigError(
            f"Cannot look for {path}: permission denied on its folder. Fix its permissions, "
            "or pass --config PATH."
        ) from None
    return False


def find_config(
    config_path: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> tuple[Path | None, list[Path]]:
    """The profiles file to read (None: there is none) and the places looked at."""
    explicit = config_path or env.get("WORKBENCH_CONFIG")
    if explicit:
        path = Path(explicit)
        if not path.is_absolute() and (folder := home(env)) is not None:
            path = folder / path
        path = path.absolute()
        if not _present(path):
            how = "--config" if config_path else "WORKBENCH_CONFIG"
            raise ConfigError(f"Profiles file {path} does not exist (check {how}).")
        return path, [path]
    looked = candidates(env)
    return next((p for p in looked if _present(p)), None), looked


def _check_owner(path: Path, info: os.stat_result) -> None:
    """Refuse a profiles file another user could have written: it says where credentials are
    sent (a token_url of theirs would receive the passwords), so, as ssh does with its keys,
    only the user's own file (or root's), writable by nobody else, is read."""
    if os.name != "posix":
        return
    others = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if info.st_uid not in (os.getuid(), 0) or others:
        who = "another user's" if info.st_uid not in (os.getuid(), 0) else "writable by others"
        raise ConfigError(
            f"Profiles file {path} is {who}: it says where credentials are sent, so only your "
            f"own file, writable by you alone, is read. Check it, then `chmod go-w {path}` (or "
            "move it away if it is not yours)."
        )


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
    _check_owner(path, info)
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
