"""What the simulated partner knows (items whose XML is made on demand) and how its clock moves
it; every change holds the one lock the server thread and the caller's share."""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import math
import os
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from workbench.pesc import PescDocument, build_acknowledgment
from workbench.pesc.elements import mapping
from workbench.sandbox import generator
from workbench.sandbox.generator import DEFECTS, draw, iso_ms
from workbench.sandbox.settings import SandboxSettings

STATE_VERSION = 2
RATES = mapping(
    "request transcript placement domestic closed_elsewhere reissue resubmission cancellation",
    "requests_per_hour transcripts_per_hour placement_events_per_hour domestic_events_per_hour "
    "closed_elsewhere_per_hour reissue_per_hour resubmission_per_hour cancellation_per_hour",
)
NEW_DOCUMENTS = {kind: kind.capitalize() for kind in ("reissue", "resubmission", "cancellation")}
EVENT_LIFE = {"placement_events": timedelta(days=1), "domestic_events": timedelta(days=2)}


@dataclass
class Item:
    """A transcript request (supplier side) or a transcript (consumer side) and its lifecycle."""

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
        self.tracking = self.tracking or self.id
        for name in ("date", "closed_at"):  # as a state file has them
            if isinstance(value := getattr(self, name), str):
                setattr(self, name, datetime.fromisoformat(value))


@dataclass
class PartnerState:
    """The partner's data and clock. Build with ``PartnerState.create(settings)``."""

    settings: SandboxSettings
    now: datetime
    requests: dict[str, Item] = field(default_factory=dict)
    transcripts: dict[str, Item] = field(default_factory=dict)
    placement_events: list[dict[str, Any]] = field(default_factory=list)
    domestic_events: list[dict[str, Any]] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)  # every POST, as received
    counters: dict[str, int] = field(default_factory=dict)
    accumulators: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lock = threading.RLock()

    @classmethod
    def create(cls, settings: SandboxSettings) -> PartnerState:
        """The state file's partner if there is one, else a fresh partner."""
        path = settings.state_path
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if data.pop("version") != STATE_VERSION or data.pop("seed") != settings.seed:
                raise ValueError(
                    f"{path} was written by another sandbox (seed or version differ); delete it"
                    " or pick another --state file."
                )
            for table in ("requests", "transcripts"):
                data[table] = {i["id"]: Item(**i) for i in data[table]}
            return cls(settings, datetime.fromisoformat(data.pop("now")), **data)
        state, start = cls(settings=settings, now=settings.start), settings.start
        for kind, count, span in (
            ("request", settings.initial_requests, timedelta(days=settings.backlog_days)),
            ("transcript", settings.initial_transcripts, timedelta(days=settings.backlog_days)),
            ("placement", settings.initial_placement_events, timedelta(days=1)),
            ("domestic", settings.initial_domestic_events, timedelta(days=2)),
        ):
            state._add(kind, count, start - span, span)
        state.save()
        return state

    def save(self) -> None:
        """Write the state file atomically (temp file + rename), if there is one."""
        if not (path := self.settings.state_path):
            return
        with self.lock:
            data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
            del data["settings"]
            data["requests"] = [vars(i) for i in self.requests.values()]
            data["transcripts"] = [vars(i) for i in self.transcripts.values()]
            data |= {"version": STATE_VERSION, "seed": self.settings.seed}
            text = json.dumps(data, default=datetime.isoformat)
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".sandbox-state-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)

    def _add(self, kind: str, count: int, since: datetime, span: timedelta) -> None:
        """``count`` new items of ``kind``, dated evenly (with jitter) over the span."""
        seed, s = self.settings.seed, self.settings
        for k in range(count):
            index = self._count(kind)
            when = since + span * ((k + draw(seed, f"{kind}-time", index).random()) / count)
            if kind in ("placement", "domestic"):
                event = getattr(generator, f"{kind}_event")
                getattr(self, f"{kind}_events").append(event(seed, index, occurred_at=when))
            else:
                traits = draw(seed, f"{kind}-traits", index)
                roll, malformed = traits.random(), s.malformed_share
                shares = (malformed, malformed + s.invalid_share)
                defect = next((d for d, x in zip(DEFECTS, shares, strict=True) if roll < x), None)
                escaped = traits.random() < s.escaped_share
                item_id = tracking = generator.item_id(seed, kind, index)
                if s.id_scheme == "guid":
                    item_id = str(uuid.UUID(hex=item_id))  # a dashed 36-character GUID
                    tracking = generator.tracking_number(kind, index, when)
                item = Item(item_id, index, when, escaped, defect, tracking=tracking)
                (self.requests if kind == "request" else self.transcripts)[item_id] = item

    def advance(self, hours: float) -> dict[str, int]:
        """Move the clock: items and documents arrive at the configured rates, old events go."""
        if hours < 0:
            raise ValueError("the sandbox clock only moves forward")
        added: dict[str, int] = {}
        with self.lock:
            start, span = self.now, timedelta(hours=hours)
            for item in self.requests.values():
                if item.cancelling:
                    self._close(item, "cancellation", start)
            for kind, rate in RATES.items():
                due = self.accumulators.get(kind, 0.0) + getattr(self.settings, rate) * hours
                count = added[kind] = math.floor(due)
                self.accumulators[kind] = due - count
                if kind == "closed_elsewhere":
                    self._close_elsewhere(count, start + span)
                elif kind in NEW_DOCUMENTS:
                    added[kind] = self._new_documents(kind, count, start, span)
                else:
                    self._add(kind, count, start, span)
            self.now = start + span
            for feed, life in EVENT_LIFE.items():  # occurredAt: iso_ms text, ordered as times
                since = iso_ms(self.now - life)
                setattr(self, feed, [e for e in getattr(self, feed) if e["occurredAt"] > since])
        self.save()
        return added

    def _close_elsewhere(self, count: int, when: datetime) -> None:
        open_ids = sorted(i.id for i in self.requests.values() if i.open)
        for _ in range(min(count, len(open_ids))):
            rng = draw(self.settings.seed, "close", self._count("closed_elsewhere"))
            pick = open_ids.pop(rng.randrange(len(open_ids)))
            self._close(self.requests[pick], "elsewhere", when)

    def _new_documents(self, kind: str, count: int, since: datetime, span: timedelta) -> int:
        """Give up to ``count`` items a new document of ``kind`` (a re-issued transcript is listed
        again; a request answered with a response may be cancelled too); how many got one."""
        table = self.transcripts if kind == "reissue" else self.requests
        made = 0
        for k in range(count):
            candidates = sorted(
                i.id
                for i in table.values()
                if kind == "reissue"
                or (i.open and not i.cancelling)
                or (kind == "cancellation" and i.closed_by == "response")
            )
            if not candidates:
                break
            rng = draw(self.settings.seed, kind, self._count(kind))
            item = table[candidates[rng.randrange(len(candidates))]]
            when = since + span * ((k + rng.random()) / count)
            item.date = max(when, item.date + timedelta(seconds=1))
            item.version += 1
            item.transmission_type = NEW_DOCUMENTS[kind]
            item.cancelling = kind == "cancellation"
            item.open, item.closed_by, item.closed_at = True, None, None
            made += 1
        return made

    def _count(self, kind: str) -> int:
        """The index of the next draw of ``kind``."""
        self.counters[kind] = self.counters.get(kind, 0) + 1
        return self.counters[kind] - 1

    @staticmethod
    def _close(item: Item, by: str, when: datetime) -> None:
        if item.open:
            item.open, item.closed_by, item.closed_at = False, by, when

    def listed(self, items: dict[str, Item]) -> list[Item]:
        """The open items, in the order the pending list shows them."""
        with self.lock:
            return sorted((i for i in items.values() if i.open), key=lambda i: (i.date, i.id))

    def document(self, kind: str, item: Item) -> str:
        """The PESCXML string of an item, escaped once when the item says so."""
        s = self.settings
        xml = generator.document(
            "TranscriptRequest" if kind == "request" else "CollegeTranscript",
            s.seed,
            item.index,
            request_id=item.tracking,
            created=item.date,
            namespaces=s.namespaces,
            defect=item.defect,
            version=item.version,
            transmission_type=item.transmission_type,
            cancellation_as=s.cancellation_as,
            process_code=s.process_code,
        )
        return html.escape(xml, quote=False) if item.escaped else xml

    def peek(self, count: int) -> list[dict[str, Any]]:
        """The ``count`` oldest domestic events; taken off the feed when ``peek_removes``."""
        with self.lock:
            found = sorted(self.domestic_events, key=lambda e: e["occurredAt"])[:count]
            if self.settings.peek_removes:
                self.domestic_events = [e for e in self.domestic_events if e not in found]
        if self.settings.peek_removes and found:
            self.save()
        return found

    def record_post(self, operation: str, item: Item, payload: str, close_by: str) -> None:
        """Remember a processed POST and apply its lifecycle effect."""
        with self.lock:
            self.documents.append(
                {"operation": operation, "request_id": item.id, "payload": payload}
            )
            self._close(item, close_by, self.now)
        self.save()

    def acknowledgment_for(self, item: Item, transcript: PescDocument) -> str:
        """The partner's Acknowledgment of a transcript sent for ``item``."""
        xml = build_acknowledgment(
            transcript,
            created=self.now,
            process_code=self.settings.process_code,
            tracking_id=item.tracking,
        )
        digest = hashlib.sha256(f"ack-miscount:{item.id}".encode()).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 < self.settings.faults.ack_miscount_rate:
            xml = generator.miscount_courses(xml)
        return xml
