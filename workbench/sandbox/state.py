"""What the simulated partner knows, and how it changes: the lists, the lifecycle, the clock.

Items are kept as small records (an index into the deterministic generator plus lifecycle
fields); their XML is generated on demand, so a sandbox of 20,000 requests stays small. All
mutations go through one lock, because the server thread and the caller's thread share a state.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import random
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from workbench.pesc import PescDocument, build_acknowledgment
from workbench.sandbox import events, generator
from workbench.sandbox.settings import SandboxSettings

STATE_VERSION = 2  # 2: items carry a tracking id and their document's version (issue #11)
LOADABLE_VERSIONS = (1, 2)
# The clock's new documents for existing ids: what each is called, and the TransmissionType.
NEW_DOCUMENTS = {
    "reissue": "Reissue",
    "resubmission": "Resubmission",
    "cancellation": "Cancellation",
}


def iso_ms(when: datetime) -> str:
    """ISO 8601 UTC with milliseconds, as the spec writes `<timestamp>`."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _draw(seed: int, kind: str, index: int) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{kind}:{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass
class Item:
    """A transcript request (supplier side) or a transcript (consumer side).

    ``id`` is the API's RequestID, ``tracking`` the documents' RequestTrackingID (the same
    value under the "tracking" id scheme). ``date`` is the RequestDate of the current document,
    ``version`` its number (1 for the Original) and ``transmission_type`` its kind.
    """

    id: str
    index: int
    date: datetime
    escaped: bool
    defect: str | None
    open: bool = True
    # "response", "transcript", "acknowledgment", "elsewhere" or "cancellation"
    closed_by: str | None = None
    closed_at: datetime | None = None
    tracking: str = ""
    version: int = 1
    transmission_type: str = "Original"
    cancelling: bool = False  # listed with its Cancellation until the clock next moves

    def __post_init__(self) -> None:
        self.tracking = self.tracking or self.id  # state files of version 1 had no tracking id

    def to_json(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "date": self.date.isoformat(),
            "closed_at": self.closed_at.isoformat() if self.closed_at else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Item:
        data = dict(data)
        data["date"] = datetime.fromisoformat(data["date"])
        if data.get("closed_at"):
            data["closed_at"] = datetime.fromisoformat(data["closed_at"])
        return cls(**data)


@dataclass
class PartnerState:
    """The partner's data and clock. Build with ``PartnerState.create(settings)``."""

    settings: SandboxSettings
    now: datetime
    requests: dict[str, Item] = field(default_factory=dict)
    transcripts: dict[str, Item] = field(default_factory=dict)
    placement_events: list[dict[str, Any]] = field(default_factory=list)
    domestic_events: list[dict[str, Any]] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)  # every XML we were sent
    counters: dict[str, int] = field(default_factory=dict)
    accumulators: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lock = threading.RLock()

    # -- creation and persistence ---------------------------------------------------------

    @classmethod
    def create(cls, settings: SandboxSettings) -> PartnerState:
        """Load the state file if there is one, else seed a fresh partner."""
        if settings.state_path and os.path.exists(settings.state_path):
            return cls.load(settings)
        state = cls(settings=settings, now=settings.start)
        backlog = timedelta(days=settings.backlog_days)
        state._add_many("request", settings.initial_requests, settings.start - backlog, backlog)
        state._add_many(
            "transcript", settings.initial_transcripts, settings.start - backlog, backlog
        )
        day = timedelta(days=1)
        state._add_many("placement", settings.initial_placement_events, settings.start - day, day)
        state._add_many(
            "domestic", settings.initial_domestic_events, settings.start - 2 * day, 2 * day
        )
        state.save()
        return state

    @classmethod
    def load(cls, settings: SandboxSettings) -> PartnerState:
        assert settings.state_path
        with open(settings.state_path, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("version") not in LOADABLE_VERSIONS or data.get("seed") != settings.seed:
            raise ValueError(
                f"{settings.state_path} was written by another sandbox (seed or version differ);"
                " delete it or pick another --state file."
            )
        return cls(
            settings=settings,
            now=datetime.fromisoformat(data["now"]),
            requests={i["id"]: Item.from_json(i) for i in data["requests"]},
            transcripts={i["id"]: Item.from_json(i) for i in data["transcripts"]},
            placement_events=data["placement_events"],
            domestic_events=data["domestic_events"],
            received=data["received"],
            documents=data["documents"],
            counters=data["counters"],
            accumulators=data["accumulators"],
        )

    def save(self) -> None:
        """Write the state file atomically (temp file + rename), if there is one."""
        path = self.settings.state_path
        if not path:
            return
        with self.lock:
            data = {
                "version": STATE_VERSION,
                "seed": self.settings.seed,
                "now": self.now.isoformat(),
                "requests": [i.to_json() for i in self.requests.values()],
                "transcripts": [i.to_json() for i in self.transcripts.values()],
                "placement_events": self.placement_events,
                "domestic_events": self.domestic_events,
                "received": self.received,
                "documents": self.documents,
                "counters": self.counters,
                "accumulators": self.accumulators,
            }
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".sandbox-state-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)

    # -- generation -----------------------------------------------------------------------

    def _add_many(self, kind: str, count: int, since: datetime, span: timedelta) -> None:
        """Add ``count`` new items of ``kind`` dated evenly (with jitter) over the span."""
        for k in range(count):
            index = self.counters.get(kind, 0)
            self.counters[kind] = index + 1
            rng = _draw(self.settings.seed, f"{kind}-time", index)
            offset = span * ((k + rng.random()) / max(count, 1))
            self._add(kind, index, since + offset)

    def _add(self, kind: str, index: int, when: datetime) -> None:
        seed = self.settings.seed
        if kind in ("request", "transcript"):
            rng = _draw(seed, f"{kind}-traits", index)
            roll = rng.random()
            defect = None
            if roll < self.settings.malformed_share:
                defect = "malformed"
            elif roll < self.settings.malformed_share + self.settings.invalid_share:
                defect = "invalid"
            escaped = rng.random() < self.settings.escaped_share
            make_id = generator.request_id if kind == "request" else generator.transcript_id
            item_id = tracking = make_id(seed, index)
            if self.settings.id_scheme == "guid":
                item_id = generator.dashed_id(item_id)
                tracking = generator.tracking_number(kind, index, when)
            table = self.requests if kind == "request" else self.transcripts
            table[item_id] = Item(item_id, index, when, escaped, defect, tracking=tracking)
        elif kind == "placement":
            self.placement_events.append(events.placement_event(seed, index, occurred_at=when))
        elif kind == "domestic":
            self.domestic_events.append(events.domestic_event(seed, index, occurred_at=when))

    def advance(self, hours: float) -> dict[str, int]:
        """Move the clock: new items arrive at the configured rates, old events drain away.

        Existing ids get new documents too: transcripts are re-issued (back on the list if
        they had left it), listed requests resubmitted or cancelled, and requests answered with
        a response cancelled (back on the list). A cancelled request stays listed with its
        Cancellation until the next ``advance``, then leaves the list.
        """
        if hours < 0:
            raise ValueError("the sandbox clock only moves forward")
        s = self.settings
        rates = {
            "request": s.requests_per_hour,
            "transcript": s.transcripts_per_hour,
            "placement": s.placement_events_per_hour,
            "domestic": s.domestic_events_per_hour,
            "closed_elsewhere": s.closed_elsewhere_per_hour,
            "reissue": s.reissue_per_hour,
            "resubmission": s.resubmission_per_hour,
            "cancellation": s.cancellation_per_hour,
        }
        added: dict[str, int] = {}
        with self.lock:
            start = self.now
            span = timedelta(hours=hours)
            for item in self.requests.values():
                if item.cancelling:
                    self._close(item, "cancellation", start)
            for kind, rate in rates.items():
                due = self.accumulators.get(kind, 0.0) + rate * hours
                count = math.floor(due)
                self.accumulators[kind] = due - count
                added[kind] = count
                if kind == "closed_elsewhere":
                    self._close_elsewhere(count, start + span)
                elif kind in NEW_DOCUMENTS:
                    added[kind] = self._new_documents(kind, count, start, span)
                else:
                    self._add_many(kind, count, start, span)
            self.now = start + span
            # A pending placement event lives a day, a domestic event two: then someone
            # else has consumed it.
            self.placement_events = [
                e
                for e in self.placement_events
                if _parse_time(e["occurredAt"]) > self.now - timedelta(days=1)
            ]
            self.domestic_events = [
                e
                for e in self.domestic_events
                if _parse_time(e["occurredAt"]) > self.now - timedelta(days=2)
            ]
        self.save()
        return added

    def peek(self, count: int) -> list[dict[str, Any]]:
        """The ``count`` oldest domestic events; taken off the feed when ``peek_removes``."""
        with self.lock:
            events = sorted(self.domestic_events, key=lambda e: e["occurredAt"])[:count]
            if self.settings.peek_removes and events:
                taken = {e["eventId"] for e in events}
                self.domestic_events = [
                    e for e in self.domestic_events if e["eventId"] not in taken
                ]
        if self.settings.peek_removes and events:
            self.save()
        return events

    def _close_elsewhere(self, count: int, when: datetime) -> None:
        open_ids = sorted(i.id for i in self.requests.values() if i.open)
        for _ in range(min(count, len(open_ids))):
            n = self.counters.get("closed_elsewhere", 0)
            self.counters["closed_elsewhere"] = n + 1
            pick = open_ids.pop(_draw(self.settings.seed, "close", n).randrange(len(open_ids)))
            self._close(self.requests[pick], "elsewhere", when)

    def _new_documents(self, kind: str, count: int, since: datetime, span: timedelta) -> int:
        """Give ``count`` existing items a new document of ``kind``; how many got one."""
        table = self.transcripts if kind == "reissue" else self.requests
        made = 0
        for k in range(count):
            candidates = sorted(i.id for i in table.values() if _may_get(kind, i))
            if not candidates:
                break
            n = self.counters.get(kind, 0)
            self.counters[kind] = n + 1
            rng = _draw(self.settings.seed, kind, n)
            item = table[candidates[rng.randrange(len(candidates))]]
            when = since + span * ((k + rng.random()) / count)
            item.date = max(when, item.date + timedelta(seconds=1))
            item.version += 1
            item.transmission_type = NEW_DOCUMENTS[kind]
            item.cancelling = kind == "cancellation"
            # A transcript we acknowledged awaits acknowledgment again; a request we answered
            # is listed with its cancellation, awaiting an answer to it.
            if not item.open:
                item.open, item.closed_by, item.closed_at = True, None, None
            made += 1
        return made

    @staticmethod
    def _close(item: Item, by: str, when: datetime) -> None:
        if item.open:
            item.open, item.closed_by, item.closed_at = False, by, when

    # -- reads ----------------------------------------------------------------------------

    def listed(self, items: dict[str, Item]) -> list[Item]:
        """The open items, in the order the pending list shows them."""
        with self.lock:
            return sorted((i for i in items.values() if i.open), key=lambda i: (i.date, i.id))

    def pending(self, items: dict[str, Item]) -> list[dict[str, str]]:
        """The pending list's body, the id under the configured key."""
        key = self.settings.id_key
        return [{key: i.id, "RequestDate": iso_ms(i.date)} for i in self.listed(items)]

    def document(self, kind: str, item: Item) -> str:
        """The PESCXML string of an item, escaped once when the item says so."""
        xml = _document(
            kind,
            self.settings.seed,
            item.index,
            item.tracking,
            item.date,
            self.settings.namespaces,
            item.defect,
            item.version,
            item.transmission_type,
            self.settings.cancellation_as,
            self.settings.process_code,
        )
        return html.escape(xml, quote=False) if item.escaped else xml

    def warm(self) -> int:
        with self.lock:
            open_items = [
                (kind, item)
                for kind, items in (("request", self.requests), ("transcript", self.transcripts))
                for item in items.values()
                if item.open
            ]
        for kind, item in open_items:
            self.document(kind, item)
        return len(open_items)

    # -- writes ---------------------------------------------------------------------------

    def record_post(
        self, operation: str, item: Item, payload: str, reply: str | None, close_by: str
    ) -> None:
        """Remember a processed POST and apply its lifecycle effect."""
        with self.lock:
            digest = hashlib.sha256(payload.encode()).hexdigest()
            record = {
                "operation": operation,
                "request_id": item.id,
                "at": iso_ms(datetime.now(UTC)),
                "sim_time": iso_ms(self.now),
                "payload_sha256": digest,
            }
            self.received.append(record)
            self.documents.append({**record, "payload": payload, "reply": reply})
            self._close(item, close_by, self.now)
        self.save()

    def acknowledgment_for(self, item: Item, transcript: PescDocument) -> str:
        """The partner's Acknowledgment of a transcript sent for ``item``: counted totals, its
        DocumentID echoed, the request's tracking ID, this environment's process code."""
        xml = build_acknowledgment(
            transcript,
            created=self.now,
            process_code=self.settings.process_code,
            tracking_id=item.tracking,
        )
        if _share(item.id, "ack-miscount") < self.settings.faults.ack_miscount_rate:
            xml = generator.miscount_courses(xml)
        return xml


def _may_get(kind: str, item: Item) -> bool:
    """Whether ``item`` may get a new document of ``kind``: any transcript a re-issue; a listed
    request a resubmission or a cancellation, and a request we answered with a response (a
    deferral, a hold) a cancellation too, which OCAS answers with TranscriptSent when the
    transcript went out already."""
    if kind == "reissue":
        return True
    listed = item.open and not item.cancelling
    return listed or (kind == "cancellation" and item.closed_by == "response")


def _share(item_id: str, purpose: str) -> float:
    """A number in [0, 1) fixed by the id: the same request always draws the same fault."""
    digest = hashlib.sha256(f"{purpose}:{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@lru_cache(maxsize=4096)
def _document(
    kind: str,
    seed: int,
    index: int,
    tracking: str,
    date: datetime,
    namespaces: str,
    defect: str | None,
    version: int,
    transmission_type: str,
    cancellation_as: str,
    process_code: str,
) -> str:
    build = (
        generator.transcript_request_xml if kind == "request" else generator.college_transcript_xml
    )
    return build(
        seed,
        index,
        request_id=tracking,
        created=date,
        namespaces=namespaces,
        defect=defect,
        version=version,
        transmission_type=transmission_type,
        cancellation_as=cancellation_as,
        process_code=process_code,
    )
