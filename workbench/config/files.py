"""The profiles file: where it is looked for, read only when it is safe to, and its profiles."""

from __future__ import annotations

import difflib
import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError

DEFAULT_CONFIG = "workbench.toml"
# How a user chooses, worded for the command line and for Python (connect, a notebook).
PROFILE = "--profile NAME (profile=NAME in Python)"
CONFIG = "--config PATH (config_path=PATH)"


def find_config(
    config_path: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> tuple[Path | None, list[Path]]:
    """The profiles file (or None) and the places looked at: ``--config``, ``WORKBENCH_CONFIG``,
    else ``workbench.toml`` in the working folder, ``WORKBENCH_HOME``, the user's config folder."""
    home = workbench_home(env)
    explicit = config_path or env.get("WORKBENCH_CONFIG")
    if explicit:
        path = home / explicit if home and not Path(explicit).is_absolute() else Path(explicit)
        path = path.absolute()
        if not _present(path):
            how = "--config or config_path=" if config_path else "WORKBENCH_CONFIG"
            raise ConfigError(f"Profiles file {path} does not exist (check {how}).")
        return path, [path]
    from platformdirs import user_config_path  # honours XDG_CONFIG_HOME

    user = user_config_path("workbench", appauthor=False)
    places = [Path.cwd(), *([home] if home else []), user]
    looked = [place / DEFAULT_CONFIG for place in dict.fromkeys(places)]
    return next((p for p in looked if _present(p)), None), looked


def workbench_home(env: Mapping[str, str]) -> Path | None:
    """``WORKBENCH_HOME``, absolute; ``ConfigError`` when it is set but no folder."""
    value = env.get("WORKBENCH_HOME")
    if not value:
        return None
    path = Path(value).absolute()
    if not path.is_dir():
        raise ConfigError(f"WORKBENCH_HOME is {value!r}, which is no folder: fix or unset it.")
    return path


def _present(path: Path) -> bool:
    """Whether ``path`` is there; ``ConfigError`` for a link to nothing or an unreadable folder."""
    try:
        if path.exists():
            return True
        if path.is_symlink():
            raise ConfigError(f"Profiles file {path} is a link to nothing: fix or remove it.")
    except PermissionError:
        raise ConfigError(
            f"Cannot look for {path}: permission denied on its folder. Fix its permissions, "
            f"or pass {CONFIG}."
        ) from None
    return False


def _check_owner(path: Path, info: os.stat_result) -> None:
    """Refuse a profiles file another user could have written (as ssh does with its keys)."""
    if os.name != "posix":
        return
    theirs = info.st_uid not in (os.getuid(), 0)
    if theirs or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "another user's" if theirs else "writable by others"
        raise ConfigError(
            f"Profiles file {path} is {who}: it says where credentials are sent, so only your "
            f"own file, writable by you alone, is read. Check it, then `chmod go-w {path}` (or "
            "move it away if it is not yours)."
        )


def read_config(path: Path) -> dict[str, Any]:
    """The TOML at ``path``; ``ConfigError`` unless it is a regular file (a FIFO would block)."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                f"Profiles file {path} is not a regular file (a folder, a pipe or a device). "
                "Check that it is the right file."
            )
        _check_owner(path, info)
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"Profiles file {path} cannot be read: {exc.strerror}.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ConfigError(f"Profiles file {path} is not valid TOML: {exc}") from None


def profiles_file(
    config_path: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> tuple[Path | None, list[Path], dict[str, Any], str | None]:
    """The profiles file's path, the places looked at, its profiles and default_profile."""
    path, looked = find_config(config_path, env)
    document = read_config(path) if path is not None else {}
    where = str(path) if path is not None else "the profiles file"
    unknown = sorted(set(document) - {"profiles", "default_profile"})
    if unknown:  # a misspelt [profile.prod] must not leave the sandbox to run instead
        close = difflib.get_close_matches(unknown[0], ["profiles", "default_profile"], n=1)
        raise ConfigError(
            f"Unknown key {unknown[0]!r} at the top of {where}."
            + (f" Did you mean {close[0]!r}?" if close else "")
            + ' A profiles file holds default_profile = "NAME" and [profiles.NAME] tables '
            "(docs/configuration.md)."
        )
    profiles, default = document.get("profiles", {}), document.get("default_profile")
    if not isinstance(profiles, dict):
        raise ConfigError(f"'profiles' in {where} must be a table of [profiles.NAME] tables.")
    if default is not None and not isinstance(default, str):
        raise ConfigError(
            f"default_profile in {where} must be a profile name in quotes, such as "
            f'default_profile = "prod"; got {type(default).__name__} {default!r}.'
        )
    return path, looked, profiles, default
