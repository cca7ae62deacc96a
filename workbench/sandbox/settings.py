"""What a sandbox is made of: its demo credentials, its data, its open points and its faults."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


def default_start() -> datetime:
    """The partner's clock when no start is given: now, floored to the minute."""
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
        """Credentials as short as partners issue them (a key that every date of 2026 spells)."""
        return cls(
            intl_client_secret="intl7cs",
            intl_password="Pw#2026",
            domestic_client_secret="dod",
            supplier_client_secret="sup1",
            consumer_client_secret="con1",
            subscription_key="2026",
            exchange_password="Ab1!x9Z",
        )


@dataclass
class Faults:
    """Trouble on demand (the identity server: latency and ``token_ttl`` only); rates are shares
    of calls on the paths ``path_pattern`` finds."""

    latency_ms: float = 0.0  # from a request's arrival to its answer, the sandbox's work inside
    error_rate: float = 0.0  # 500 or 503 before the operation runs
    rate_limit_rate: float = 0.0  # 429 with Retry-After
    retry_after_s: float = 1.0
    drop_rate: float = 0.0  # connection closed with no answer, before the operation runs
    drop_after_rate: float = 0.0  # the operation runs, then the connection drops (POSTs!)
    token_ttl: int = 3600  # seconds a token lives; advance() moves a token nearer its end too
    path_pattern: str = ""
    # Acknowledgments whose CourseTotal is one off, decided per request id.
    ack_miscount_rate: float = 0.0

    def update(self, **changes: Any) -> None:
        """Change faults in place, e.g. while serving; an unknown name is a TypeError."""
        vars(self).update(vars(dataclasses.replace(self, **changes)))


def _typed(assignments: list[str], defaults: dict[str, Any], what: str) -> dict[str, Any]:
    """``["NAME=VALUE", ...]`` as changes of ``defaults``' fields, typed as their defaults."""
    changes: dict[str, Any] = {}
    for assignment in assignments:
        name, sep, text = (part.strip() for part in assignment.partition("="))
        if not sep or name not in defaults:
            raise ValueError(
                f"Cannot read the {what} {assignment!r}: write NAME=VALUE, NAME one of "
                f"{', '.join(defaults)}."
            )
        kind = type(defaults[name])
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


def _open(*answers: Any, any_value: bool = False) -> Any:
    """A field for an open point of the spec (DESIGN §3): its answers, the default first; only
    these are accepted unless ``any_value``."""
    return field(default=answers[0], metadata={"answers": answers, "any_value": any_value})


# The interfaces of an account, by the ``interfaces`` setting.
ACCOUNT_INTERFACES: dict[str, tuple[str, ...]] = {
    "all": ("international", "domestic", "supplier", "consumer"),
    "exchange": ("supplier", "consumer"),
    "gateway": ("international", "domestic"),
    "supplier": ("supplier",),
}


@dataclass
class SandboxSettings:
    """A sandbox's data and every choice the spec leaves open (DESIGN §3, ``answers()``)."""

    seed: int = 1
    start: datetime = field(default_factory=default_start)  # see default_start
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
    malformed_share: float = 0.0  # documents that are not well-formed XML
    invalid_share: float = 0.0  # well-formed documents that fail the schema
    state_path: str | None = None  # persist state here, so restarts keep continuity
    credentials: Credentials = field(default_factory=Credentials)
    faults: Faults = field(default_factory=Faults)
    # The open points, in the order ``unknown_partner`` draws them.
    id_scheme: str = _open("tracking", "guid")  # guid: a dashed GUID, a C-number as tracking id
    detail_shape: str = _open("array", "object")  # object: the detail body as a bare object
    id_key: str = _open("RequestID", "RequestId")  # in list and detail items
    cancellation_as: str = _open("note", "transmission_type")  # as OCAS names it, not PESC
    namespaces: str = _open("v1.0.0", "v1.1.0")  # v1.1.0: the family real traffic uses
    exchange_login: str = _open("identity", "etms")  # etms: OCAS' login, one account, two roles
    # .expires: an HTTP date (OWIN, as OCAS answers) or an ISO 8601 time
    token_expiry: str = _open("expires_in", "dot_expires", "dot_expires_iso", "none")
    credentials_style: str = _open("long", "short")  # short: a 7-character password, short keys
    send_routes: str = _open("plural", "singular")  # /response and /transcript, as OCAS' clients
    process_code: str = _open("PRODUCTION", "TEST")  # TEST: OCAS' UAT; every document says so
    event_shape: str = _open("flat", "kind_at", "event_info")  # see shaped_event
    event_time: str = _open("iso", "epoch_ms", "dotnet")  # dotnet: "/Date(1772442000000)/"
    event_list: str = _open("array", "object")  # object: {"events": [...], "count": n}
    empty_list: str = _open("message", "array")  # array: an empty exchange list is 200 []
    unauthorized_body: str = _open("message", "empty")  # empty: a 401 with no body
    pescxml_key: str = _open("PESCXML", "PESCXml", "pescxml")  # the key in GET bodies
    error_body: str = _open("message", "problem", "text")  # problem: RFC 7807
    interfaces: str = _open(*ACCOUNT_INTERFACES)  # the account's: its env has only their keys
    trailing_slash: str = _open("accepted", "refused")  # refused: `:id/` is a 404
    max_peek_count: int = _open(100, 25, 50, 500, any_value=True)  # the largest peek Count
    escaped_share: float = _open(0.25, 0.0, 1.0, any_value=True)  # PESCXML sent XML-escaped
    peek_removes: bool = _open(False, True)  # a peek takes the events it returns off the feed
    exchange_key_required: bool = _open(False, True)  # the exchange wants the Subscription-Key

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            kinds = f.metadata.get("answers", ())
            if kinds and not f.metadata["any_value"] and getattr(self, f.name) not in kinds:
                raise ValueError(
                    f"Unknown {f.name} {getattr(self, f.name)!r}: use one of {list(kinds)}."
                )
        if self.max_peek_count < 1:
            raise ValueError("max_peek_count must be a positive integer.")
        if self.credentials_style == "short" and self.credentials == Credentials():
            self.credentials = Credentials.short()

    @property
    def account(self) -> tuple[str, ...]:
        """The interfaces the account has: international, domestic, supplier, consumer."""
        return ACCOUNT_INTERFACES[self.interfaces]


def answers() -> dict[str, tuple[Any, ...]]:
    """Every open point and its answers, the default first."""
    fields = dataclasses.fields(SandboxSettings)
    return {f.name: f.metadata["answers"] for f in fields if "answers" in f.metadata}


def setting_changes(assignments: list[str]) -> dict[str, Any]:
    """``["event_shape=kind_at", "peek_removes=yes"]`` as typed ``SandboxSettings`` changes."""
    changes = _typed(assignments, {name: kinds[0] for name, kinds in answers().items()}, "setting")
    SandboxSettings(**changes)  # the choices and bounds are checked there
    return changes


def unknown_partner(seed: int, **overrides: Any) -> SandboxSettings:
    """A partner the client has never met: one answer to every open point, drawn from ``seed``."""
    rng = random.Random(f"unknown-partner-{seed}")
    drawn = {name: rng.choice(values) for name, values in answers().items()}
    # An account without some interfaces hides the partner's answers there: half have all.
    if rng.random() < 0.5:
        drawn["interfaces"] = "all"
    return SandboxSettings(**{"seed": seed, **drawn, **overrides})
