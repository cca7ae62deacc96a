"""Run a notebook with papermill, its kernel this Python over Unix sockets (student data never
crosses TCP); keep the executed copy and an HTML whose CSP lets it fetch or run nothing."""

from __future__ import annotations

import ast
import html
import math
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import nbformat

from workbench.config import parse_bool
from workbench.errors import ConfigError, NotebookFailed
from workbench.folders import create_private

NOTEBOOKS_ENV = "WORKBENCH_NOTEBOOKS"
# Notebook metadata saying a notebook is not a report, and why: `workbench report` refuses it.
REPORT_KEY = "workbench"
_INJECTED, _ERROR_MARK = "injected-parameters", "papermill-error-cell-tag"
# The page's policy: nothing fetched or run, only inline styles and images.
# base-uri and form-action do not fall back to default-src
_CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; "
    "base-uri 'none'; form-action 'none'"
)
_PAGE = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
    f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n<title>{{title}}</title>\n'
    "<style>body {{ margin: 1em auto; max-width: 80em; padding: 0 1em; font-family: system-ui, "
    "sans-serif; }} pre {{ white-space: pre-wrap; }} .wb-error {{ color: #a61b1b; }}</style>"
    "\n</head><body>\n{banner}{body}\n</body></html>\n"
)
_BANNER = (
    '<p class="wb-banner" role="note" data-banner="sandbox" style="background:#fff3cd;'
    'border:1px solid #c69500;padding:.5em 1em;font-weight:bold;margin:0 0 1em">{}</p>'
)
# IPython's traceback: colour codes, then per frame "Cell In[3], line 2".
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_FRAME = re.compile(r"^\s*Cell In\[(\d*)\], line (\d+)", re.M)


@dataclass(frozen=True)
class NotebookRun:
    """One executed notebook: where its two files are, when it started, how long it took."""

    ipynb_path: Path
    html_path: Path
    started_at: datetime
    elapsed_s: float


def notebooks_folder(notebooks_dir: str | os.PathLike[str] | None = None) -> Path:
    """The argument, else ``WORKBENCH_NOTEBOOKS``, else the project's notebooks."""
    chosen = notebooks_dir or os.environ.get(NOTEBOOKS_ENV)
    if chosen:
        return Path(chosen)
    package = Path(__file__).resolve().parents[1]
    project = package.parent / "notebooks"  # a checkout (editable install)
    return project if project.is_dir() else package / "notebooks"


def notebook_path(name: str, *, notebooks_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<folder>/<name>.ipynb``; ``ConfigError`` listing the available ones when absent."""
    folder = notebooks_folder(notebooks_dir)
    path = folder / f"{name}.ipynb"
    if "/" in name or "\\" in name or not path.is_file():
        names = sorted(p.stem for p in folder.glob("*.ipynb")) if folder.is_dir() else []
        raise ConfigError(
            f"There is no notebook {name!r} in {folder} (available: {', '.join(names) or 'none'}); "
            f"pick one of those, or point {NOTEBOOKS_ENV} at another folder."
        )
    return path


def notebook_parameters(
    name: str, *, notebooks_dir: str | os.PathLike[str] | None = None, report: bool = False
) -> dict[str, dict[str, str]]:
    """A notebook's parameters as papermill infers them (``report``: one that is)."""
    import papermill

    path = notebook_path(name, notebooks_dir=notebooks_dir)
    try:
        meta = nbformat.read(path, as_version=4).metadata.get(REPORT_KEY, {})
        declared: dict[str, dict[str, str]] = papermill.inspect_notebook(path)
    except ValueError as exc:  # nbformat's NotJSONError, a notebook that does not validate
        raise ConfigError(f"{path} is not a readable notebook ({exc}): restore it.") from None
    if report and meta.get("report", True) is False:
        raise ConfigError(f"Notebook {name!r} is not a report: {meta.get('why', 'it is not one')}. "
                          "`workbench report` runs the others of its folder.")  # fmt: skip
    return declared


def declared_default(declared: dict[str, str]) -> Any:
    """A declared parameter's default value, when it is a literal (else its source text)."""
    try:
        return ast.literal_eval(declared.get("default", ""))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return declared.get("default")


def coerce_parameters(
    parameters: dict[str, Any], declared: dict[str, dict[str, str]], *, notebook: str = "notebook"
) -> dict[str, Any]:
    """Refuse undeclared names; turn string values into the type of the declared default."""
    if unknown := sorted(set(parameters) - set(declared)):
        raise ConfigError(
            f"Unknown parameter(s) for {notebook}: {', '.join(unknown)}; "
            f"it accepts: {', '.join(sorted(declared)) or 'none (no cell tagged parameters)'}."
        )
    out = {}
    for key, value in parameters.items():
        value = os.fspath(value) if isinstance(value, os.PathLike) else value
        out[key] = _coerce(key, value, declared[key]) if isinstance(value, str) else value
    return out


def _coerce(key: str, text: str, declared: dict[str, str]) -> Any:
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]  # quotes optional: a scheduled job's form may keep them
    named = {"bool": bool, "int": int, "float": float}
    kind = named.get(declared.get("inferred_type_name", ""), type(declared_default(declared)))
    try:
        if kind is bool:
            return parse_bool(text)
        if kind in (int, float):
            return kind(text)
    except ValueError:
        raise ConfigError(
            f"Parameter {key}={text!r} must be of type {kind.__name__} (its default is "
            f"{declared.get('default')}); pass e.g. {key}={declared.get('default')}."
        ) from None
    return text


def run_notebook(
    name: str, parameters: dict[str, Any] | None = None, *,
    notebooks_dir: str | os.PathLike[str] | None = None,
    output_dir: str | os.PathLike[str] = "data/reports", timeout_s: float = 600,
    label: str | None = None,
) -> NotebookRun:  # fmt: skip
    """Execute ``<notebooks>/<name>.ipynb`` into ``<output_dir>/<name>[-<label>]-<UTC time>.ipynb``
    and ``.html`` (private, never over an earlier report), a report of the sandbox's data saying
    so; a notebook declaring ``output_stem`` is given their path but the suffix, for its files."""
    source = notebook_path(name, notebooks_dir=notebooks_dir)
    declared = notebook_parameters(name, notebooks_dir=notebooks_dir)
    values = coerce_parameters(parameters or {}, declared, notebook=f"notebook {name!r}")
    started_at, started = datetime.now(UTC), time.perf_counter()
    whose = f"-{quote(label, safe='')}" if label else ""  # encoded: no name leaves the folder
    ipynb_path = _reserve(Path(output_dir), f"{name}{whose}-{started_at:%Y%m%dT%H%M%SZ}")
    if "output_stem" in declared:
        values["output_stem"] = str(ipynb_path.resolve().with_suffix(""))
    html_path = ipynb_path.with_suffix(".html")
    banner = _banner(values.get("stores") or [values.get("db")])  # a consortium: any of them
    title = f"{banner + ': ' if banner else ''}{name} report, {started_at:%Y-%m-%d %H:%M} UTC"
    failure = _execute(source, ipynb_path, values, math.ceil(timeout_s))
    nb = nbformat.read(ipynb_path, as_version=4)
    if failure is None:
        export_html(nb, html_path, title=title, banner=banner)
        return NotebookRun(ipynb_path, html_path, started_at, time.perf_counter() - started)
    index, ename, evalue = failure
    cell, index, count, (number, line) = _failed_cell(nb, index)
    if failure[0] is None and cell is not None:  # a timeout: say so where it happened
        error = {"ename": ename, "evalue": evalue, "traceback": [evalue]}
        cell.setdefault("outputs", []).append(nbformat.v4.new_output("error", **error))
        nbformat.write(nb, ipynb_path)
    export_html(nb, html_path, title=f"{title} (failed)", banner=banner)
    where = f"cell {index + 1} of {count}, line {number} ({line})" if index is not None \
        else "before its first cell"  # fmt: skip
    raise NotebookFailed(
        f"Notebook {name} failed in {where}: {ename}: {evalue}",
        notebook=name, cell_index=index, cell_line=line, ename=ename, evalue=evalue,
        ipynb_path=ipynb_path, html_path=html_path,
    )  # fmt: skip


def run_report(
    name: str, parameters: dict[str, Any] | None = None, *, warn: Callable[[str], None],
    **options: Any,
) -> NotebookRun | None:  # fmt: skip
    """:func:`run_notebook`, a failure ``warn``-ed with its partial outputs: None."""
    try:
        return run_notebook(name, parameters, **options)
    except NotebookFailed as exc:
        warn(str(exc))
        for partial in (exc.ipynb_path, exc.html_path):
            if partial is not None and partial.exists():
                warn(f"Partial output: {partial.resolve()}")
        return None


def export_html(nb: Any, path: Path, *, title: str, banner: str | None = None) -> Path:
    """The HTML: markdown and outputs (never code), images embedded, nothing fetched, the banner.
    Our own page rather than nbconvert's (bench/report.py: its import and templates were a
    tenth of ``report --no-pull``)."""
    import mistune

    markdown = mistune.create_markdown(escape=True)  # a cell's raw HTML (a refresh) shows as text
    parts: list[str] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            parts.append(str(markdown(cell.source)))
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = out.get("data", {})
            if "text/html" in data:
                parts.append("".join(data["text/html"]))
            elif "image/png" in data:
                parts.append(f'<img alt="chart" src="data:image/png;base64,{data["image/png"]}"/>')
            elif out.get("output_type") == "error":
                trace = _ANSI.sub("", "\n".join(out.get("traceback", [])))
                parts.append(f'<pre class="wb-error">{html.escape(trace)}</pre>')
            elif said := out.get("text", data.get("text/plain")):
                parts.append(f"<pre>{html.escape(''.join(said))}</pre>")
    shown = _BANNER.format(html.escape(banner)) if banner else ""
    page = _PAGE.format(title=html.escape(title), banner=shown, body="\n".join(parts))
    path.write_text(page, encoding="utf-8")
    return path


def _banner(stores: list[Any]) -> str | None:
    """That a store of ``stores`` holds the embedded sandbox's data (made up), else None."""
    from workbench.errors import WorkbenchError
    from workbench.store.identity import SANDBOX_TITLE, is_sandbox_data, stored_partner

    for db in stores:
        try:
            if db and is_sandbox_data(stored_partner(str(db))):
                return SANDBOX_TITLE
        except WorkbenchError:  # a store that cannot be read: the notebook says so
            continue
    return None


def _execute(
    source: Path, ipynb_path: Path, values: dict[str, Any], timeout_s: int
) -> tuple[int | None, str, str] | None:
    """Run papermill; None, or (its cell index or None, the error's name, its message)."""
    import papermill
    from nbclient.exceptions import CellTimeoutError

    with tempfile.TemporaryDirectory(prefix="workbench-kernel-") as private:
        try:
            papermill.execute_notebook(
                source, ipynb_path, parameters=values, kernel_name="python3",
                progress_bar=False, log_output=False, start_timeout=60,
                execution_timeout=timeout_s, kernel_manager_class=_this_python(Path(private)),
            )  # fmt: skip
        except papermill.PapermillExecutionError as exc:
            return exc.cell_index, exc.ename, exc.evalue
        except CellTimeoutError:
            hint = f"raise the limit with --timeout (timeout_s=), now {timeout_s} s"
            return None, "TimeoutError", f"the cell ran longer than {timeout_s} s: {hint}"
        except (RuntimeError, OSError) as exc:  # the kernel died, or never started
            log = Path(private, "kernel.log")
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            return None, type(exc).__name__, f"{exc} (kernel log: {''.join(tail) or 'empty'})"
    return None


def _this_python(private: Path) -> type:
    """A kernel manager for ``sys.executable`` over Unix sockets in ``private``."""
    from ipykernel.kernelspec import get_kernel_dict
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpec

    class ThisPythonKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.transport, self.ip = "ipc", str(private / "kernel")

        @property
        def kernel_spec(self) -> KernelSpec:
            return KernelSpec(**get_kernel_dict())

        async def start_kernel(self, **kwargs: Any) -> None:  # type: ignore[override]
            with (private / "kernel.log").open("ab") as log:
                await super().start_kernel(stdout=log, stderr=log, **kwargs)

    return ThisPythonKernelManager


def _reserve(folder: Path, stem: str) -> Path:
    """A new ``<stem>[-n].ipynb`` and its ``.html``, created empty and private (0600)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            path = folder / (f"{stem}.ipynb" if n == 1 else f"{stem}-{n}.ipynb")
            try:
                create_private(path)
            except FileExistsError:
                continue
            try:
                create_private(path.with_suffix(".html"))
                return path
            except FileExistsError:  # made by another run: leave both to it
                path.unlink()
    except OSError as exc:  # a file where the folder should be, no permission, a full disk
        raise ConfigError(
            f"Cannot write reports in {folder} ({exc.strerror or exc}): pick another output "
            "folder (--output-dir, output_dir=)."
        ) from None
    raise ConfigError(f"{folder} holds 1000 reports named {stem}: clean it up.")


def _failed_cell(nb: Any, index: int | None) -> tuple[Any, int | None, int, tuple[int, str]]:
    """The failed cell, its index in the source, how many cells, the line that raised."""
    cells = [c for c in nb.cells if _ERROR_MARK not in c.metadata.get("tags", [])]
    injected = [i for i, c in enumerate(cells) if _INJECTED in c.metadata.get("tags", [])]
    if index is None:  # the last cell started
        started = [i for i, c in enumerate(cells) if c.metadata.get("papermill", {})
                   .get("start_time")]  # fmt: skip
        index = started[-1] if started else -1
    count = len(cells) - len(injected)
    if not 0 <= index < len(cells):
        return None, None, count, (0, "")
    number, line = _failing_line(cells[index])
    line = line if len(line) <= 80 else line[:77] + "..."
    return cells[index], index - sum(i < index for i in injected), count, (number, line)


def _failing_line(cell: Any) -> tuple[int, str]:
    """The line of ``cell`` that raised (its own frame), else its first line of code."""
    source = cell.get("source", "").splitlines()
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    text = _ANSI.sub("", "\n".join(errors[0].get("traceback", []))) if errors else ""
    frames = [(int(n or -1), int(line)) for n, line in _CELL_FRAME.findall(text)]
    ours = [ln for n, ln in frames if n == cell.get("execution_count")] or [
        ln for _, ln in frames[:1]
    ]
    if ours and 0 < ours[0] <= len(source) and source[ours[0] - 1].strip():
        return ours[0], source[ours[0] - 1].strip()
    numbered = [(n, ln.strip()) for n, ln in enumerate(source, start=1) if ln.strip()]
    code = [(n, ln) for n, ln in numbered if not ln.startswith("#")]
    return (code or numbered or [(0, f"id {cell.get('id', '?')}")])[0]
