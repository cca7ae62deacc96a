"""What a sandbox is made of: its demo credentials, its data, its open points and its faults."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

# A fixed start: pass ``start=FIXED_START`` for the same data (dates included) on any day.
FIXED_START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def default_start() -> datetime:
    """The partner's clock when no start is given: now, floored to the minute (never ahead of
    this machine's clock); the seed fixes the data relative to its start."""
    return datetime.now(UTC).replace(second=0, microsecond=0)


@dataclass(frozen=True)
class Credentials:
    """The demo credentials a sandbox accepts. Not secret, but treated as secrets everywhere."""

    intl_client_id: str = "sis-demo"
    intl_client_secret: str = "sandbox-intl-secret-9f3a"
    intl_username: str = "analyst@demo.example"
    intl_password: str = "sandbox-password-5c1e"
    domestic_client_id: str = "dod-demo"
    domestic_client_secret: str = "sandbox-dod-secret-7b2d"
    supplier_client_id: str = "exchange-supplier-demo"
    supplier_client_secret: str = "sandbox-supplier-secret-1d8e"
    consumer_client_id: str = "exchange-consumer-demo"
    consumer_client_secret: str = "sandbox-consumer-secret-4a6f"
    subscription_key: str = "sandbox-subscription-key-0c9b2e"
    # OCAS' eTMS login (exchange_login="etms"): one account for both exchange roles.
    exchange_username: str = "Partner\\sandbox.demo.user"
    exchange_password: str = "sandbox-etms-password-2b7c"
    customer_code: str = "DEMO01"
    caller_name: str = "Demo College (sandbox)"
    caller_role: str = "SIS"

    @classmethod
    def short(cls) -> Credentials:
        """Credentials as short as partners issue them: a 7-character password, a secret of
        three letters, a subscription key that every date of 2026 spells."""
        return cls(
            intl_client_secret="intl7cs",
            intl_password="Pw#2026",
            domestic_client_secret="dod",
            supplier_client_secret="sup1",
            consumer_client_secret="con1",
            subscription_key="2026",
            exchange_password="Ab1!x9Z",
        )

    def secrets(self) -> list[str]:
        """Every value that must never show up in a log, a database or a report."""
        return [
            getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name.endswith(("_secret", "_password", "_key"))
        ]


@dataclass
class Faults:
    """Trouble on demand, at the gateway and the exchange (the identity server: latency and
    ``token_ttl`` only); rates are shares of calls, 0..1, on the paths ``path_pattern`` finds."""

    latency_ms: float = 0.0  # from a request's arrival to its answer, the sandbox's work inside
    jitter_ms: float = 0.0
    error_rate: float = 0.0  # 500 or 503 before the operation runs
    rate_limit_rate: float = 0.0  # 429 with Retry-After
    retry_after_s: float = 1.0
    drop_rate: float = 0.0  # connection closed with no answer, before the operation runs
    drop_after_rate: float = 0.0  # the operation runs, then the connection drops (POSTs!)
    token_ttl: int | None = None  # overrides SandboxSettings.token_ttl when set
    path_pattern: str = ""
    # Acknowledgments (of a transcript we send) whose CourseTotal the partner miscounts by one;
    # decided per request id, so the same request always miscounts.
    ack_miscount_rate: float = 0.0

    def update(self, **changes: Any) -> None:
        """Change faults in place, e.g. while serving; an unknown name is a TypeError."""
        vars(self).update(vars(dataclasses.replace(self, **changes)))


def _typed(assignments: list[str], defaults: dict[str, Any], what: str) -> dict[str, Any]:
    """``["NAME=VALUE", ...]`` as typed changes of the fields named in ``defaults``, each value
    of its default's type; a ValueError that says what to write instead."""
    changes: dict[str, Any] = {}
    for assignment in assignments:
        name, sep, text = (part.strip() for part in assignment.partition("="))
        if not sep or name not in defaults:
            raise ValueError(
                f"Cannot read the {what} {assignment!r}: write NAME=VALUE, NAME one of "
                f"{', '.join(defaults)}."
            )
        kind: Any = int if defaults[name] is None else type(defaults[name])
        try:
            changes[name] = _YES_NO[text.lower()] if kind is bool else kind(text)
        except (KeyError, ValueError):
            takes = "yes or no" if kind is bool else f"a {kind.__name__}"
            raise ValueError(f"{name} takes {takes}, not {text!r}.") from None
    return changes


_YES_NO = {"1": True, "true": True, "yes": True, "on": True}
_YES_NO |= {"0": False, "false": False, "no": False, "off": False}


def fault_changes(assignments: list[str]) -> dict[str, Any]:
    """``["error_rate=0.2", "path_pattern=no_response"]`` as typed ``Faults`` changes."""
    return _typed(assignments, {f.name: f.default for f in dataclasses.fields(Faults)}, "fault")


@dataclass
class SandboxSettings:
    """Data knobs of a sandbox: same settings (``start`` included), same data. Every choice
    the spec leaves open (DESIGN §3) is a field, its answers in ``answers()``."""

    seed: int = 1
    start: datetime = field(default_factory=default_start)  # see default_start
    token_ttl: int = 3600  # seconds; advance() moves a token nearer its end too
    namespaces: str = "v1.0.0"  # or "v1.1.0", the family real traffic uses
    initial_requests: int = 25
    initial_transcripts: int = 15
    initial_placement_events: int = 6
    initial_domestic_events: int = 30
    backlog_days: int = 10  # initial items are spread over this many days before `start`
    requests_per_hour: float = 1.5
    transcripts_per_hour: float = 1.0
    placement_events_per_hour: float = 1.0
    domestic_events_per_hour: float = 3.0
    closed_elsewhere_per_hour: float = 0.1  # requests someone else answers
    # New documents for existing ids: the demo's 8 hours show each kind once, 6 hours none.
    reissue_per_hour: float = 0.15  # a transcript comes again (back on the list if it left)
    resubmission_per_hour: float = 0.15  # a listed request comes again, corrected
    cancellation_per_hour: float = 0.15  # a listed request is cancelled, then leaves the list
    cancellation_as: str = "note"  # or "transmission_type": as OCAS names it, outside PESC's
    escaped_share: float = 0.25  # PESCXML strings sent XML-escaped
    malformed_share: float = 0.0  # documents that are not well-formed XML
    invalid_share: float = 0.0  # well-formed documents that fail the schema
    max_body_bytes: int = 5_000_000
    id_scheme: str = "tracking"  # or "guid": a dashed GUID, a C-number as the tracking id
    max_peek_count: int = 100  # the largest Count the domestic peek accepts
    detail_shape: str = "array"  # or "object": the detail body as a bare object
    id_key: str = "RequestID"  # or "RequestId", in list and detail items
    exchange_login: str = "identity"  # or "etms": OCAS' login, one account for both roles
    token_expiry: str = "expires_in"  # or "dot_expires" (an HTTP date in .expires), "none"
    credentials_style: str = "long"  # or "short": a 7-character password, short keys
    send_routes: str = "plural"  # or "singular": /response and /transcript, as OCAS' clients
    process_code: str = "PRODUCTION"  # or "TEST" (OCAS' UAT): every document it sends says so
    event_shape: str = "flat"  # or "kind_at", "event_info" (see shaped_event)
    event_time: str = "iso"  # or "epoch_ms", "dotnet" (ASP.NET's "/Date(1772442000000)/")
    event_list: str = "array"  # or "object": the feeds answer {"events": [...], "count": n}
    peek_removes: bool = False  # whether a peek takes the events it returns off the feed
    empty_list: str = "message"  # or "array": an empty exchange list is 200 [] (not a 400)
    unauthorized_body: str = "message"  # or "empty": a 401 with no body
    exchange_key_required: bool = False  # the exchange wants the Subscription-Key too
    pescxml_key: str = "PESCXML"  # or "PESCXml" (how real partners spell it in GET bodies)...
    error_body: str = "message"  # or "problem" (RFC 7807), "text"
    interfaces: str = "all"  # the account's (ACCOUNT_INTERFACES): its env has only their keys
    trailing_slash: str = "accepted"  # or "refused": `:id/` is a 404
    state_path: str | None = None  # persist state here, so restarts keep continuity
    credentials: Credentials = field(default_factory=Credentials)
    faults: Faults = field(default_factory=Faults)

    def __post_init__(self) -> None:
        for name, kinds in SETTING_KINDS.items():
            if getattr(self, name) not in kinds:
                raise ValueError(
                    f"Unknown {name} {getattr(self, name)!r}: use one of {list(kinds)}."
                )
        if self.max_peek_count < 1:
            raise ValueError("max_peek_count must be a positive integer.")
        if self.credentials_style == "short" and self.credentials == Credentials():
            self.credentials = Credentials.short()

    @property
    def account(self) -> tuple[str, ...]:
        """The interfaces the account has: international, domestic, supplier, consumer."""
        return ACCOUNT_INTERFACES[self.interfaces]


# The interfaces of an account, by the ``interfaces`` setting.
ACCOUNT_INTERFACES: dict[str, tuple[str, ...]] = {
    "all": ("international", "domestic", "supplier", "consumer"),
    "exchange": ("supplier", "consumer"),
    "gateway": ("international", "domestic"),
    "supplier": ("supplier",),
}

# The choices of the SandboxSettings that take one of a few values; the first is the default.
SETTING_KINDS: dict[str, tuple[str, ...]] = {
    "id_scheme": ("tracking", "guid"),
    "detail_shape": ("array", "object"),
    "id_key": ("RequestID", "RequestId"),
    "cancellation_as": ("note", "transmission_type"),
    "namespaces": ("v1.0.0", "v1.1.0"),
    "exchange_login": ("identity", "etms"),
    "token_expiry": ("expires_in", "dot_expires", "none"),
    "credentials_style": ("long", "short"),
    "send_routes": ("plural", "singular"),
    "process_code": ("PRODUCTION", "TEST"),
    "event_shape": ("flat", "kind_at", "event_info"),
    "event_time": ("iso", "epoch_ms", "dotnet"),
    "event_list": ("array", "object"),
    "empty_list": ("message", "array"),
    "unauthorized_body": ("message", "empty"),
    "pescxml_key": ("PESCXML", "PESCXml", "pescxml"),
    "error_body": ("message", "problem", "text"),
    "interfaces": tuple(ACCOUNT_INTERFACES),
    "trailing_slash": ("accepted", "refused"),
}

# The open points that are yes or no (default: no).
OPEN_FLAGS = ("peek_removes", "exchange_key_required")

# The open points answered by a number, and the answers tried (the first is the default).
OPEN_NUMBERS: dict[str, tuple[Any, ...]] = {
    "max_peek_count": (100, 25, 50, 500),  # the largest Count the peek accepts
    "escaped_share": (0.25, 0.0, 1.0),  # the share of PESCXML strings sent XML-escaped
}


def answers() -> dict[str, tuple[Any, ...]]:
    """Every open point and its answers, the default first."""
    return {**SETTING_KINDS, **OPEN_NUMBERS, **{name: (False, True) for name in OPEN_FLAGS}}


def open_points() -> list[tuple[str, Any]]:
    """Every answer to an open point that is not the default, as (setting, value): what the
    suite runs the client against one at a time."""
    return [(name, value) for name, values in answers().items() for value in values[1:]]


# What `workbench sandbox --set NAME=VALUE` may set: every open point.
SETTABLE = (*SETTING_KINDS, *OPEN_FLAGS, *OPEN_NUMBERS)


def setting_changes(assignments: list[str]) -> dict[str, Any]:
    """``["event_shape=kind_at", "peek_removes=yes"]`` as typed ``SandboxSettings`` changes."""
    defaults = {f.name: f.default for f in dataclasses.fields(SandboxSettings)}
    changes = _typed(assignments, {name: defaults[name] for name in SETTABLE}, "setting")
    SandboxSettings(**changes)  # the choices and bounds are checked there
    return changes


def unknown_partner(seed: int, **overrides: Any) -> SandboxSettings:
    """A partner the client has never met: one answer to every open point, drawn from
    ``seed`` (the same seed, the same partner), its data seeded by ``seed`` too."""
    rng = random.Random(f"unknown-partner-{seed}")
    drawn = {name: rng.choice(values) for name, values in answers().items()}
    # An account without some interfaces hides the partner's answers there: half have all.
    if rng.random() < 0.5:
        drawn["interfaces"] = "all"
    return SandboxSettings(**{"seed": seed, **drawn, **overrides})
