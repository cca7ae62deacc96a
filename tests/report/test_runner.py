"""The notebook runner: parameters checked first, this Python's kernel, failures named, and an
HTML that hides the code and fetches nothing."""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from workbench.errors import ConfigError, NotebookFailed
from workbench.report.runner import (
    NotebookRun,
    coerce_parameters,
    notebook_parameters,
    notebook_path,
    notebooks_folder,
    run_notebook,
)

PROJECT = Path(__file__).resolve().parents[2]
PLOT_CELL = (
    "import matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(3, 2))  # distinctive-source-marker\n"
    "ax.plot([1, 3, 2])\nplt.show()"
)


def write_notebook(folder: Path, name: str, parameters: str, *cells: str) -> Path:
    """``folder/name.ipynb``: a markdown title, a cell tagged parameters, then code cells."""
    params = new_code_cell(parameters, metadata={"tags": ["parameters"]})
    body = [new_markdown_cell(f"# {name} title $x^2$"), params]
    body += [new_code_cell(c) for c in cells]
    nb = new_notebook(cells=body)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Py", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def outputs_text(path: Path) -> str:
    """Every stream output of an executed notebook, joined."""
    nb = nbformat.read(path, as_version=4)
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    return "".join(o.get("text", "") for o in outputs if o.output_type == "stream")


def remote_references(html: str) -> list[str]:
    """src/href values of script, link and img tags that point at the network."""
    found = []
    for tag in re.findall(r"<(?:script|link|img)\b[^>]*>", html, re.I):
        for value in re.findall(r"\b(?:src|href)\s*=\s*[\"']?([^\"'\s>]+)", tag, re.I):
            if re.match(r"(?:https?:)?//", value, re.I):
                found.append(value)
    return found


@pytest.fixture(scope="module")
def fake_python3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JUPYTER_PATH whose 'python3' kernelspec points at a Python that does not exist."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = ["/nonexistent/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Someone else's Python", "language": "python"})
    )
    return root


@pytest.fixture(scope="module")
def ok_run(tmp_path_factory: pytest.TempPathFactory, fake_python3: Path) -> Iterator[NotebookRun]:
    """One run of a notebook with every kind of output, under a misleading python3 kernelspec."""
    folder = tmp_path_factory.mktemp("notebooks")
    write_notebook(
        folder,
        "sample",
        "db = 'x.db'\nsla_days = 5\nratio = 0.5\npull = True\nas_of = None",
        "import sys\nprint('EXE=' + sys.executable)\n"
        "print('TYPES=' + ' '.join(type(v).__name__ for v in (sla_days, ratio, pull, as_of)))",
        PLOT_CELL,
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(fake_python3))
        yield run_notebook(
            "sample",
            {"sla_days": "7", "ratio": "2", "pull": "false", "as_of": "2026-03-02"},
            notebooks_dir=folder,
            output_dir=tmp_path_factory.mktemp("reports"),
        )


@pytest.mark.slow
def test_the_kernel_is_this_python_whatever_python3_kernelspec_is_installed(ok_run):
    assert f"EXE={sys.executable}\n" in outputs_text(ok_run.ipynb_path)


@pytest.mark.slow
def test_string_parameters_take_the_type_of_the_default(ok_run):
    assert "TYPES=int float bool str\n" in outputs_text(ok_run.ipynb_path)


@pytest.mark.slow
def test_both_files_are_named_for_the_notebook_and_the_utc_time(ok_run):
    stamp = r"\d{8}T\d{6}Z"
    assert re.fullmatch(rf"sample-{stamp}\.ipynb", ok_run.ipynb_path.name)
    assert ok_run.html_path == ok_run.ipynb_path.with_suffix(".html")
    assert ok_run.html_path.is_file() and ok_run.elapsed_s > 0
    when = datetime.strptime(ok_run.ipynb_path.stem.removeprefix("sample-"), "%Y%m%dT%H%M%SZ")
    assert abs(when.replace(tzinfo=UTC) - datetime.now(UTC)) < timedelta(minutes=10)


@pytest.mark.slow
def test_the_html_fetches_nothing_from_the_network(ok_run):
    html = ok_run.html_path.read_text(encoding="utf-8")
    assert remote_references(html) == []
    assert "mathjax" not in html.lower() and "require.js" not in html.lower()


class _HeadTags(HTMLParser):
    """The start tags of an HTML document's head, in order: (name, attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.in_head = True

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.in_head:
            self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self.in_head = self.in_head and tag != "head"


@pytest.mark.slow
def test_the_html_forbids_the_browser_to_fetch_anything(ok_run):
    parser = _HeadTags()
    parser.feed(ok_run.html_path.read_text(encoding="utf-8"))
    names = [name for name, _ in parser.tags]
    policies = [
        (i, attrs["content"])
        for i, (name, attrs) in enumerate(parser.tags)
        if name == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    expected = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    assert [content for _, content in policies] == [expected]
    assert policies[0][0] < names.index("style")  # before anything it governs
    assert "script" not in names


@pytest.mark.slow
def test_the_html_embeds_the_chart_as_a_png(ok_run):
    html = ok_run.html_path.read_text(encoding="utf-8")
    images = re.findall(r'<img\b[^>]*\bsrc="data:image/png;base64,([^"]+)"', html)
    assert len(images) == 1
    assert base64.b64decode(images[0]).startswith(b"\x89PNG")


@pytest.mark.slow
def test_the_html_hides_code_and_prompts_and_is_titled(ok_run):
    html = ok_run.html_path.read_text(encoding="utf-8")
    body = html[html.index("<body") :]
    assert "distinctive-source-marker" not in html
    assert "sys.executable" not in body
    assert "sample title" in body  # markdown stays
    assert "jp-InputPrompt" not in body and "jp-OutputPrompt" not in body
    title = re.search(r"<title>(.*?)</title>", html)
    assert title is not None and title[1].startswith("sample report, 20")
    assert title[1].endswith(" UTC")


@pytest.mark.slow
def test_a_failing_cell_is_named_by_the_line_that_raised_and_the_outputs_are_kept(tmp_path):
    write_notebook(
        tmp_path / "nb",
        "broken",
        "divisor = 0",
        "print('reached-before-failure')\ndef divide(n):\n    return n / divisor",
        "# spread over lines\nx = 1\nratio = divide(x)\nprint(ratio)",
        "print('never-reached')",
    )
    with pytest.raises(NotebookFailed) as caught:
        run_notebook(
            "broken", {"divisor": "0"}, notebooks_dir=tmp_path / "nb", output_dir=tmp_path / "out"
        )
    exc = caught.value
    # cells: 0 title, 1 parameters, 2 print and def, 3 the call (papermill injected one more);
    # the error is raised in divide(), the line named is the failing cell's own
    assert (exc.cell_index, exc.cell_line) == (3, "ratio = divide(x)")
    assert (exc.ename, exc.evalue) == ("ZeroDivisionError", "division by zero")
    assert str(exc) == (
        "Notebook broken failed in cell 4 of 5, line 3 (ratio = divide(x)): "
        "ZeroDivisionError: division by zero"
    )
    assert exc.ipynb_path is not None and exc.html_path is not None
    assert "reached-before-failure" in outputs_text(exc.ipynb_path)
    assert "never-reached" not in outputs_text(exc.ipynb_path)
    html = exc.html_path.read_text(encoding="utf-8")
    assert "ZeroDivisionError" in html and "(failed)" in html


@pytest.mark.slow
def test_a_syntax_error_names_its_line(tmp_path):
    write_notebook(tmp_path / "nb", "typo", "n = 1", "x = n\ny = (n +\n")
    with pytest.raises(NotebookFailed) as caught:
        run_notebook("typo", notebooks_dir=tmp_path / "nb", output_dir=tmp_path / "out")
    assert caught.value.ename == "SyntaxError"
    assert str(caught.value).startswith("Notebook typo failed in cell 3 of 3, line 2 (y = (n +):")


@pytest.mark.slow
def test_a_cell_over_the_timeout_fails_the_run_saying_how_to_raise_it(tmp_path):
    write_notebook(
        tmp_path / "nb",
        "slow",
        "seconds = 60",
        "import time\nprint('before-the-sleep', flush=True)",
        "time.sleep(seconds)",
    )
    with pytest.raises(NotebookFailed) as caught:
        run_notebook("slow", notebooks_dir=tmp_path / "nb", output_dir=tmp_path, timeout_s=5)
    exc = caught.value
    assert (exc.cell_index, exc.cell_line, exc.ename) == (3, "time.sleep(seconds)", "TimeoutError")
    assert str(exc).startswith("Notebook slow failed in cell 4 of 4, line 1 (time.sleep(seconds))")
    assert "longer than 5 s" in str(exc) and "--timeout" in str(exc)
    assert exc.ipynb_path is not None and "before-the-sleep" in outputs_text(exc.ipynb_path)
    nb = nbformat.read(exc.ipynb_path, as_version=4)
    errors = [o for o in nb.cells[-1].outputs if o.output_type == "error"]
    assert errors[-1].ename == "TimeoutError"  # after the KeyboardInterrupt of the shutdown
    assert exc.html_path is not None and "longer than 5 s" in exc.html_path.read_text()


@pytest.mark.slow
def test_an_existing_report_is_never_overwritten(tmp_path):
    write_notebook(tmp_path / "nb", "tiny", "x = 1", "print(x)")
    out = tmp_path / "out"
    out.mkdir()
    now = datetime.now(UTC)
    taken = []
    for second in range(0, 120):  # every name the run could pick in the next two minutes
        stem = f"tiny-{now + timedelta(seconds=second):%Y%m%dT%H%M%SZ}"
        for suffix in (".ipynb", ".html"):
            (out / f"{stem}{suffix}").write_text("earlier report")
        taken.append(stem)
    run = run_notebook("tiny", notebooks_dir=tmp_path / "nb", output_dir=out)
    assert run.ipynb_path.stem.removesuffix("-2") in taken
    assert run.ipynb_path.stem.endswith("-2") and run.html_path.stem.endswith("-2")
    assert all((out / f"{s}.ipynb").read_text() == "earlier report" for s in taken)


# Fast: nothing below starts a kernel.


def test_unknown_parameters_are_refused_before_anything_runs(tmp_path):
    write_notebook(tmp_path / "nb", "sample", "db = 'x.db'\nsla_days = 5")
    with pytest.raises(ConfigError, match=r"Unknown parameter\(s\).*: colour, sla; .*db, sla_days"):
        run_notebook(
            "sample",
            {"sla": 3, "colour": "red"},
            notebooks_dir=tmp_path / "nb",
            output_dir=tmp_path / "out",
        )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("blocker", ["file", "parent file"])
def test_an_output_folder_that_cannot_be_one_is_a_config_error(tmp_path, blocker):
    write_notebook(tmp_path / "nb", "tiny", "x = 1", "print(x)")
    (tmp_path / "taken").write_text("a file")
    out = tmp_path / "taken" if blocker == "file" else tmp_path / "taken" / "reports"
    with pytest.raises(ConfigError, match=r"Cannot write reports in .*taken.*--output-dir"):
        run_notebook("tiny", notebooks_dir=tmp_path / "nb", output_dir=out)


def test_a_notebook_without_a_parameters_cell_accepts_none(tmp_path):
    nb = new_notebook(cells=[new_code_cell("x = 1")])
    (tmp_path / "plain.ipynb").write_text(nbformat.writes(nb))
    assert notebook_parameters("plain", notebooks_dir=tmp_path) == {}
    with pytest.raises(ConfigError, match="no cell tagged parameters"):
        run_notebook("plain", {"x": 2}, notebooks_dir=tmp_path, output_dir=tmp_path / "out")


def test_an_unknown_notebook_lists_the_available_ones(tmp_path):
    write_notebook(tmp_path, "alpha", "a = 1")
    write_notebook(tmp_path, "beta", "b = 1")
    with pytest.raises(ConfigError, match=r"no notebook 'gamma' in .* \(available: alpha, beta\)"):
        notebook_path("gamma", notebooks_dir=tmp_path)
    with pytest.raises(ConfigError, match="no notebook"):
        notebook_path("../alpha", notebooks_dir=tmp_path / "sub")


def test_an_unreadable_notebook_is_a_config_error(tmp_path):
    (tmp_path / "torn.ipynb").write_text('{"cells": [')
    with pytest.raises(ConfigError, match="not a readable notebook"):
        notebook_parameters("torn", notebooks_dir=tmp_path)


def test_the_notebooks_folder_is_the_projects_unless_told(tmp_path, monkeypatch):
    monkeypatch.delenv("WORKBENCH_NOTEBOOKS", raising=False)
    assert notebooks_folder() == PROJECT / "notebooks"
    monkeypatch.setenv("WORKBENCH_NOTEBOOKS", str(tmp_path))
    assert notebooks_folder() == tmp_path
    assert notebooks_folder(tmp_path / "other") == tmp_path / "other"
    write_notebook(tmp_path, "mine", "a = 1")
    assert notebook_path("mine") == tmp_path / "mine.ipynb"


DECLARED = {
    "n": {"inferred_type_name": "None", "default": "5"},
    "ratio": {"inferred_type_name": "None", "default": "0.5"},
    "flag": {"inferred_type_name": "None", "default": "True"},
    "as_of": {"inferred_type_name": "None", "default": "None"},
    "name": {"inferred_type_name": "None", "default": "'x'"},
    "typed": {"inferred_type_name": "int", "default": "None"},
    "call": {"inferred_type_name": "None", "default": "Path('x')"},
}


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("n", "7", 7),
        ("n", 7.5, 7.5),  # not a string: passed as given
        ("ratio", "2", 2.0),
        ("ratio", "1e-3", 0.001),
        ("flag", "false", False),
        ("flag", "Yes", True),
        ("flag", "0", False),
        ("as_of", "2026-03-02", "2026-03-02"),
        ("as_of", "None", "None"),
        ("name", "5", "5"),
        ("typed", "3", 3),
        ("call", "y", "y"),
        ("name", Path("a/b"), "a/b"),
        ("name", '"north"', "north"),  # quotes optional, as a scheduled job's form may keep them
        ("ratio", "'2'", 2.0),
        ("name", '"', '"'),
    ],
)
def test_coercion_follows_the_declared_default(key, value, expected):
    coerced = coerce_parameters({key: value}, DECLARED)[key]
    assert coerced == expected and type(coerced) is type(expected)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("n", "seven", r"n='seven' must be of type int \(its default is 5\); pass e.g. n=5"),
        ("ratio", "half", "must be of type float"),
        ("flag", "maybe", "must be of type bool"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_config_error(key, value, message):
    with pytest.raises(ConfigError, match=message):
        coerce_parameters({key: value}, DECLARED)
