"""``workbench doctor``: for each interface the profile uses, a fresh token and one read.

>>> print(render(run_checks(w)))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from workbench.client import Workbench
from workbench.config import ROLES, env_prefix
from workbench.errors import ConfigError, PartnerError, WorkbenchError
from workbench.http.masking import printable
from workbench.pesc.fields import environment_of
from workbench.spec import PEEK_EVENTS_PATH
from workbench.store import Store

OK, FAILED, SKIPPED = "ok", "FAILED", "skipped"
FIX_HEADING = "What to do"  # the fix column, printed as a list under this heading


def _peek(w: Workbench) -> str:
    """The domestic feed reached by a peek of ``Count=0``: a partner whose peek removes events
    loses none; a 400 proves the token, the key and the route as well as a 200."""
    try:
        answer = w.session.call(
            "domestic", "GET", PEEK_EVENTS_PATH, operation="doctor.peek", params={"Count": 0}
        )
    except PartnerError as exc:
        if exc.status != 400:
            raise
        return "reachable: a peek of no event, refused as a count (nothing read)"
    listed = answer.value if isinstance(answer.value, list) else []
    return f"reachable: a peek of no event answered {len(listed)} (nothing kept)"


def _rows(frame: pd.DataFrame) -> str:
    return f"{len(frame)} row(s)"


READS: dict[str, list[tuple[str, Callable[[Workbench], str]]]] = {
    "international": [
        ("diagnostics", lambda w: _rows(w.diagnostics())),
        ("pending placement events", lambda w: _rows(w.pending_placement_events())),
    ],
    "domestic": [("peek events", _peek)],
    "supplier": [("pending requests", lambda w: _rows(w.supplier.pending_requests()))],
    "consumer": [("pending transcripts", lambda w: _rows(w.consumer.pending_transcripts()))],
}


@dataclass(frozen=True)
class Check:
    interface: str
    check: str
    status: str
    detail: str = ""
    fix: str = ""


def run_checks(w: Workbench) -> pd.DataFrame:
    """One row per check (never none: each role has one): interface, check, status (ok /
    FAILED / skipped), detail, fix; ``attrs["about"]``: the environment line."""
    df = pd.DataFrame([check for role in ROLES for check in _checks_of(w, role)])
    df.attrs.update(operation="doctor", profile=w.profile.name, about=_about(w))
    return df


def passed(checks: pd.DataFrame) -> bool:
    """True when nothing failed and at least one check ran."""
    return FAILED not in set(checks["status"]) and OK in set(checks["status"])


def render(checks: pd.DataFrame) -> str:
    """The checks as a plain-text table (partner text made printable), then what to do."""
    lines = [printable(line) for line in checks.attrs.get("about", [])]
    shown = ["interface", "check", "status", "detail"]
    cells = checks[shown].map(lambda v: printable(str(v)))
    widths = {c: max(len(c), *(len(v) for v in cells[c])) for c in shown}
    lines += [""] if lines else []
    for row in [shown, *cells.itertuples(index=False)]:
        lines.append(
            "  ".join(v.ljust(widths[c]) for c, v in zip(shown, row, strict=True)).rstrip()
        )
    fixes = [
        f"- {r.interface} / {r.check}: {printable(str(r.fix))}"
        for r in checks.itertuples()
        if r.fix
    ]
    return "\n".join([*lines, *(["", f"{FIX_HEADING}:", *fixes] if fixes else [])])


def _checks_of(w: Workbench, role: str) -> list[Check]:
    settings, skipped = w.profile.roles.get(role), w.profile.skipped().get(role)
    if settings is None or skipped is not None:
        detail = (  # a profile that names its interfaces skips the others, credentials or not
            f"skipped: {skipped}"
            if w.profile.interfaces_named
            else f"not configured (set {env_prefix(role)}* to use it)"
        )
        return [Check(role, "configuration", SKIPPED, detail)]
    try:
        settings.require()
    except ConfigError as exc:
        return [Check(role, "configuration", FAILED, "incomplete", str(exc))]

    def token(w: Workbench) -> str:
        auth = w.session.auth(role)
        got = auth.token(force=True)
        scope = got.scope or settings.scope
        life = (
            "lifetime unknown (static token)"
            if got.lifetime == float("inf")
            else f"lifetime {got.lifetime:.0f} s (until {got.expires_at:%Y-%m-%d %H:%M:%S} UTC)"
        )
        return f"{auth.grant} grant, {f'scope {scope}' if scope else 'no scope'}, {life}"

    checks = []
    for name, read in [("token", token), *READS[role]]:
        try:
            checks.append(Check(role, name, OK, read(w)))
        except WorkbenchError as exc:
            checks.append(Check(role, name, FAILED, type(exc).__name__, str(exc)))
            if name == "token":  # no read without one
                break
    return checks


def _about(w: Workbench) -> list[str]:
    """The line saying the environment the profile declares, and its stored documents'."""
    profile, data = w.profile, "no documents stored yet"
    if Path(w.db).is_file():
        try:
            with Store(w.db, read_only=True) as store:  # a check writes nothing
                codes = store.process_codes()
            data = environment_of(codes) if codes else data
        except WorkbenchError as exc:
            data = f"unread ({exc})"
    declared = (
        f"{profile.environment} (every document sent must say so)"
        if profile.environment
        else 'not declared (set environment = "test" or "production" in the profile, or '
        "WORKBENCH_ENVIRONMENT, and documents of the other are refused)"
    )
    return [f"Environment: {declared}; the stored documents: {data}"]
