"""Run a sandbox: a real uvicorn server on a loopback port, in a background thread."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import fields, replace
from typing import Any

import uvicorn

from workbench.sandbox.app import Partner
from workbench.sandbox.settings import Faults, SandboxSettings
from workbench.sandbox.state import PartnerState
from workbench.sandbox.tokens import IdentityServer
from workbench.spec import EXCHANGE_SCOPE


class Sandbox:
    """A running sandbox: its URLs, credentials, controls and its own record of what it saw."""

    def __init__(self, settings: SandboxSettings, *, host: str = "127.0.0.1", port: int = 0):
        self.settings, self.credentials = settings, settings.credentials
        self.state = PartnerState.create(settings)
        self.identity = IdentityServer(settings, clock=lambda: self.state.now)
        self.partner = Partner(settings, self.state, self.identity)
        self.app = self.partner.app()
        # proto must say TCP: asyncio sets TCP_NODELAY on accepted connections only then, and
        # without it every answer waits ~40 ms for a delayed ACK.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self.host, self.port = self._socket.getsockname()[:2]
        self.root_url = f"http://{self.host}:{self.port}"
        self.auth_url = f"{self.root_url}/identity"
        self.gateway_url = f"{self.root_url}/gateway"
        self.exchange_url = f"{self.root_url}/exchange"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def env(self) -> dict[str, str]:
        """The WORKBENCH_* variables a partner would issue for the account (DESIGN §5)."""
        c, settings, account = self.credentials, self.settings, self.settings.account
        exchange_roles = [role for role in ("supplier", "consumer") if role in account]
        gateway = "international" in account or "domestic" in account
        etms = bool(exchange_roles) and settings.exchange_login == "etms"
        env: dict[str, str] = {}
        if gateway or (exchange_roles and not etms):
            env["WORKBENCH_AUTH_URL"] = self.auth_url
        if gateway:
            env["WORKBENCH_GATEWAY_URL"] = self.gateway_url
            env["WORKBENCH_SUBSCRIPTION_KEY"] = c.subscription_key
        if exchange_roles:
            env["WORKBENCH_EXCHANGE_URL"] = self.exchange_url
        for role in account:
            if etms and role in exchange_roles:
                continue
            name = "intl" if role == "international" else role
            prefix = f"WORKBENCH_{name.upper()}_"
            env[prefix + "CLIENT_ID"] = getattr(c, f"{name}_client_id")
            env[prefix + "CLIENT_SECRET"] = getattr(c, f"{name}_client_secret")
            if role == "international":
                env[prefix + "USERNAME"] = c.intl_username
                env[prefix + "PASSWORD"] = c.intl_password
            elif role != "domestic":
                env[prefix + "SCOPE"] = EXCHANGE_SCOPE
        if etms:
            section = "EXCHANGE" if len(exchange_roles) == 2 else exchange_roles[0].upper()
            env["WORKBENCH_LOGIN"] = "etms"
            env[f"WORKBENCH_{section}_USERNAME"] = c.exchange_username
            env[f"WORKBENCH_{section}_PASSWORD"] = c.exchange_password
        if exchange_roles and settings.exchange_key_required:
            env["WORKBENCH_EXCHANGE_SUBSCRIPTION_KEY"] = c.subscription_key
        return env

    def advance(self, hours: float) -> dict[str, int]:
        """Move the partner's clock; returns how many of each kind arrived."""
        return self.state.advance(hours)

    def set_faults(self, **changes: Any) -> None:
        """Change faults while serving, e.g. ``sb.set_faults(error_rate=0.3, latency_ms=20)``."""
        self.settings.faults.update(**changes)

    @property
    def received(self) -> list[dict[str, Any]]:
        """Every POST the sandbox processed, oldest first: operation, request_id, payload."""
        with self.state.lock:
            return list(self.state.documents)

    def start(self) -> Sandbox:
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_keep_alive=30,
            # A stop never waits on a client that keeps its connection open.
            timeout_graceful_shutdown=5,
            backlog=1024,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name=f"workbench-sandbox-{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the sandbox server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._socket.close()
        self.state.save()

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<Sandbox {self.root_url} seed={self.settings.seed}>"


def with_overrides(settings: SandboxSettings, **overrides: Any) -> SandboxSettings:
    """A copy of ``settings`` (with its own Faults) where names of Faults fields go to faults."""
    fault_names = {f.name for f in fields(Faults)}
    faults = replace(settings.faults, **{k: v for k, v in overrides.items() if k in fault_names})
    rest = {k: v for k, v in overrides.items() if k not in fault_names}
    return replace(settings, faults=faults, **rest)


@contextlib.contextmanager
def serve(
    settings: SandboxSettings | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    **overrides: Any,
) -> Iterator[Sandbox]:
    """Serve a sandbox for the duration of a ``with`` block (the package's docstring shows how)."""
    settings = with_overrides(settings or SandboxSettings(), **overrides)
    with Sandbox(settings, host=host, port=port) as sandbox:
        yield sandbox
