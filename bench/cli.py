"""``workbench --help`` against its floor: the ``--help`` of a bare typer app, in the same run.

The bare app has the workbench's command names and summaries, its root ``--version`` option and
its Typer settings, and nothing else: the floor of typer itself. Each is run as its own process,
as a shell runs them, alternately and ``--repeat`` times; the best time of each counts, so a
noisy machine hurts both alike. Prints both, their ratio (goal <= 1.5), ``workbench --version``
and Python's own start for scale, then the modules the workbench loads beyond the bare app,
slowest first (``python -X importtime``).

    .venv/bin/python bench/cli.py [--repeat 15] [--check]

--check exits 1 when the goal is missed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import typer.main

from workbench.cli import app

BIN = Path(sys.executable).parent
GOAL = 1.5

BARE = '''"""A bare typer app: the workbench's command names, summaries and settings, no code."""
import typer

app = typer.Typer(help="Pull, store, reconcile and troubleshoot partner data.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None)


@app.callback()
def root(version: bool = typer.Option(False, "--version", is_eager=True, help="Print version.")):
    """Pull, store, reconcile and troubleshoot partner data."""


def command() -> None:
    """A command."""


for name, summary in {commands!r}:
    app.command(name, short_help=summary)(command)

app()
'''


def bare_app(folder: Path) -> Path:
    """Write the bare typer app with the workbench's command names and summaries."""
    group = typer.main.get_group(app)
    commands = [(name, command.get_short_help_str()) for name, command in group.commands.items()]
    path = folder / "bare.py"
    path.write_text(BARE.replace("{commands!r}", repr(commands)))
    return path


def timed(command: list[str]) -> tuple[float, str]:
    """Seconds one command took (it must exit 0), and its stdout."""
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed, done.stdout


def import_times(command: list[str]) -> dict[str, int]:
    """Microseconds each module took to import itself in one run (``-X importtime``)."""
    done = subprocess.run(
        [str(BIN / "python"), "-X", "importtime", *command], capture_output=True, text=True
    )
    found: dict[str, int] = {}
    for line in done.stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if len(fields) == 3 and fields[0].strip().isdigit():
            found[fields[2].strip()] = int(fields[0])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--check", action="store_true", help="exit 1 when the goal is missed")
    args = parser.parse_args()
    python = str(BIN / "python")
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        bare = bare_app(Path(tmp))
        runs = {
            "workbench --help": [str(BIN / "workbench"), "--help"],
            "bare typer --help": [python, str(bare), "--help"],
            "workbench --version": [str(BIN / "workbench"), "--version"],
            "python -c pass": [python, "-c", "pass"],
        }
        for name in ("workbench --help", "bare typer --help"):  # both list every command
            printed = timed(runs[name])[1]
            missing = [c for c in typer.main.get_group(app).commands if f"  {c} " not in printed]
            assert not missing, f"{name} does not list {missing}"
        best: dict[str, float] = {}
        for _ in range(args.repeat):  # interleaved, so drift and noise hit all alike
            for name, command in runs.items():
                seconds = timed(command)[0]
                best[name] = min(best.get(name, seconds), seconds)

        ratio = best["workbench --help"] / best["bare typer --help"]
        print(f"best of {args.repeat} runs each, one process per run")
        for name, seconds in best.items():
            print(f"{name:20s} {seconds * 1000:7.1f} ms")
        verdict = "ok" if ratio <= GOAL else "MISSED"
        print(f"ratio --help: {ratio:.2f}x the bare typer app (goal <= {GOAL}x: {verdict})")

        ours = import_times(["-m", "workbench.cli", "--help"])
        floor = import_times([str(bare), "--help"])
        extra = sorted(((us, name) for name, us in ours.items() if name not in floor), reverse=True)
        print("\nmodules workbench --help imports beyond the bare app, slowest first (one run):")
        print(f"  {sum(us for us, _ in extra) / 1000:7.1f} ms  all {len(extra)} of them")
        for us, name in extra[:8]:
            print(f"  {us / 1000:7.1f} ms  {name}")
        rest = (
            best["workbench --help"] - best["bare typer --help"] - sum(us for us, _ in extra) / 1e6
        )
        print(f"  {rest * 1000:7.1f} ms  the rest: typer building the commands' options and help")
    return 1 if args.check and ratio > GOAL else 0


if __name__ == "__main__":
    sys.exit(main())
