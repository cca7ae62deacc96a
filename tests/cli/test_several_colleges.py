"""Several colleges from one installation: ``pull`` and ``report`` over several profiles of one
profiles file, one line each, the worst exit code, one college failing never stopping the others."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tests.conftest import FAST
from tests.report.test_runner import outputs_text, write_notebook
from workbench.cli import app
from workbench.cli.output import each_profile
from workbench.config.settings import PROFILE_SETTINGS, ROLE_SECTIONS, ROLE_SETTINGS, role_setting
from workbench.sandbox import Sandbox

SETTINGS = [*PROFILE_SETTINGS, *(role_setting(s.key, sec) for s in ROLE_SETTINGS
                                 for sec in ROLE_SECTIONS)]  # fmt: skip


def college(name: str, partner: Mapping[str, str], secrets: dict[str, str], **extra: str) -> str:
    """``[profiles.NAME]`` of a college whose partner issued the ``WORKBENCH_*`` variables
    ``partner``: URLs and ids in the file, each secret in a variable of its own (into
    ``secrets``) that the file names, its store ``NAME.db``; ``extra``: more settings."""
    tables: dict[str, dict[str, str]] = {"": {"db": f"{name}.db", **extra}}
    for setting in SETTINGS:
        value = partner.get(setting.variable)
        if value is None:
            continue
        if setting.secret:
            variable = f"{name.upper()}_{setting.variable}"
            secrets[variable], value = value, variable
        tables.setdefault(setting.section or "", {})[setting.file_key] = value
    lines = []
    for section, table in tables.items():
        lines.append(f"[profiles.{name}{'.' + section if section else ''}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


def run(*args: str, env: Mapping[str, str]) -> tuple[int, str, str, list[str]]:
    """Exit code, stdout, stderr, and the summary lines (the last of stdout, one a college)."""
    result = CliRunner().invoke(app, list(args), env={**FAST, **env})
    lines = [line for line in result.stdout.splitlines() if ": exit " in line]
    return result.exit_code, result.stdout, result.stderr, lines


def test_three_colleges_pulled_reported_and_side_by_side(
    here: Path, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets: dict[str, str] = {}
    config = here / "workbench.toml"
    config.write_text("".join(college(n, sandbox.env, secrets) for n in ("a", "b", "c")))

    code, out, err, lines = run("pull", "--all-profiles", env=secrets)
    assert code == 0, err
    assert [line.split(":")[0] for line in lines] == ["a", "b", "c"]
    for name, line in zip("abc", lines, strict=True):
        assert line.startswith(f"{name}: exit 0, ok: ") and "0 failed" in line
        assert line.endswith(f"stored in {(here / f'{name}.db').resolve()}")
        assert (here / f"{name}.db").is_file()
    assert all(secret not in out + err for secret in secrets.values())

    nbs = here / "notebooks"
    monkeypatch.setenv("WORKBENCH_NOTEBOOKS", str(nbs))
    write_notebook(nbs, "reconcile", "db = 'x.db'\nprofile = None", "print(f'DB={db} P={profile}')")
    write_notebook(nbs, "consortium", "stores = []\ncolleges = []", "print(f'{colleges} {stores}')")
    env = {**secrets, "WORKBENCH_NOTEBOOKS": str(nbs)}
    code, out, err, lines = run("report", "-P", "c", "-P", "a", "--no-pull", env=env)
    assert code == 0, err
    assert [line.split(":")[0] for line in lines] == ["c", "a"]
    for name, line in zip("ca", lines, strict=True):
        html = Path(line.split("report ", 1)[1])
        assert line.startswith(f"{name}: exit 0, pull skipped; report ") and html.is_file()
        assert html.parent == here / "reports"  # beside the college's store
        assert html.name.startswith(f"reconcile-{name}-")  # whose it is, never another's name
        executed = html.with_suffix(".ipynb")
        assert f"DB={(here / f'{name}.db').resolve()} P={name}" in outputs_text(executed)

    code, out, err, lines = run("report", "--notebook", "consortium", "--all-profiles", env=env)
    assert code == 0, err
    assert lines == []  # one report, its two paths
    executed = Path(out.splitlines()[-2])
    stores = [str((here / f"{n}.db").resolve()) for n in "abc"]
    assert f"{['a', 'b', 'c']} {stores}" in outputs_text(executed)
    assert "Pull" not in err and "pull run" not in out  # it reads the stores as they are
    assert all(secret not in out + err for secret in secrets.values())

    # stores named by path need no profile, even beside a file that chooses none
    named = ["-p", f"stores={stores[0]},{stores[2]}", "-p", "colleges=a,c"]
    code, out, err, _ = run("report", "--notebook", "consortium", *named, env=env)
    assert code == 0, err
    assert f"['a', 'c'] {[stores[0], stores[2]]}" in outputs_text(Path(out.splitlines()[-2]))
    code, _, err, _ = run("report", "--notebook", "consortium", *named, "--notify",
                          "https://example.org/hook", env=env)  # fmt: skip
    assert code == 2 and "no one college's summary" in err

    # one folder for every college's report, whatever their names: each named for its own
    hostile = {"../Evil one": "a", "North": "b", "north": "c"}
    (here / "hostile.toml").write_text("".join(f'[profiles."{name}"]\ndb = "{db}.db"\n'
                                               for name, db in hostile.items()))  # fmt: skip
    code, out, err, lines = run("report", "--all-profiles", "--config", "hostile.toml",
                                "--no-pull", "--output-dir", "out", env=env)  # fmt: skip
    assert code == 0, err
    written = [Path(line.split("report ", 1)[1]) for line in lines]
    assert [p.parent for p in written] == [here / "out"] * 3 and len(set(written)) == 3
    labels = ["..%2FEvil%20one", "North", "north"]  # nothing escapes the folder: no slash
    assert [p.name[: -len("-20261127T221500Z.html")] for p in written] == [
        f"reconcile-{label}" for label in labels]  # fmt: skip
    assert sorted(p.name for p in (here / "out").iterdir()) == sorted(
        n for p in written for n in (p.name, p.with_suffix(".ipynb").name))  # fmt: skip
    for (name, db), html in zip(hostile.items(), written, strict=True):
        assert f"DB={(here / f'{db}.db').resolve()} P={name}" in outputs_text(
            html.with_suffix(".ipynb"))  # fmt: skip


def test_one_college_failing_never_stops_the_others(
    here: Path, sandbox: Sandbox, sandbox_factory
) -> None:
    gone = sandbox_factory()
    down = gone.env
    gone.stop()
    secrets: dict[str, str] = {}
    (here / "workbench.toml").write_text(
        college("ok", sandbox.env, secrets)
        + college("typo", sandbox.env, secrets, concurency="4")
        + college("down", down, secrets)
        + college("same", sandbox.env, secrets).replace('"same.db"', '"ok.db"')
        + college("last", sandbox.env, secrets)
    )
    code, out, err, lines = run("pull", "--all-profiles", env=secrets)
    assert code == 2, err  # the worst: a configuration error
    assert [line.split(":")[0] for line in lines] == ["ok", "typo", "down", "same", "last"]
    ok, typo, down_line, same, last = lines
    assert ok.startswith("ok: exit 0, ok: ") and last.startswith("last: exit 0, ok: ")
    assert "exit 2, Configuration error: Unknown setting 'concurency'" in typo
    assert "Did you mean 'concurrency'?" in typo
    assert down_line.startswith("down: exit 1, ") and "workbench doctor" in down_line
    assert "has the store of profile 'ok'" in same and 'db = "data/same.db"' in same
    assert (here / "ok.db").is_file() and (here / "last.db").is_file()
    assert not (here / "typo.db").exists() and not (here / "same.db").exists()
    assert all(secret not in out + err for secret in secrets.values())

    held = sqlite3.connect(here / "ok.db.lock", isolation_level=None)  # another pull's lock
    held.execute("BEGIN EXCLUSIVE")
    try:
        code, _, err, lines = run("pull", "-P", "ok", "-P", "last", "--wait", "0.1", env=secrets)
    finally:
        held.close()
    assert code == 1 and [line.split(":")[0] for line in lines] == ["ok", "last"]
    assert lines[0].startswith("ok: exit 1, Error (StoreError): ") and "pull" in lines[0]
    assert lines[1].startswith("last: exit 0, ok: ")

    nbs = here / "notebooks"  # a report whose notebook fails for one college
    write_notebook(nbs, "reconcile", "profile = None", "assert profile != 'ok', 'no figures'")
    env = {**secrets, "WORKBENCH_NOTEBOOKS": str(nbs)}
    code, _, err, lines = run("report", "-P", "ok", "-P", "last", "--no-pull", env=env)
    assert code == 1 and [line.split(":")[0] for line in lines] == ["ok", "last"]
    assert lines[0] == "ok: exit 1, pull skipped; report none: the notebook failed"
    assert "no figures" in err and Path(lines[1].split("report ", 1)[1]).is_file()


@pytest.mark.parametrize(
    ("codes", "worst", "ran"),
    [((0, 3, 0), 3, "abc"), ((3, 1, 0), 1, "abc"), ((1, 2, 3), 2, "abc"), ((0, 130, 0), 130, "ab")],
)
def test_the_exit_code_is_the_worst_and_ctrl_c_stops_the_loop(
    here: Path, codes: tuple[int, ...], worst: int, ran: str
) -> None:
    (here / "workbench.toml").write_text("".join(f'[profiles.{n}]\ndb = "{n}.db"\n' for n in "abc"))
    done = []

    def run_one(name: str) -> tuple[int, str]:
        done.append(name)
        code = codes["abc".index(name)]
        if code == 130:
            raise KeyboardInterrupt
        return code, f"figures of {name}"

    with pytest.raises(typer.Exit) as stop:
        each_profile(["a", "b", "c"], None, run_one)
    assert stop.value.exit_code == worst and "".join(done) == ran


def test_one_store_under_two_names_is_one_colleges(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "workbench.toml").write_text("".join(f'[profiles.{n}]\ndb = "{n}.db"\n'
                                                 for n in ("North", "north")))  # fmt: skip
    (here / "North.db").write_bytes(b"")
    os.link(here / "North.db", here / "north.db")  # as a disk that ignores case sees them
    ran = []
    with pytest.raises(typer.Exit) as stop:
        each_profile(["North", "north"], None, lambda name: (ran.append(name) or 0, name))
    assert stop.value.exit_code == 2 and ran == ["North"]
    said = capsys.readouterr().out
    assert "north: exit 2, Configuration error: Profile 'north' has the store of profile " \
        "'North'" in said.replace("\n", " ")  # fmt: skip


def test_several_profiles_take_no_db(here: Path) -> None:
    code, _, err, lines = run("pull", "-P", "a", "-P", "b", "--db", "x.db", env={})
    assert code == 2 and "each college has its own store" in err and lines == []
    code, _, err, lines = run("report", "--all-profiles", "-P", "a", env={})
    assert code == 2 and "leave out --profile" in err and lines == []
    code, _, err, lines = run("pull", "--all-profiles", env={})
    assert code == 2 and "defines no [profiles.NAME] table" in err and lines == []
    code, _, err, lines = run("report", "-P", "a", "-P", "b", env={"WORKBENCH_DB": "x.db"})
    assert code == 2 and "WORKBENCH_DB is set" in err and lines == []
