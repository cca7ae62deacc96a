"""``workbench doctor``: check every configured interface and role, and say what to fix.

For each of international, domestic, supplier and consumer that the profile uses (those it has
credentials for, or those its ``interfaces`` setting names; the others are skipped): obtain
a fresh token (grant, granted scope, lifetime), then make one read (diagnostics and pending
events for the international interface). The result is a DataFrame, one row per check; its
``attrs["about"]`` says, in lines :func:`render` prints first, which environment the profile
declares and the stored documents come from (their DocumentProcessCode), and which spelling
of the send routes a send goes to first. A profile declaring one environment over a database
of the other fails a check.

>>> with workbench.connect() as w:  # doctest: +SKIP
...     print(render(run_checks(w)))
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.api.exchange import SEND_ROUTES_META
from workbench.client import Workbench
from workbench.config import ROLES, env_prefix
from workbench.errors import ConfigError, WorkbenchError
from workbench.http.masking import printable
from workbench.pesc.fields import environment_of
from workbench.store import Store

OK, FAILED, SKIPPED = "ok", "FAILED", "skipped"
COLUMNS = ("interface", "check", "status", "detail", "fix")
FIX_HEADING = "What to do"  # the fix column, printed as a list under this heading

Read = Callable[[Workbench], pd.DataFrame]
READS: dict[str, list[tuple[str, Read]]] = {
    "international": [
        ("diagnostics", lambda w: w.diagnostics()),
        ("pending placement events", lambda w: w.pending_placement_events()),
    ],
    "domestic": [("peek events", lambda w: _probe_peek(w))],
    "supplier": [("pending requests", lambda w: w.supplier.pending_requests())],
    "consumer": [("pending transcripts", lambda w: w.consumer.pending_transcripts())],
}


@dataclass(frozen=True)
class Check:
    interface: str
    check: str
    status: str
    detail: str = ""
    fix: str = ""


def run_checks(w: Workbench) -> pd.DataFrame:
    """One row per check: interface, check, status (ok / FAILED / skipped), detail, fix."""
    checks: list[Check] = []
    for role in ROLES:
        checks += _checks_of(w, role)
    lines, mismatch = _about(w)
    checks += mismatch
    df = pd.DataFrame([asdict(c) for c in checks], columns=list(COLUMNS))
    df.attrs.update(operation="doctor", profile=w.profile.name, about=lines)
    return df


def passed(checks: pd.DataFrame) -> bool:
    """True when nothing failed and at least one check ran."""
    statuses = set(checks["status"])
    return FAILED not in statuses and OK in statuses


def render(checks: pd.DataFrame, *, width: int | None = None) -> str:
    """The checks as a plain-text table, for terminals and logs (partner text in a cell is
    made printable: one line, no control character). ``width``: wrap the detail column so
    that rows fit in that many columns."""
    about = [printable(line) for line in checks.attrs.get("about", [])]
    if checks.empty:
        return "\n".join([*about, "(no checks)"])
    shown = ["interface", "check", "status", "detail"]
    cells = checks[shown].map(lambda v: printable(str(v)))
    widths = {c: max(len(c), *(len(v) for v in cells[c])) for c in shown}
    start = sum(widths[c] + 2 for c in shown[:-1])  # where the detail column begins
    room = max(width - start, 20) if width else None
    lines = [*about, *([""] if about else [])]
    lines.append("  ".join(c.ljust(widths[c]) for c in shown).rstrip())
    for row in cells.itertuples(index=False):
        head = "  ".join(getattr(row, c).ljust(widths[c]) for c in shown[:-1])
        details = textwrap.wrap(row.detail, room, break_on_hyphens=False) if room else []
        first, *rest = details or [row.detail]
        lines.append(f"{head}  {first}".rstrip())
        lines += [" " * start + more for more in rest]
    fixes = [
        f"- {row.interface} / {row.check}: {printable(str(row.fix))}"
        for row in checks.itertuples()
        if row.fix
    ]
    if fixes:
        lines += ["", f"{FIX_HEADING}:", *fixes]
    return "\n".join(lines)


def _checks_of(w: Workbench, role: str) -> list[Check]:
    settings = w.profile.roles.get(role)
    skipped = w.profile.skipped().get(role)
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
    try:
        auth = w.session.auth(role)
        token = auth.token(force=True)
    except WorkbenchError as exc:
        return [Check(role, "token", FAILED, type(exc).__name__, str(exc))]
    scope = token.scope or settings.scope
    detail = f"{auth.grant} grant, {f'scope {scope}' if scope else 'no scope'}, {_lifetime(token)}"
    checks = [Check(role, "token", OK, detail)]
    for name, read in READS[role]:
        checks.append(_read(role, name, read, w))
    return checks


def _read(role: str, name: str, read: Read, w: Workbench) -> Check:
    try:
        df = read(w)
    except WorkbenchError as exc:
        return Check(role, name, FAILED, type(exc).__name__, str(exc))
    return Check(role, name, OK, df.attrs.get("doctor") or f"{len(df)} row(s)")


def _probe_peek(w: Workbench) -> pd.DataFrame:
    """Reach the domestic feed without taking an event off it: a partner whose peek removes
    events would lose the one a check read, so the check asks for none (``Count=0``). The
    spec does not say 0 is a count, so a 400 proves the token, the key and the route as well
    as a 200 does."""
    from workbench.errors import PartnerError
    from workbench.spec import PEEK_EVENTS_PATH

    try:
        answer = w.session.call(
            "domestic", "GET", PEEK_EVENTS_PATH, operation="doctor.peek", params={"Count": 0}
        )
    except PartnerError as exc:
        if exc.status != 400:
            raise
        said = "reachable: a peek of no event, refused as a count (nothing read)"
    else:
        listed = answer.value if isinstance(answer.value, list) else []
        said = f"reachable: a peek of no event answered {len(listed)} (nothing kept)"
    frame = pd.DataFrame()
    frame.attrs["doctor"] = said
    return frame


def _about(w: Workbench) -> tuple[list[str], list[Check]]:
    """The lines on the environment and the send routes, and a failed check when the profile
    declares another environment than its stored documents say."""
    profile = w.profile
    remembered, codes, data = None, {}, "no documents stored yet"
    if Path(w.db).is_file():
        try:
            with Store(w.db, read_only=True) as store:  # a check writes nothing
                remembered, codes = store.meta(SEND_ROUTES_META), store.process_codes()
        except WorkbenchError as exc:
            data = f"unread ({exc})"
    if codes:
        data = environment_of(codes)
    if profile.environment:
        declared = f"{profile.environment} (every document sent must say so)"
    else:
        declared = (
            'not declared (set environment = "test" or "production" in the profile, or '
            "WORKBENCH_ENVIRONMENT, and documents of the other are refused)"
        )
    lines = [f"Environment: {declared}; the stored documents: {data}"]
    if "supplier" in profile.roles:
        if remembered:
            lines.append(f"Send routes: {remembered}, remembered from a send the partner took")
        else:
            lines.append(
                f"Send routes: {profile.send_routes} (send_routes; a send refused 404 or 405 "
                "there tries the other spelling once)"
            )
    wanted = (profile.environment or "").upper()
    if not wanted or data in (wanted, "not stated", "no documents stored yet"):
        return lines, []
    mismatch = Check(
        "profile",
        "environment",
        FAILED,
        f"declared {profile.environment}, but the stored documents say {data}",
        f"Check that this profile points at the {profile.environment} partner and uses its own "
        "database (db); or correct environment (WORKBENCH_ENVIRONMENT).",
    )
    return lines, [mismatch]


def _lifetime(token: Any) -> str:
    if token.lifetime == float("inf"):
        return "lifetime unknown (static token)"
    return f"lifetime {token.lifetime:.0f} s (until {token.expires_at:%Y-%m-%d %H:%M:%S} UTC)"
