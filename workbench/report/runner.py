"""Run a notebook of ``notebooks/`` with papermill; keep the executed copy and a standalone HTML.

>>> run = run_notebook("reconcile", {"db": "data/prod.db", "pull": False})  # doctest: +SKIP
>>> run.html_path
PosixPath('data/reports/reconcile-20260302T090000Z.html')
>>> exceptions_at_or_above(run.summary, "high")  # doctest: +SKIP
3

- Parameters are checked against the notebook's ``parameters`` cell before anything runs;
  strings (``-p key=value`` on the command line) become the type of the declared default.
- The kernel is the Python running this code (``sys.executable``), whatever ``python3``
  kernelspec is installed: the notebook sees the same ``workbench`` as the caller.
- ``timeout_s`` bounds each cell (whole seconds, rounded up); a cell that raises or times out
  raises :class:`~workbench.errors.NotebookFailed`, after both files were written up to there.
  Its message counts cells from 1 at the top, markdown included, and quotes the line that
  raised: ``Notebook reconcile failed in cell 3 of 14, line 9 (rec = ...): ValueError: ...``.
- The HTML hides code and prompts, embeds images, and references nothing on the network (no
  MathJax, require.js or widget scripts from a CDN); its Content-Security-Policy forbids the
  browser to fetch anything or run any script.
- :func:`run_report` is the same for a terminal (``workbench report``, ``workbench demo``): a
  failure is told, with the partial outputs' paths, instead of raised.
"""

from __future__ import annotations

import ast
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

import nbformat

from workbench.config import parse_bool
from workbench.errors import ConfigError, NotebookFailed
from workbench.folders import create_private
from workbench.report.html_page import export_html
from workbench.report.summary import SUMMARY_MIME, find_summary

DEFAULT_OUTPUT_DIR = "data/reports"
NOTEBOOKS_ENV = "WORKBENCH_NOTEBOOKS"

_INJECTED, _ERROR_MARK = "injected-parameters", "papermill-error-cell-tag"


@dataclass(frozen=True)
class NotebookRun:
    """One executed notebook: where its two files are, its published summary, how long it took."""

    ipynb_path: Path
    html_path: Path
    summary: dict[str, Any] | None
    elapsed_s: float


def notebooks_folder(notebooks_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder notebooks are taken from: the argument, else ``WORKBENCH_NOTEBOOKS``, else the
    project's ``notebooks/`` (in an installed wheel, the copy inside the package)."""
    chosen = notebooks_dir or os.environ.get(NOTEBOOKS_ENV)
    if chosen:
        return Path(chosen)
    package = Path(__file__).resolve().parents[1]  # workbench/
    project = package.parent / "notebooks"  # a checkout (editable install)
    return project if project.is_dir() else package / "notebooks"  # a wheel carries a copy


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
    name: str, *, notebooks_dir: str | os.PathLike[str] | None = None
) -> dict[str, dict[str, str]]:
    """The parameters a notebook declares: name -> papermill's ``inferred_type_name``,
    ``default`` (source text) and ``help``."""
    return _declared(notebook_path(name, notebooks_dir=notebooks_dir))


def _declared(path: Path) -> dict[str, dict[str, str]]:
    import papermill

    try:
        return papermill.inspect_notebook(path)
    except ValueError as exc:  # nbformat's NotJSONError, a notebook that does not validate
        raise ConfigError(f"{path} is not a readable notebook ({exc}): restore it.") from None


def coerce_parameters(
    parameters: dict[str, Any], declared: dict[str, dict[str, str]], *, notebook: str = "notebook"
) -> dict[str, Any]:
    """Refuse undeclared names; turn string values into the type of the declared default.

    >>> coerce_parameters({"sla_days": "7"}, {"sla_days": {"default": "5"}})
    {'sla_days': 7}
    """
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise ConfigError(
            f"Unknown parameter(s) for {notebook}: {', '.join(unknown)}; "
            f"it accepts: {', '.join(sorted(declared)) or 'none (no cell tagged parameters)'}."
        )
    out = {}
    for key, value in parameters.items():
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        out[key] = _coerce(key, value, declared[key]) if isinstance(value, str) else value
    return out


def _coerce(key: str, text: str, declared: dict[str, str]) -> Any:
    kind = _declared_type(declared)
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


def _declared_type(declared: dict[str, str]) -> type:
    """bool, int, float or str: from the annotation, else from the default's literal value."""
    named = {"bool": bool, "int": int, "float": float}
    if declared.get("inferred_type_name") in named:
        return named[declared["inferred_type_name"]]
    try:
        default = ast.literal_eval(declared.get("default", ""))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return str
    return type(default) if type(default) in (bool, int, float) else str


def run_notebook(
    name: str,
    parameters: dict[str, Any] | None = None,
    *,
    notebooks_dir: str | os.PathLike[str] | None = None,
    output_dir: str | os.PathLike[str] = DEFAULT_OUTPUT_DIR,
    timeout_s: float = 600,
    kernel_name: str | None = None,
) -> NotebookRun:
    """Execute ``<notebooks>/<name>.ipynb`` and write ``<output_dir>/<name>-<UTC time>.ipynb``
    and ``.html``. ``kernel_name`` picks an installed kernelspec instead of this Python. A
    report of the embedded sandbox's store (its ``db``) says so in its title and first line.

    ``ConfigError`` for an unknown notebook or parameter (nothing runs); ``NotebookFailed``
    when a cell raises or runs longer than ``timeout_s`` (both files are written anyway).
    """
    source = notebook_path(name, notebooks_dir=notebooks_dir)
    declared = _declared(source)
    values = coerce_parameters(parameters or {}, declared, notebook=f"notebook {name!r}")
    started_at, started = datetime.now(UTC), time.perf_counter()
    ipynb_path = _reserve(Path(output_dir), f"{name}-{started_at:%Y%m%dT%H%M%SZ}")
    html_path = ipynb_path.with_suffix(".html")
    banner = _banner(values.get("db"))
    title = f"{banner + ': ' if banner else ''}{name} report, {started_at:%Y-%m-%d %H:%M} UTC"
    seconds = max(1, math.ceil(timeout_s))  # nbclient counts whole seconds
    failure = _execute(source, ipynb_path, values, timeout_s=seconds, kernel_name=kernel_name)
    nb = nbformat.read(ipynb_path, as_version=4)
    if failure is not None:
        cell, index, count, (number, line) = _failed_cell(nb, failure[0])
        if failure[0] is None and cell is not None:  # a timeout: say so where it happened
            error = {"ename": failure[1], "evalue": failure[2], "traceback": [failure[2]]}
            cell.setdefault("outputs", []).append(nbformat.v4.new_output("error", **error))
            nbformat.write(nb, ipynb_path)
        export_html(nb, html_path, title=f"{title} (failed)", base=source.parent, banner=banner)
        where = (
            f"cell {index + 1} of {count}, line {number} ({line})"
            if index is not None
            else "before its first cell"
        )
        raise NotebookFailed(
            f"Notebook {name} failed in {where}: {failure[1]}: {failure[2]}",
            notebook=name,
            cell_index=index,
            cell_line=line,
            ename=failure[1],
            evalue=failure[2],
            ipynb_path=ipynb_path,
            html_path=html_path,
        )
    export_html(nb, html_path, title=title, base=source.parent, banner=banner)
    return NotebookRun(ipynb_path, html_path, find_summary(nb), time.perf_counter() - started)


def _banner(db: Any) -> str | None:
    """What heads a report of the store ``db``: that it holds the embedded sandbox's data
    (made up), or nothing for a partner's (or a store that cannot be read: the notebook says)."""
    from workbench.errors import WorkbenchError
    from workbench.store.identity import SANDBOX_TITLE, is_sandbox_data, stored_partner

    if not db:
        return None
    try:
        return SANDBOX_TITLE if is_sandbox_data(stored_partner(str(db))) else None
    except WorkbenchError:
        return None


def run_report(
    name: str,
    parameters: dict[str, Any] | None = None,
    *,
    warn: Callable[[str], None],
    **options: Any,
) -> NotebookRun | None:
    """:func:`run_notebook` (same ``options``) for a terminal: when the notebook fails, ``warn``
    gets the error naming the cell and the partial outputs' absolute paths, and the result is
    None. ``ConfigError`` (nothing ran) is raised as usual.

    >>> run = run_report("reconcile", {"db": "data/prod.db"}, warn=print)  # doctest: +SKIP
    Notebook reconcile failed in cell 3 of 14, line 9 (rec = ...): ValueError: ...
    Partial output: /srv/workbench/data/reports/reconcile-20260302T090000Z.ipynb
    Partial output: /srv/workbench/data/reports/reconcile-20260302T090000Z.html
    """
    try:
        return run_notebook(name, parameters, **options)
    except NotebookFailed as exc:
        warn(str(exc))
        for partial in (exc.ipynb_path, exc.html_path):
            if partial is not None and partial.exists():
                warn(f"Partial output: {partial.resolve()}")
        return None


def publishes_summary(name: str, *, notebooks_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether the notebook's code publishes a summary (calls ``publish_summary(`` or displays
    :data:`~workbench.report.summary.SUMMARY_MIME`): what ``--fail-on-exceptions`` reads."""
    nb = nbformat.read(notebook_path(name, notebooks_dir=notebooks_dir), as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return "publish_summary(" in code or SUMMARY_MIME in code


def _execute(
    source: Path,
    ipynb_path: Path,
    values: dict[str, Any],
    *,
    timeout_s: int,
    kernel_name: str | None,
) -> tuple[int | None, str, str] | None:
    """Run papermill; ``None`` when it went through, else (papermill's cell index or None when
    unknown, error name, error message)."""
    import papermill
    from nbclient.exceptions import CellTimeoutError

    nb_kernel = nbformat.read(source, as_version=4).metadata.get("kernelspec", {}).get("name")
    with tempfile.TemporaryDirectory(prefix="workbench-kernel-") as private:
        engine = {} if kernel_name else {"kernel_manager_class": _this_python(Path(private))}
        try:
            papermill.execute_notebook(
                source,
                ipynb_path,
                parameters=values,
                kernel_name=kernel_name or nb_kernel or "python3",
                progress_bar=False,
                log_output=False,
                start_timeout=60,
                execution_timeout=timeout_s,
                **engine,
            )
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
    """A kernel manager that starts ipykernel with ``sys.executable``, ignoring kernelspecs.

    The kernel talks over Unix sockets in ``private`` (student data never crosses TCP, even on
    loopback) and its own log goes to ``private/kernel.log``, not to our stderr.
    """
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
    """A new ``<stem>[-n].ipynb`` in ``folder`` and its ``.html``, both created empty and
    private (0600: a report names students; papermill and the HTML export keep the mode)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            path = folder / (f"{stem}.ipynb" if n == 1 else f"{stem}-{n}.ipynb")
            if path.with_suffix(".html").exists():
                continue
            try:
                create_private(path)
            except FileExistsError:
                continue
            try:
                create_private(path.with_suffix(".html"))
            except FileExistsError:  # made meanwhile by another run: leave both to it
                path.unlink()
                continue
            return path
    except OSError as exc:  # a file where the folder should be, no permission, a full disk
        raise ConfigError(
            f"Cannot write reports in {folder} ({exc.strerror or exc}): pick another output "
            "folder (--output-dir, output_dir=)."
        ) from None
    raise ConfigError(f"{folder} holds 1000 reports named {stem}: clean it up.")


def _failed_cell(nb: Any, index: int | None) -> tuple[Any, int | None, int, tuple[int, str]]:
    """(the cell, its 0-based index in the source notebook, how many cells that has, and the
    failing line: its 1-based number in the cell and its text).

    ``index`` counts cells of the parameterized notebook (papermill's); without it, the last
    cell that started (a timeout). Papermill's error banners and injected cell are skipped.
    """
    cells = [c for c in nb.cells if _ERROR_MARK not in c.metadata.get("tags", [])]
    injected = [i for i, c in enumerate(cells) if _INJECTED in c.metadata.get("tags", [])]
    count = len(cells) - len(injected)
    if index is None:
        started = [
            i for i, c in enumerate(cells) if c.metadata.get("papermill", {}).get("start_time")
        ]
        index = started[-1] if started else -1
    if not 0 <= index < len(cells):
        return None, None, count, (0, "")
    cell = cells[index]
    number, line = _failing_line(cell)
    line = line if len(line) <= 80 else line[:77] + "..."
    return cell, index - sum(1 for i in injected if i < index), count, (number, line)


# IPython's traceback: colour codes, then per frame "Cell In[3], line 2" and "----> 2 code".
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_FRAME = re.compile(r"^\s*Cell In\[(\d*)\], line (\d+)", re.M)
_ARROW = re.compile(r"^-+>\s*(\d+)\s?(.*)$", re.M)


def _failing_line(cell: Any) -> tuple[int, str]:
    """The line of ``cell`` that raised (from its error output's traceback: the frame of this
    cell's own code, even when the error came from deeper), else its first line of code."""
    source = cell.get("source", "").splitlines()
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    text = _ANSI.sub("", "\n".join(errors[0].get("traceback", []))) if errors else ""
    frames = [(int(n or -1), int(line)) for n, line in _CELL_FRAME.findall(text)]
    ours = [line for n, line in frames if n == cell.get("execution_count")] or [
        line for _, line in frames[:1]
    ]
    if ours and 0 < ours[0] <= len(source) and source[ours[0] - 1].strip():
        return ours[0], source[ours[0] - 1].strip()
    arrow = _ARROW.search(text)
    if arrow and arrow[2].strip():
        return int(arrow[1]), arrow[2].strip()
    numbered = [(n, ln.strip()) for n, ln in enumerate(source, start=1) if ln.strip()]
    code = [(n, ln) for n, ln in numbered if not ln.startswith("#")]
    return (code or numbered or [(0, f"id {cell.get('id', '?')}")])[0]


def exceptions_at_or_above(summary: dict[str, Any], severity: str) -> int:
    """How many exceptions a summary counts at ``severity`` or worse (``SEVERITIES`` order);
    ``ValueError`` when its counts are not whole numbers of 0 or more.

    >>> exceptions_at_or_above({"exceptions_by_severity": {"high": 2, "low": 5}}, "medium")
    2
    """
    from workbench.severities import SEVERITIES

    if severity not in SEVERITIES:
        raise ConfigError(f"Unknown severity {severity!r}: use one of {', '.join(SEVERITIES)}.")
    counts = summary.get("exceptions_by_severity") or {}
    worse = SEVERITIES[SEVERITIES.index(severity) :]
    found = [counts.get(s) or 0 for s in worse] if isinstance(counts, dict) else None
    if found is None or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in found
    ):
        raise ValueError(
            f"its exceptions_by_severity is {counts!r}, not counts per severity (publish it "
            "with report.publish_summary)"
        )
    return int(sum(found))
