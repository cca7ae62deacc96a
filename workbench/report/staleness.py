"""How old a report's data is, as figures: :class:`Freshness`, whether that is stale, its JSON.

Plain Python (no pandas): a report job rebuilds the freshness its notebook published in the
summary (:meth:`Freshness.from_json`) to decide ``--max-age``. Reading it from a store and
showing it is :mod:`workbench.report.store_freshness`.

>>> fresh.age_hours, fresh.is_stale(24), fresh.last_pull_status  # doctest: +SKIP
(7.5, False, 'partial')
>>> Freshness.from_json(fresh.to_json()) == fresh  # doctest: +SKIP
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from workbench.errors import InvalidParameter

DEFAULT_MAX_AGE_HOURS = 24.0  # what a report calls stale when no --max-age is given
TIMES = ("as_of", "last_pull_at", "last_ok_pull_at", "unfinished_started_at")  # ISO in JSON


@dataclass(frozen=True)
class ListFreshness:
    """One list or feed: when it was last read, how long before ``as_of``, and what the last
    pull said of it (``error`` when it could not read it, ``skipped`` when it did not try)."""

    name: str
    last_read_at: datetime | None
    age_hours: float | None
    error: str | None = None
    skipped: str | None = None

    @property
    def used(self) -> bool:
        """Whether the profile reads it (its age counts)."""
        return self.skipped is None


@dataclass(frozen=True)
class Freshness:
    """How fresh a store is at ``as_of`` (see :func:`~workbench.report.freshness`); times are
    UTC."""

    as_of: datetime
    lists: tuple[ListFreshness, ...]
    last_pull_run: int | None = None
    last_pull_at: datetime | None = None  # when the last finished pull finished
    last_pull_status: str | None = None  # ok, partial or failed
    last_ok_pull_at: datetime | None = None
    problems: tuple[str, ...] = ()  # what failed in the last pull, other than single items
    not_fetched: tuple[tuple[str | None, ...], ...] = ()  # (list, id, error): items not got
    unfinished_run: int | None = None  # a pull started after the last finished one, unfinished
    unfinished_started_at: datetime | None = None

    @property
    def items_not_fetched(self) -> int:
        return len(self.not_fetched)

    @property
    def failed_lists(self) -> list[str]:
        return [f.name for f in self.lists if f.error]

    @property
    def never_read(self) -> list[str]:
        """Lists the profile uses that no pull has read yet."""
        return [f.name for f in self.lists if f.used and f.last_read_at is None]

    @property
    def age_hours(self) -> float | None:
        """Hours since the oldest last read of a list in use; None when one was never read
        (or nothing was)."""
        ages = [f.age_hours for f in self.lists if f.used]
        if not ages or any(a is None for a in ages):
            return None
        return max(a for a in ages if a is not None)

    def is_stale(self, max_age_hours: float = DEFAULT_MAX_AGE_HOURS) -> bool:
        """Older than ``max_age_hours``, or a list in use never read, or nothing pulled."""
        age = self.age_hours
        return age is None or age > max_age_hours

    def warning(self, max_age_hours: float = DEFAULT_MAX_AGE_HOURS) -> str | None:
        """What a stale report says at its top (None when it is not stale)."""
        if not self.is_stale(max_age_hours):
            return None
        limit = f"{max_age_hours:g} hour{'' if max_age_hours == 1 else 's'}"
        if not any(f.last_read_at is not None for f in self.lists):
            return (
                f"Stale data: no pull has read any list into this store as of "
                f"{self.as_of.astimezone(UTC):%Y-%m-%d %H:%M} UTC. Run `workbench pull` (or "
                "`workbench report` without --no-pull) first."
            )
        if self.never_read:
            return (
                f"Stale data: {', '.join(self.never_read)} never read into this store; the "
                f"figures leave them out. Check the last pull's failures below, then pull again."
            )
        oldest = max((f for f in self.lists if f.used), key=lambda f: f.age_hours or 0.0)
        return (
            f"Stale data: {oldest.name} was last read {hours_text(oldest.age_hours)} before "
            f"this report, more than {limit}. Figures may have changed at the partner since: "
            "pull again before acting on them."
        )

    def as_dict(self, max_age_hours: float = DEFAULT_MAX_AGE_HOURS) -> dict[str, Any]:
        """JSON-able figures, with no id, error text or personal data: list names, times,
        counts (``hours_old``: the store's age, ``stale`` by ``max_age_hours``)."""
        return {
            "last_pull_at": _iso(self.last_pull_at),
            "last_pull_status": self.last_pull_status,
            "last_ok_pull_at": _iso(self.last_ok_pull_at),
            "items_not_fetched": self.items_not_fetched,
            "failed_lists": self.failed_lists,
            "hours_old": None if self.age_hours is None else round(self.age_hours, 1),
            "max_age_hours": max_age_hours,
            "stale": self.is_stale(max_age_hours),
            "last_read": {f.name: _iso(f.last_read_at) for f in self.lists if f.used},
            "unfinished_pull": None
            if self.unfinished_run is None
            else {"run": self.unfinished_run, "started_at": _iso(self.unfinished_started_at)},
            "problems": len(self.problems),
        }

    def to_json(self) -> dict[str, Any]:
        """Everything, JSON-able (times as ISO text): what the summary carries as its
        ``freshness``, read back by :meth:`from_json`. It holds the ids and the partner's words
        of what failed, like the report: :meth:`as_dict` is what leaves the machine."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update({name: _iso(data[name]) for name in TIMES})
        data["lists"] = [{**vars(f), "last_read_at": _iso(f.last_read_at)} for f in self.lists]
        data["problems"] = list(self.problems)
        data["not_fetched"] = [list(row) for row in self.not_fetched]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Freshness:
        """The :class:`Freshness` :meth:`to_json` wrote; ``ValueError`` saying what is wrong
        with anything else (a missing or unknown key, a time that is not ISO 8601 with its
        zone, an age that is not a finite number of hours, 0 or more)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a freshness is a JSON object, not {type(data).__name__}")
        try:
            values = dict(data)
            values.update({name: _time(values.get(name)) for name in TIMES})
            values["lists"] = tuple(_list(f) for f in _rows(data["lists"], "lists"))
            values["problems"] = tuple(_text(p) for p in _rows(data.get("problems"), "problems"))
            values["not_fetched"] = tuple(
                tuple(_text(v) for v in _rows(row, "an item not fetched"))
                for row in _rows(data.get("not_fetched"), "not_fetched")
            )
            for name in ("last_pull_run", "unfinished_run"):
                _check(values.get(name), int, name)
            _check(values.get("last_pull_status"), str, "last_pull_status")
            if values["as_of"] is None:
                raise ValueError("as_of: missing")
            return cls(**values)
        except KeyError as exc:
            raise ValueError(f"{exc} missing") from None
        except TypeError as exc:  # a key missing or unknown, a list that is not an object
            raise ValueError(str(exc)) from None


def check_max_age(hours: float | None) -> float | None:
    """``hours`` if a usable limit (finite, more than 0), else ``InvalidParameter``."""
    if hours is not None and not (
        isinstance(hours, int | float) and math.isfinite(hours) and hours > 0
    ):
        raise InvalidParameter(
            f"{hours} is not a number of hours: use a finite number more than 0, e.g. 24",
            parameter="max_age",  # --max-age
        )
    return None if hours is None else float(hours)


def hours_text(hours: float | None) -> str:
    """An age as a report says it: ``7.5 hours``, ``50.0 hours (2.1 days)``, ``never``."""
    if hours is None:
        return "never"
    if hours >= 48:
        return f"{hours:.1f} hours ({hours / 24:.1f} days)"
    return f"{hours:.1f} hours"


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat()


def _time(text: Any) -> datetime | None:
    """An ISO 8601 time with its zone (None for None); else ``ValueError``."""
    if text is None:
        return None
    when = datetime.fromisoformat(_check(text, str, "a time"))
    if when.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return when


def _list(data: Mapping[str, Any]) -> ListFreshness:
    f = ListFreshness(**{**data, "last_read_at": _time(data.get("last_read_at"))})
    age = f.age_hours
    if age is not None and not (
        isinstance(age, int | float)
        and not isinstance(age, bool)
        and math.isfinite(age)
        and age >= 0
    ):
        raise ValueError(f"{f.name!r}: age {age!r} is not a number of hours, 0 or more")
    if not isinstance(f.name, str):
        raise ValueError(f"a list's name: {f.name!r} is not str")
    _check(f.error, str, f"{f.name}'s error")
    _check(f.skipped, str, f"{f.name}'s skipped")
    return f


def _rows(value: Any, what: str) -> list[Any]:
    """``value`` as a list (None: empty); ``ValueError`` unless a JSON list."""
    if value is None:
        return []
    return list(_check(value, list | tuple, what))


def _text(value: Any) -> str | None:
    return _check(value, str, "a text")


def _check(value: Any, kind: Any, what: str) -> Any:
    """``value`` when None or of ``kind`` (never a bool for an int), else ``ValueError``."""
    if value is not None and (
        not isinstance(value, kind) or (kind is int and isinstance(value, bool))
    ):
        raise ValueError(f"{what}: {value!r} is not {getattr(kind, '__name__', kind)}")
    return value
