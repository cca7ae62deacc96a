"""The ``workbench`` command: thin wrappers over library functions, with clean exit codes.

Exit codes: 0 ok, 1 failed, 2 usage or configuration error, 3 exceptions found (``report
--fail-on-exceptions``). When more than one applies, the first of 2, 1, 3 wins: a report on a
partial pull that holds exceptions exits 1.

What may carry partner text (summaries, checks, error messages) is printed with :func:`say`,
which escapes control characters: an id cannot retitle or repaint the terminal.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated

import typer

from workbench import __version__

# What a pull that read nothing at all says (every list and event feed failed).
PULL_FAILED = (
    "no list or event feed could be read; check the partner's status and the credentials "
    "(workbench doctor)"
)

app = typer.Typer(
    help="Pull, store, reconcile and troubleshoot partner data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def say(text: str, *, err: bool = False) -> None:
    """Print ``text`` (ours, maybe holding partner text) with its control characters escaped."""
    from workbench.terminal import printable

    typer.echo(printable(text, keep_newlines=True), err=err)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"workbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    """Pull, store, reconcile and troubleshoot partner data."""


def _parse_start(text: str) -> datetime:
    if text == "now":
        return datetime.now(UTC).replace(microsecond=0)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise typer.BadParameter("use 'now' or an ISO 8601 time such as 2026-03-02T09:00Z") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@app.command()
def sandbox(
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8765,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    seed: Annotated[int, typer.Option(help="Same seed, same data.")] = 1,
    start: Annotated[str, typer.Option(help="Partner clock start: 'now' or ISO time.")] = "now",
    requests: Annotated[int, typer.Option(help="Transcript requests at start.")] = 25,
    transcripts: Annotated[int, typer.Option(help="Transcripts at start.")] = 15,
    namespaces: Annotated[
        str, typer.Option(help="PESC namespaces: v1.0.0 (the spec's) or v1.1.0 (real traffic).")
    ] = "v1.0.0",
    token_ttl: Annotated[int, typer.Option(help="Access-token lifetime, seconds.")] = 3600,
    latency_ms: Annotated[float, typer.Option(help="Added latency per call.")] = 0.0,
    jitter_ms: Annotated[float, typer.Option(help="Random extra latency, up to this.")] = 0.0,
    error_rate: Annotated[float, typer.Option(help="Share of calls answered 500/503.")] = 0.0,
    rate_limit_rate: Annotated[float, typer.Option(help="Share answered 429.")] = 0.0,
    drop_rate: Annotated[float, typer.Option(help="Share of connections dropped.")] = 0.0,
    malformed_share: Annotated[float, typer.Option(help="Share of malformed XML.")] = 0.0,
    invalid_share: Annotated[float, typer.Option(help="Share of schema-invalid XML.")] = 0.0,
    pescxml_key: Annotated[
        str, typer.Option(help="JSON key of the XML in GET bodies.")
    ] = "PESCXML",
    state: Annotated[
        str | None, typer.Option(help="Keep the partner's state in this file across restarts.")
    ] = None,
    id_scheme: Annotated[
        str,
        typer.Option(help="API RequestIDs: tracking (the tracking ID) or guid (a GUID apart)."),
    ] = "tracking",
    max_peek_count: Annotated[
        int, typer.Option(help="The largest Count the domestic peek accepts.")
    ] = 100,
    detail_shape: Annotated[
        str, typer.Option(help="Detail bodies: array (one item) or object.")
    ] = "array",
    id_key: Annotated[
        str, typer.Option(help="Spelling of the id key in items: RequestID or RequestId.")
    ] = "RequestID",
    hours_per_minute: Annotated[
        float, typer.Option(help="Move the partner's clock this many hours per real minute.")
    ] = 0.0,
    fault: Annotated[
        list[str] | None,
        typer.Option(help="Any Faults setting as NAME=VALUE, repeatable: list_shape=null."),
    ] = None,
) -> None:
    """Serve the partner simulation until Ctrl-C, printing its URLs and demo credentials."""
    from workbench.sandbox import Sandbox, SandboxSettings
    from workbench.sandbox.runner import with_overrides
    from workbench.sandbox.settings import fault_changes

    if namespaces not in ("v1.0.0", "v1.1.0"):
        raise typer.BadParameter("use v1.0.0 or v1.1.0", param_hint="--namespaces")
    if hours_per_minute < 0:
        raise typer.BadParameter("the clock only moves forward", param_hint="--hours-per-minute")
    try:
        settings = with_overrides(
            SandboxSettings(),
            seed=seed,
            start=_parse_start(start),
            initial_requests=requests,
            initial_transcripts=transcripts,
            namespaces=namespaces,
            token_ttl=token_ttl,
            latency_ms=latency_ms,
            jitter_ms=jitter_ms,
            error_rate=error_rate,
            rate_limit_rate=rate_limit_rate,
            drop_rate=drop_rate,
            malformed_share=malformed_share,
            invalid_share=invalid_share,
            pescxml_key=pescxml_key,
            state_path=state,
            id_scheme=id_scheme,
            max_peek_count=max_peek_count,
            detail_shape=detail_shape,
            id_key=id_key,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    try:
        settings.faults.update(**fault_changes(fault or []))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--fault") from exc
    try:
        sb = Sandbox(settings, host=host, port=port)
    except OSError as exc:
        typer.echo(f"Cannot listen on {host}:{port}: {exc.strerror}. Try --port 0.", err=True)
        raise typer.Exit(2) from exc
    except ValueError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with sb:
        typer.echo(f"Sandbox (seed {seed}) serving on {sb.root_url}")
        typer.echo(f"  identity server   {sb.auth_url}")
        typer.echo(f"  gateway           {sb.gateway_url}")
        typer.echo(f"  transcript exch.  {sb.exchange_url}")
        typer.echo("Point a client here (demo credentials, valid only for this sandbox):")
        for name, value in sb.env.items():
            typer.echo(f"  export {name}='{value}'")
        if hours_per_minute:
            typer.echo(f"The partner's clock moves {hours_per_minute} h per minute.")
        typer.echo(f"Move it by hand: curl -X POST '{sb.root_url}/_sandbox/advance?hours=6'")
        typer.echo("Ctrl-C to stop.")
        tick = 5.0
        try:
            while not stop.wait(tick):
                if hours_per_minute:
                    sb.advance(hours_per_minute * tick / 60)
        except KeyboardInterrupt:
            pass
        typer.echo("Stopping the sandbox.")


@contextlib.contextmanager
def clean_errors() -> Iterator[None]:
    """Turn our errors into a message and an exit code: 2 for configuration, 1 for the rest."""
    from workbench.errors import ConfigError, WorkbenchError

    try:
        yield
    except ConfigError as exc:
        say(f"Configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    except WorkbenchError as exc:
        say(f"Error ({type(exc).__name__}): {exc}", err=True)
        raise typer.Exit(1) from None


@app.command()
def doctor(
    profile: Annotated[
        str | None, typer.Option(help="Profile to check (default: WORKBENCH_PROFILE, ...).")
    ] = None,
    config: Annotated[
        str | None, typer.Option(help="Profiles file (default: WORKBENCH_CONFIG, workbench.toml).")
    ] = None,
) -> None:
    """Check every configured credential and interface; print what works and what to fix.

    Exit 0 when every check passes, 1 when one fails, 2 on a configuration error (an interface
    the profile uses and cannot authenticate for lack of a setting, a secret say).
    """
    from workbench.client import connect
    from workbench.doctor import passed, render, run_checks

    with clean_errors(), connect(profile, config_path=config) as w:
        say(f"Profile {w.profile.name!r} ({w.profile.origin})")
        checks = run_checks(w)
        say(render(checks))
        w.profile.check_interfaces()  # the same ConfigError as pull and report: exit 2
    if not passed(checks):
        typer.echo("Some checks failed: see the fix column.", err=True)
        raise typer.Exit(1)


@app.command()
def pull(
    profile: Annotated[
        str | None, typer.Option(help="Profile to pull (default: WORKBENCH_PROFILE, ...).")
    ] = None,
    db: Annotated[
        str | None, typer.Option(help="SQLite database (default: WORKBENCH_DB, data/...).")
    ] = None,
    config: Annotated[
        str | None, typer.Option(help="Profiles file (default: WORKBENCH_CONFIG, workbench.toml).")
    ] = None,
    allow_partial: Annotated[
        bool,
        typer.Option(
            help="Exit 0 even when some lists or details failed (they retry next pull); a pull "
            "that read nothing still exits 1."
        ),
    ] = False,
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for another pull on the same database.")
    ] = 60.0,
    progress: Annotated[
        bool | None, typer.Option("--progress/--no-progress", help="Show a progress bar.")
    ] = None,
) -> None:
    """Store every list, event feed and missing detail in the database; print a summary.

    Exit 0 when everything was stored, 1 when the run was partial (unless --allow-partial) or
    failed (nothing could be read: --allow-partial does not accept that), 2 on a configuration
    error.
    """
    from workbench.client import connect

    with clean_errors(), connect(profile, db=db, config_path=config) as w:
        summary = w.pull(progress=progress, lock_timeout_s=wait)
        say(str(summary))
        typer.echo(f"Stored in {w.db}")
    if summary.status == "failed":
        typer.echo(f"The pull failed: {PULL_FAILED}.", err=True)
        raise typer.Exit(1)
    if summary.status == "partial" and not allow_partial:
        typer.echo("The pull was partial: failed items are retried by the next pull.", err=True)
        raise typer.Exit(1)


@app.command()
def demo(
    seed: Annotated[int, typer.Option(help="Sandbox seed: same seed, same data.")] = 1,
    details: Annotated[int, typer.Option(help="How many details of each kind to show.")] = 3,
    report: Annotated[
        bool, typer.Option("--report/--no-report", help="Finish with the HTML report.")
    ] = True,
    output_dir: Annotated[str, typer.Option(help="Where the report is written.")] = "data/reports",
) -> None:
    """The main job on the embedded sandbox, from tokens to the HTML reconciliation report.

    Tokens, every list, a pull into data/demo.db, a morning's sends through the outbox, eight
    hours at the partner, a second pull, and the report.

    Prints where the database and the HTML report are. Exit 0 when every step passed, 1 when
    one failed (a failed report notebook prints its partial outputs' paths), 2 on a usage error.
    """
    from workbench.demo import run_demo

    if report:
        from workbench.cli_report import check_folder

        check_folder(output_dir, "--output-dir")
    with clean_errors():
        result = run_demo(say, seed=seed, details=details, report=report,
                          reports_dir=output_dir)  # fmt: skip
    if not result.ok:
        raise typer.Exit(1)


@app.command()
def bundle(
    request_id: Annotated[str, typer.Argument(help="The RequestID (or received transcript id).")],
    profile: Annotated[
        str | None,
        typer.Option(help="Profile whose database to read (default: WORKBENCH_PROFILE, ...)."),
    ] = None,
    db: Annotated[
        str | None, typer.Option(help="SQLite database (default: the profile's, WORKBENCH_DB).")
    ] = None,
    config: Annotated[
        str | None, typer.Option(help="Profiles file (default: WORKBENCH_CONFIG, workbench.toml).")
    ] = None,
    out: Annotated[str, typer.Option(help="Folder to write the zip in.")] = "data/bundles",
    redact_personal: Annotated[
        bool,
        typer.Option(
            "--redact-personal",
            help="Also mask student names, birth dates, agency ids, addresses, emails, phones.",
        ),
    ] = False,
) -> None:
    """Zip what the database holds about one request for a partner ticket; print its path.

    The zip holds a redacted HAR of its calls (it opens in a browser's developer tools), its
    PESC documents with their validation, and its timeline. Reads the database only: the
    partner is not contacted. Exit 0 ok, 1 when the database knows nothing about REQUEST_ID,
    2 on a configuration error.
    """
    from workbench.bundle import make_bundle_from_profile
    from workbench.cli_report import check_folder

    check_folder(out, "--out")
    with clean_errors():
        zip_path = make_bundle_from_profile(
            request_id,
            profile=profile,
            db=db,
            config_path=config,
            out_dir=out,
            redact_personal=redact_personal,
        )
    typer.echo(str(zip_path))


# The report commands live in their own module and register themselves on ``app``.
from workbench import cli_report  # noqa: E402, F401


def main() -> None:
    """Entry point of the console script."""
    app()


if __name__ == "__main__":
    main()
