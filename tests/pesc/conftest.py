"""Fixtures for the PESC tests: a loopback server that records connections, a socket guard."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest


@dataclass
class Recorder:
    """A TCP server on 127.0.0.1 that answers anything with an HTTP 200 carrying an entity
    payload, and remembers every connection it accepted."""

    port: int
    connections: list[tuple[str, int]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def recording_server() -> Iterator[Recorder]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.05)
    record = Recorder(server.getsockname()[1])
    stop = threading.Event()
    body = b'<!ENTITY leaked "LEAKED">'
    reply = b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, address = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            record.connections.append(address)
            with connection:
                connection.settimeout(0.5)
                try:
                    connection.recv(4096)
                    connection.sendall(reply)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, name="pesc-recorder", daemon=True)
    thread.start()
    try:
        yield record
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()


@pytest.fixture(scope="module")
def recorder() -> Iterator[Recorder]:
    """One recording server for a test module: any connection to it fails every later test."""
    with recording_server() as record:
        yield record


@pytest.fixture
def fresh_recorder() -> Iterator[Recorder]:
    with recording_server() as record:
        yield record


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Fail any Python-level outgoing connection (urllib, resolvers...), and list the attempts.

    libxml2 opens its own sockets in C, out of reach of this guard; the ``recorder`` server is
    what proves those never happen.
    """
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        # An OSError, so callers clean up their socket as for any refused connection.
        raise ConnectionRefusedError(f"network access attempted: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts
