"""The sandbox as tests watch it: every request it was asked, every token it issued, its lists.

``WatchedSandbox`` is a ``Sandbox`` whose app is wrapped, outside the product, by what only tests
read: ``hits`` ((method, path below the base URL) -> calls), ``token_requests`` (client id or
user name -> tokens issued), ``issued_tokens`` and the open ids of each side.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench import spec
from workbench.sandbox import Credentials, Sandbox
from workbench.sandbox.app import with_transport

LOGINS = (spec.TOKEN_PATH, spec.ETMS_LOGIN_PATH)


def secrets_of(credentials: Credentials) -> list[str]:
    """Every value of ``credentials`` that must never show up in a log, a database or a report."""
    kinds = ("_secret", "_password", "_key")
    return [
        getattr(credentials, f.name)
        for f in dataclasses.fields(credentials)
        if f.name.endswith(kinds)
    ]


class WatchedSandbox(Sandbox):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hits: Counter[tuple[str, str]] = Counter()
        self.token_requests: Counter[str] = Counter()
        self.issued_tokens: list[str] = []
        self.app = with_transport(self._watched(self.app))  # outermost: drops need the transport

    def _watched(self, app: ASGIApp) -> ASGIApp:
        async def watched(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            path = re.sub(r"^/(identity|gateway|exchange)(?=/)", "", scope["path"])
            self.hits[(scope["method"], path)] += 1
            if not path.endswith(LOGINS):
                await app(scope, receive, send)
                return
            form, answer = bytearray(), bytearray()

            async def reading() -> Message:
                message = await receive()
                form.extend(message.get("body", b""))
                return message

            async def answering(message: Message) -> None:
                answer.extend(message.get("body", b""))
                await send(message)

            await app(scope, reading, answering)
            try:
                token = json.loads(answer)["access_token"]
            except (ValueError, KeyError, TypeError):
                return  # refused: no token issued
            fields = {k.lower(): v for k, v in parse_qsl(form.decode("utf-8", "replace"))}
            self.token_requests[fields.get("client_id") or fields.get("username", "")] += 1
            self.issued_tokens.append(token)

        return watched

    def pending_request_ids(self) -> list[str]:
        return [i.id for i in self.state.listed(self.state.requests)]

    def pending_transcript_ids(self) -> list[str]:
        return [i.id for i in self.state.listed(self.state.transcripts)]
