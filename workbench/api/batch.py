"""Many details at once: a bounded thread pool over the session's one ``httpx.Client``.

Threads, not asyncio: the public API is synchronous and must work inside Jupyter's running event
loop, and one synchronous client shared by a few threads measured several times faster here than
``httpx.AsyncClient`` with many tasks (encode/httpx#3215). A failure the workbench reports (a
:class:`~workbench.errors.WorkbenchError`: the partner refused the id, timed out, ...) becomes
the ``error`` column of its id's row (``call_id``: the call that failed) and the batch goes
on; any other exception (a bug, Ctrl-C) stops the batch: ids not yet started are dropped and
the exception is raised.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, as_completed, wait
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from workbench.errors import WorkbenchError

ERROR = "error"
# More ids than this, in an interactive session, and a progress bar appears.
HANDFUL = 5
_pools = itertools.count()  # each pool's threads named apart, to be joined by name

Rows = list[dict[str, Any]]


def ids_of(ids: Iterable[Any] | pd.DataFrame | pd.Series | str) -> list[Any]:
    """The ids to fetch, in order, each once: from a list, a Series, or a frame's ``request_id``."""
    if isinstance(ids, str):
        ids = [ids]
    elif isinstance(ids, pd.DataFrame):
        if "request_id" not in ids.columns:
            raise ValueError("a DataFrame of ids needs a request_id column")
        ids = ids["request_id"]
    unique: list[Any] = []
    seen: set[Any] = set()
    for value in ids:
        try:
            if value in seen:
                continue
            seen.add(value)
        except TypeError:  # unhashable: kept, and refused later with its own error row
            pass
        unique.append(value)
    return unique


def fetch_all(
    ids: list[Any],
    fetch: Callable[[Any], Rows],
    *,
    concurrency: int,
    progress: bool | None = None,
    desc: str = "details",
) -> Rows:
    """``fetch(id)`` for every id on ``concurrency`` threads; rows in the order of ``ids``."""
    if not ids:
        return []
    show = (interactive() if progress is None else progress) and len(ids) > HANDFUL
    prefix = f"wb-{next(_pools)}"
    pool = ThreadPoolExecutor(max_workers=min(concurrency, len(ids)), thread_name_prefix=prefix)
    bar = tqdm(total=len(ids), desc=desc, unit="id", disable=not show, leave=False)
    try:
        futures = [pool.submit(_guarded, fetch, value) for value in ids]
        if show:
            for future in as_completed(futures):
                future.result()  # a failure that is not an error row stops the batch here
                bar.update()
        else:
            # Without a bar, this thread sleeps until the end (or a failure that is not an
            # error row) instead of waking for every id to compete for the GIL with the fetches.
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for future in done:
                future.result()  # raises the failure that ended the wait, if one did
        return [row for future in futures for row in future.result()]
    finally:
        # On Ctrl-C (or any escape) drop what has not started; running fetches end on timeouts.
        pool.shutdown(wait=True, cancel_futures=True)
        # A Ctrl-C inside submit() can land while it starts a thread, which the pool then never
        # joins: joined here, so no fetch records its call after the caller closed the store.
        for thread in threading.enumerate():
            if thread.name.startswith(f"{prefix}_"):
                thread.join()
        bar.close()


def _guarded(fetch: Callable[[Any], Rows], value: Any) -> Rows:
    try:
        return fetch(value)
    except WorkbenchError as exc:
        shown = value if isinstance(value, str) else None
        return [
            {"request_id": shown, ERROR: f"{type(exc).__name__}: {exc}", "call_id": exc.call_id}
        ]


def interactive() -> bool:
    """True in a Jupyter kernel or at a terminal; False under cron, CI or a pipe."""
    shell = sys.modules.get("IPython")
    if shell is not None:
        ip = shell.get_ipython()
        if ip is not None and type(ip).__name__ == "ZMQInteractiveShell":
            return True
    return sys.stderr.isatty()
