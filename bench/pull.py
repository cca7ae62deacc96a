"""`w.pull()` end to end: a first pull against its bound, an incremental one, the store's share,
and the peak memory of a big pull.

The sandbox runs in its own process, as a partner would, with its listed documents generated
(and cached) before the clock starts and its latency counted from each request's arrival, so that
an answer takes the latency and not latency plus the sandbox's own work; the client runs in
fresh processes of its own (the first and second pulls in one, the big pull in another, so its
peak memory is its own). Prints, as ratios:

  1. first pull time / (calls x latency / concurrency), calls counted in the store's ``calls``
     table for that run, concurrency the client's setting (goal <= 1.15), with every document
     parsed and stored; then the baseline, run in the same process against the same sandbox: a
     bare thread pool over one httpx client per interface GETting the same details (the issue
     measured 1.11 for it), and how many times slower than it the pull is; then a second
     baseline in a fresh process of its own, against the same sandbox: dlt's ``rest_api``
     source reading the same two lists and, per listed id, the same detail GET (a child
     resource, parallelized over the pull's concurrency in extract workers) into dlt's local
     DuckDB store, with the tokens the pull fetched; its time (extract, normalize, load),
     the pull's over it, and the peak RSS of each process (dlt's also at the end of its
     extract, the pull's just after its first pull). Needs the bench extra (``uv sync
     --extra bench``); without dlt it is skipped, with a line saying so;
  2. a second pull with no change / the first (goal <= 0.03), and its HTTP calls (goal <= 5;
     in the same process the tokens are cached, so none are fetched; a fresh process adds one
     token call per role, shown too);
  3. the store's share of the first pull: the CPU time its threads spent inside ``Store``
     methods (the instance's methods are wrapped with timers here) over the pull's wall time
     (goal < 10 %); the pull is bound by one core (the GIL), so that CPU is what a faster
     store would give back. Also shown: the wall time with any thread inside the store, which
     counts the waits for the store's lock and for the GIL too;
  4. peak RSS of a pull of 10,000 + 10,000 items (lower latency, so it ends in minutes), in
     its own process (goal < 400 MB).

    .venv/bin/python bench/pull.py [--requests 2000] [--transcripts 2000] [--latency-ms 20]
        [--concurrency N] [--rss-items 10000] [--rss-latency-ms 2] [--no-rss] [--profile]
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import multiprocessing as mp
import resource
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

SEED = 11
# Store methods not timed: context managers that enclose the whole pull, and close().
UNTIMED = {"run_lock", "batch", "close"}


def serve_sandbox(settings: dict[str, Any], conn: Any, warm: bool) -> None:
    from workbench.sandbox import serve

    with serve(**settings) as sb:
        for kind, items in (("request", sb.state.requests), ("transcript", sb.state.transcripts)):
            for item in sb.state.listed(items) if warm else ():
                sb.state.document(kind, item)  # ready, as a partner's are: answers take the latency
        conn.send(sb.env)
        conn.recv()  # until the parent says stop


@contextmanager
def sandbox(ctx: Any, settings: dict[str, Any], *, warm: bool = True) -> Iterator[dict[str, str]]:
    """A sandbox in its own process; yields its WORKBENCH_* env."""
    parent, child = ctx.Pipe()
    server = ctx.Process(target=serve_sandbox, args=(settings, child, warm), daemon=True)
    server.start()
    try:
        if not parent.poll(600):  # a loaded machine starts it slowly
            raise RuntimeError("the sandbox did not start")
        yield parent.recv()
    finally:
        parent.send("stop")
        server.join(timeout=30)


class StoreClock:
    """Time spent inside a store's public methods, from every thread of the pull.

    Wraps the methods of one instance (the workbench calls them through the instance); a
    method called from inside another is counted once, in the outer one.
    """

    def __init__(self, store: Any) -> None:
        self.seconds: Counter[str] = Counter()  # wall, summed over threads
        self.cpu: Counter[str] = Counter()  # CPU of the calling threads
        self.calls: Counter[str] = Counter()
        self.intervals: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self._inside = threading.local()
        # Private methods too (the pull's grouped detail writes go through them); nested calls
        # are counted once, by the outermost timed method.
        for name, _ in inspect.getmembers(type(store), callable):  # History's too
            if not name.startswith("__") and name not in UNTIMED:
                setattr(store, name, self._timed(name, getattr(store, name)))

    def _timed(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if getattr(self._inside, "yes", False):
                return method(*args, **kwargs)
            self._inside.yes = True
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                ended, cpu = time.perf_counter(), time.thread_time() - cpu
                self._inside.yes = False
                with self._lock:
                    self.seconds[name] += ended - started
                    self.cpu[name] += cpu
                    self.calls[name] += 1
                    self.intervals.append((started, ended))

        return timed

    def busy(self) -> float:
        """Wall seconds during which at least one thread was inside the store."""
        total, end = 0.0, float("-inf")
        for start, stop in sorted(self.intervals):
            if stop > end:
                total += stop - max(start, end)
                end = stop
        return total


def operations(store: Any, run_id: int) -> Counter[str]:
    rows = store.db.execute("SELECT operation FROM calls WHERE run_id = ?", [run_id]).fetchall()
    return Counter(row[0] for row in rows)


def stored_documents(store: Any) -> tuple[int, int]:
    """(items listed now, of which with a parsed document stored)."""
    listed = stored = 0
    for table, column in (
        ("transcript_requests", "request_id"),
        ("transcripts_received", "transcript_id"),
    ):
        row = store.db.execute(
            f"SELECT count(*), sum(e.detail_fetched_at IS NOT NULL AND e.parse_error IS NULL "  # noqa: S608
            f"AND d.pesc_json IS NOT NULL AND d.pescxml IS NOT NULL) FROM {table} e "
            f"LEFT JOIN documents d ON d.entity = '{table}' AND d.item_id = e.{column} "
            "AND d.version = e.current_version WHERE e.on_list = 1"
        ).fetchone()
        listed, stored = listed + row[0], stored + (row[1] or 0)
    return listed, stored


def bare_pool(w: Any, store: Any, concurrency: int) -> dict:
    """The baseline: the same detail GETs from a bare thread pool over one httpx client per
    interface (what the issue calls "a bare thread pool over one httpx client"), in this
    process, against the same sandbox: no retries, recording, parsing or store.

    Tokens come from the workbench's cache (no token calls); every answer is read and decoded.
    """
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from workbench import spec
    from workbench.http.answers import request_path

    jobs = []
    clients = {}
    for role, table, column, path in (
        ("supplier", "transcript_requests", "request_id", spec.SUPPLIER_REQUEST_PATH),
        ("consumer", "transcripts_received", "transcript_id", spec.CONSUMER_TRANSCRIPT_PATH),
    ):
        ours = w.session.client(role)
        headers = {**ours.headers, "Authorization": f"Bearer {w.session.auth(role).token().value}"}
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        clients[role] = httpx.Client(base_url=ours.base_url, headers=headers, limits=limits)
        ids = store.db.execute(f"SELECT {column} FROM {table} WHERE on_list = 1").fetchall()  # noqa: S608
        jobs += [(role, request_path(path, row[0])) for row in ids]

    def get(job: tuple[str, str]) -> int:
        role, path = job
        response = clients[role].get(path)
        response.json()
        return response.status_code

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        statuses = Counter(pool.map(get, jobs))
    seconds = time.perf_counter() - started
    for client in clients.values():
        client.close()
    return {"calls": len(jobs), "seconds": seconds, "statuses": dict(statuses)}


def exchange_access(w: Any) -> dict[str, Any]:
    """The exchange's base URL and each role's bearer token, from the workbench's cache (no
    token call), for the dlt baseline's own process."""
    roles = [role for role in ("supplier", "consumer") if role in w.profile.interfaces]
    return {
        "base_url": str(w.session.client(roles[0]).base_url) if roles else "",
        "tokens": {role: w.session.auth(role).token().value for role in roles},
    }


def phase_dlt(exchange: dict[str, Any], folder: str, workers: int) -> dict:
    """The second baseline, in this (fresh) process: dlt's ``rest_api`` source GETting the
    two exchange lists and every listed item's detail, ``workers`` extract threads, into a
    DuckDB file; no retries beyond dlt's defaults, no XML parsing (PESCXML stays a string)."""
    import os

    # dlt reads its settings from the environment; telemetry off: no call leaves the bench
    os.environ["EXTRACT__WORKERS"] = str(workers)
    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    import dlt
    from dlt.sources.rest_api import rest_api_source

    from workbench import spec

    resources: list[dict[str, Any]] = []
    tables: dict[str, str] = {}  # detail table: list table
    for role, listed, detail, list_path, detail_path in (
        (
            "supplier",
            "transcript_requests",
            "transcript_request_details",
            spec.SUPPLIER_PENDING_PATH,
            spec.SUPPLIER_REQUEST_PATH,
        ),
        (
            "consumer",
            "transcripts_received",
            "transcript_details",
            spec.CONSUMER_PENDING_PATH,
            spec.CONSUMER_TRANSCRIPT_PATH,
        ),
    ):
        if role not in exchange["tokens"]:
            continue
        auth = {"type": "bearer", "token": exchange["tokens"][role]}
        resources.append({"name": listed, "endpoint": {"path": list_path, "auth": auth}})
        resources.append(
            {
                "name": detail,
                "parallelized": True,  # each item's GET is a task for the extract workers
                "endpoint": {
                    "path": detail_path,
                    "auth": auth,
                    "params": {"id": {"type": "resolve", "resource": listed, "field": "RequestID"}},
                },
            }
        )
        tables[detail] = listed
    source = rest_api_source(
        {
            "client": {
                "base_url": exchange["base_url"],
                "headers": {"Accept": "application/json"},
                "paginator": "single_page",  # each answer is the whole array
            },
            "resources": resources,
        }
    )
    pipeline = dlt.pipeline(
        pipeline_name="bench_pull",
        pipelines_dir=str(Path(folder) / "pipelines"),
        destination=dlt.destinations.duckdb(str(Path(folder) / "dlt.duckdb")),
        dataset_name="partner",
    )
    # pipeline.run(source) step by step, to tell where the time and the memory go
    base = _peak_rss_mb()
    steps: dict[str, float] = {}
    peaks: dict[str, float] = {}
    for step, call in (
        ("extract", lambda: pipeline.extract(source)),
        ("normalize", pipeline.normalize),
        ("load", pipeline.load),
    ):
        started = time.perf_counter()
        info = call()
        steps[step], peaks[step] = time.perf_counter() - started, _peak_rss_mb()
    info.raise_on_failed_jobs()
    with pipeline.sql_client() as sql:
        counts = {
            table: sql.execute_sql(f"SELECT count(*) FROM {table}")[0][0]  # noqa: S608
            for table in [*tables, *tables.values()]
        }
    return {
        "version": dlt.__version__,
        "seconds": sum(steps.values()),
        "steps": steps,
        "lists": len(tables),
        "listed": sum(counts[table] for table in tables.values()),
        "details": sum(counts[table] for table in tables),
        "base_mb": base,
        "extract_peak_mb": peaks["extract"],
        "peak_mb": peaks["load"],
    }


def phase_pulls(env: dict[str, str], db: str, concurrency: int | None, profile: bool) -> dict:
    """First pull (store timed), then a second with no change, in this one process."""
    import workbench as wb

    settings = {"concurrency": concurrency} if concurrency else {}
    with wb.connect(env=env, db=db, **settings) as w:
        store = w.store  # opened (schema created) before the clock starts
        clock = StoreClock(store)
        started, cpu = time.perf_counter(), time.process_time()
        storing_cpu = _children_cpu_s()
        with profiled(db + ".prof") if profile else nullcontext():
            first = w.pull(progress=False)
        first_s, first_cpu = time.perf_counter() - started, time.process_time() - cpu
        storing_cpu = _children_cpu_s() - storing_cpu
        first_peak_mb, storing_peak_mb = _peak_rss_mb(), _peak_rss_mb(resource.RUSAGE_CHILDREN)
        listed, stored = stored_documents(store)
        started = time.perf_counter()
        second = w.pull(progress=False)
        second_s = time.perf_counter() - started
        bare = bare_pool(w, store, w.profile.concurrency)
        return {
            "bare": bare,
            "concurrency": w.profile.concurrency,
            "first_status": first.status,
            "first_s": first_s,
            "first_cpu_s": first_cpu,
            "first_ops": operations(store, first.run_id),
            "first_peak_mb": first_peak_mb,
            "storing_cpu_s": storing_cpu,
            "storing_peak_mb": storing_peak_mb,
            "exchange": exchange_access(w),
            "listed": listed,
            "stored": stored,
            "store_busy_s": clock.busy(),
            "store_wall_s": sum(clock.seconds.values()),
            "store_cpu_s": sum(clock.cpu.values()),
            "store_cpu_by_method": clock.cpu.most_common(5),
            "second_status": second.status,
            "second_s": second_s,
            "second_ops": operations(store, second.run_id),
        }


def phase_fresh_pull(env: dict[str, str], db: str) -> dict:
    """A pull with no change from a fresh process: its calls, token requests included."""
    import workbench as wb

    with wb.connect(env=env, db=db) as w:
        summary = w.pull(progress=False)
        return {"status": summary.status, "ops": operations(w.store, summary.run_id)}


def phase_rss(env: dict[str, str], db: str) -> dict:
    """A first pull in this (fresh) process: its peak RSS, and its storing process's."""
    import workbench as wb

    base = _peak_rss_mb()
    started = time.perf_counter()
    with wb.connect(env=env, db=db) as w:
        summary = w.pull(progress=False)
        listed, stored = stored_documents(w.store)
    return {
        "status": summary.status,
        "seconds": time.perf_counter() - started,
        "listed": listed,
        "stored": stored,
        "base_mb": base,
        "peak_mb": _peak_rss_mb(),
        "storing_mb": _peak_rss_mb(resource.RUSAGE_CHILDREN),
        "db_mb": Path(db).stat().st_size / 2**20,
    }


def _peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    """Peak RSS of this process, or (RUSAGE_CHILDREN) of the largest child it waited for."""
    return resource.getrusage(who).ru_maxrss / 1024  # Linux: kB


def _children_cpu_s() -> float:
    """CPU of the children waited for so far: the pull's storing process."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def in_child(ctx: Any, phase: Callable[..., dict], *args: Any) -> dict:
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        return pool.submit(phase, *args).result()


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


@contextmanager
def profiled(path: str) -> Iterator[None]:
    """cProfile the block in every thread it starts (the pull's fetch threads included)."""
    import cProfile
    import pstats

    profiles = [cProfile.Profile()]

    def per_thread(*_: Any) -> None:  # the first event of each new thread
        sys.setprofile(None)
        profiles.append(cProfile.Profile())
        profiles[-1].enable()

    threading.setprofile(per_thread)
    profiles[0].enable()
    try:
        yield
    finally:
        profiles[0].disable()
        threading.setprofile(None)
        pstats.Stats(*profiles).dump_stats(path)


def print_profile(path: str) -> None:
    import pstats

    print(f"\ncProfile of the first pull, every thread (cProfile slows it ~2x): {path}")
    pstats.Stats(path).sort_stats("tottime").print_stats(25)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--transcripts", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=None, help="default: the client's")
    parser.add_argument("--rss-items", type=int, default=10_000, help="of each kind")
    parser.add_argument("--rss-latency-ms", type=float, default=2.0)
    parser.add_argument("--no-rss", action="store_true", help="skip the big pull")
    parser.add_argument("--profile", action="store_true", help="cProfile the first pull")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    quiet = {"requests_per_hour": 0.0, "closed_elsewhere_per_hour": 0.0}  # clock never moves
    settings = {
        "seed": SEED,
        "initial_requests": args.requests,
        "initial_transcripts": args.transcripts,
        "latency_ms": args.latency_ms,
        **quiet,
    }
    ok = True
    print(
        f"sandbox: {args.requests} requests + {args.transcripts} transcripts, "
        f"{args.latency_ms:g} ms latency, own process; pulls 1 and 2 in one fresh client process"
    )
    with tempfile.TemporaryDirectory() as folder, sandbox(ctx, settings) as env:
        db = str(Path(folder) / "bench.db")
        r = in_child(ctx, phase_pulls, env, db, args.concurrency, args.profile)
        fresh = in_child(ctx, phase_fresh_pull, env, db)
        has_dlt = importlib.util.find_spec("dlt") is not None
        if has_dlt:
            d = in_child(ctx, phase_dlt, r["exchange"], folder, r["concurrency"])
        if args.profile:
            print_profile(db + ".prof")

    calls = sum(r["first_ops"].values())
    details = sum(n for op, n in r["first_ops"].items() if op.endswith(".pull_detail"))
    bound = calls * args.latency_ms / 1000 / r["concurrency"]
    ratio = r["first_s"] / bound
    complete = r["first_status"] == "ok" and r["stored"] == r["listed"] == details
    ok = ok and complete
    print(
        f"1. first pull  {r['first_s']:7.2f} s; bound {calls} calls x {args.latency_ms:g} ms / "
        f"{r['concurrency']} = {bound:.2f} s -> ratio {ratio:.2f} (goal <= 1.15: "
        f"{verdict(ratio <= 1.15)})"
    )
    bare = r["bare"]
    bare_bound = bare["calls"] * args.latency_ms / 1000 / r["concurrency"]
    bare_ratio = bare["seconds"] / bare_bound
    ok = ok and bare["statuses"] == {200: bare["calls"]}
    print(
        f"   baseline, same process and sandbox: a bare thread pool over one httpx client GETs "
        f"the {bare['calls']} details in {bare['seconds']:.2f} s -> ratio {bare_ratio:.2f} "
        f"(the issue measured 1.11 for it); the pull takes {ratio / bare_ratio:.2f}x the bare pool"
    )
    if has_dlt:
        steps = ", ".join(f"{step} {seconds:.2f} s" for step, seconds in d["steps"].items())
        ok = ok and d["listed"] == d["details"] == r["listed"]
        print(
            f"   baseline 2, own process, same sandbox: dlt {d['version']}'s rest_api source, "
            f"{r['concurrency']} extract workers, into DuckDB: {d['lists']} lists + "
            f"{d['details']} details in {d['seconds']:.2f} s ({steps}); "
            f"the pull takes {r['first_s'] / d['seconds']:.2f}x dlt"
        )
        print(
            f"   peak RSS: dlt's process {d['peak_mb']:.0f} MB ({d['extract_peak_mb']:.0f} MB "
            f"by the end of its extract, {d['base_mb']:.0f} MB after imports), the pull's "
            f"{r['first_peak_mb']:.0f} MB just after its first pull, and its storing "
            f"process's {r['storing_peak_mb']:.0f} MB"
        )
    else:
        print(
            "   baseline 2 (dlt's rest_api source) skipped: dlt is not installed "
            "(uv sync --inexact --extra bench, or pip install 'workbench[bench]')"
        )
    print(
        f"   {r['first_status']}: {r['stored']} of {r['listed']} listed items with a parsed "
        f"document stored; calls by operation: {dict(sorted(r['first_ops'].items()))}"
    )
    second_calls = sum(r["second_ops"].values())
    tokens = r["second_ops"].get("token", 0)
    fresh_calls = sum(fresh["ops"].values())
    second_ratio = r["second_s"] / r["first_s"]
    ok = ok and r["second_status"] == fresh["status"] == "ok"
    ok = ok and not [op for op in (*r["second_ops"], *fresh["ops"]) if op.endswith("_detail")]
    print(
        f"2. second pull {r['second_s']:7.2f} s -> {second_ratio:.3f} of the first (goal <= 0.03: "
        f"{verdict(second_ratio <= 0.03)}); {second_calls} HTTP calls, {tokens} of them token "
        f"calls (tokens cached in the same process) (goal <= 5: {verdict(second_calls <= 5)})"
    )
    print(
        f"   from a fresh process: {fresh_calls} calls, {fresh['ops'].get('token', 0)} of them "
        f"token calls: {dict(sorted(fresh['ops'].items()))}"
    )
    share = r["store_cpu_s"] / r["first_s"]
    methods = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in r["store_cpu_by_method"])
    print(
        f"3. store       {r['store_cpu_s']:7.2f} s of CPU inside Store methods (all threads) "
        f"over the first pull's {r['first_s']:.2f} s -> {share:.1%} (goal < 10 %: "
        f"{verdict(share < 0.10)})"
    )
    print(f"   by method: {methods}")
    print(
        f"   wall time with a thread inside the store {r['store_busy_s']:.2f} s "
        f"({r['store_busy_s'] / r['first_s']:.0%}); threads' wall time inside it, summed, "
        f"{r['store_wall_s']:.2f} s (waits for the store's lock and the GIL included); "
        f"the client process used {r['first_cpu_s']:.2f} s of CPU "
        f"({r['first_cpu_s'] / r['first_s']:.2f} cores), its storing process "
        f"{r['storing_cpu_s']:.2f} s (parsing and storing the details, on a core of its own)"
    )

    if not args.no_rss:
        big = {
            **settings,
            "initial_requests": args.rss_items,
            "initial_transcripts": args.rss_items,
            "latency_ms": args.rss_latency_ms,
        }
        with tempfile.TemporaryDirectory() as folder, sandbox(ctx, big, warm=False) as env:
            m = in_child(ctx, phase_rss, env, str(Path(folder) / "rss.db"))
        ok = ok and m["status"] == "ok" and m["stored"] == m["listed"] == 2 * args.rss_items
        both = m["peak_mb"] + m["storing_mb"]  # at most: their peaks need not coincide
        print(
            f"4. peak RSS    {both:7.0f} MB for a pull of {args.rss_items} + "
            f"{args.rss_items} items ({args.rss_latency_ms:g} ms latency, {m['seconds']:.0f} s, "
            f"{m['stored']} documents stored, database {m['db_mb']:.0f} MB): its process "
            f"{m['peak_mb']:.0f} MB ({m['base_mb']:.0f} MB after imports) and its storing "
            f"process {m['storing_mb']:.0f} MB (goal < 400 MB: {verdict(both < 400)})"
        )
    if not ok:
        print(
            "INCOMPLETE: a pull was not ok, or not every document was stored (by the pull or dlt)",
            file=sys.stderr,
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
