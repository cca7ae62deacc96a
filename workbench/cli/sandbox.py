"""``workbench sandbox``: the partner simulation, served until Ctrl-C."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from workbench.sandbox import Sandbox


def _parse_start(text: str) -> datetime:
    """``now`` (the default clock of every sandbox) or an ISO time."""
    from workbench.sandbox.settings import default_start

    if text == "now":
        return default_start()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise typer.BadParameter("use 'now' or an ISO 8601 time such as 2026-03-02T09:00Z") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def sandbox(
    port: Annotated[
        int, typer.Option(metavar="PORT", help="Port to listen on (0: any free port).")
    ] = 8765,
    seed: Annotated[int, typer.Option(metavar="SEED", help="Same seed, same data.")] = 1,
    start: Annotated[
        str,
        typer.Option(
            metavar="now|TIME", help="Partner clock start: 'now' (to the minute) or an ISO time."
        ),
    ] = "now",
    requests: Annotated[int, typer.Option(metavar="N", help="Transcript requests at start.")] = 25,
    transcripts: Annotated[int, typer.Option(metavar="N", help="Transcripts at start.")] = 15,
    latency_ms: Annotated[float, typer.Option(metavar="MS", help="Added latency per call.")] = 0.0,
    error_rate: Annotated[
        float, typer.Option(metavar="SHARE", help="Share of calls answered 500/503.")
    ] = 0.0,
    state: Annotated[
        str | None,
        typer.Option(metavar="PATH", help="Keep the partner's state in this file across restarts."),
    ] = None,
    unknown_partner: Annotated[
        int | None,
        typer.Option(
            "--unknown-partner",
            metavar="SEED",
            help="A partner you have never met: one answer to every point the spec leaves open "
            "(login, routes, event shapes, ids, process code...), drawn from SEED and printed.",
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="NAME=VALUE",
            help="One answer to an open point, repeatable: id_scheme=guid, send_routes=singular, "
            "exchange_login=etms, event_shape=kind_at, process_code=TEST, peek_removes=yes...",
        ),
    ] = None,
    hours_per_minute: Annotated[
        float,
        typer.Option(
            min=0.0, metavar="HOURS", help="Move the partner's clock this many hours per minute."
        ),
    ] = 0.0,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME=VALUE",
            help="Any Faults setting as NAME=VALUE, repeatable: rate_limit_rate=0.1, "
            "drop_rate=0.05, token_ttl=60, path_pattern=no_response.",
        ),
    ] = None,
) -> None:
    """Serve the partner simulation until Ctrl-C, printing its URLs and demo credentials.

    Its answers to what the spec leaves open are the defaults (docs/design.md §3), those of
    --set, or a combination drawn by --unknown-partner SEED (then --set overrides it).
    """
    from workbench.sandbox import Sandbox, SandboxSettings
    from workbench.sandbox.runner import with_overrides
    from workbench.sandbox.settings import fault_changes, setting_changes
    from workbench.sandbox.settings import unknown_partner as unknown_partner_of

    base = SandboxSettings() if unknown_partner is None else unknown_partner_of(unknown_partner)
    try:  # an unknown --set or --fault name, or a value out of range, each named
        settings = with_overrides(
            base,
            seed=seed if unknown_partner is None else unknown_partner,
            start=_parse_start(start),
            initial_requests=requests,
            initial_transcripts=transcripts,
            latency_ms=latency_ms,
            error_rate=error_rate,
            state_path=state,
            **setting_changes(set_ or []),
        )
        settings.faults.update(**fault_changes(fault or []))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    try:
        sb = Sandbox(settings, port=port)
    except OSError as exc:
        raise typer.BadParameter(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}. Try "
                                 "--port 0.", param_hint="--port") from exc  # fmt: skip
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    # Set explicitly: a shell starts a background job with SIGINT ignored.
    previous = {
        sig: signal.signal(sig, signal.default_int_handler)
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        _serve(sb, hours_per_minute=hours_per_minute)
    except KeyboardInterrupt:  # while it was starting or stopping
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(sb: Sandbox, *, hours_per_minute: float) -> None:
    """Serve ``sb``, print what a client needs, and move its clock, until a signal stops it."""
    from workbench.sandbox.settings import answers

    with sb:
        try:
            points = ", ".join(f"{k}={getattr(sb.settings, k)}" for k in answers())
            exports = "".join(f"  export {name}='{value}'\n" for name, value in sb.env.items())
            moving = f"The partner's clock moves {hours_per_minute} h per minute.\n"
            typer.echo(
                f"Sandbox (seed {sb.settings.seed}) serving on {sb.root_url}\n"
                f"  open points       {points}\n"
                f"  identity server   {sb.auth_url}\n"
                f"  gateway           {sb.gateway_url}\n"
                f"  transcript exch.  {sb.exchange_url}\n"
                "Point a client here (demo credentials, valid only for this sandbox):\n"
                f"{exports}{moving if hours_per_minute else ''}"
                "Ctrl-C to stop."
            )
            tick = 5.0
            while True:
                time.sleep(tick)
                if hours_per_minute:
                    sb.advance(hours_per_minute * tick / 60)
        except KeyboardInterrupt:
            typer.echo("Stopping the sandbox.")
