"""Fetch 1,000 transcript-request details: a sequential httpx loop vs ``w.supplier.requests``.

The sandbox answers with 30 ms latency and runs in its own process, as a partner would. Each
phase runs in a fresh client process (so its peak memory is its own) against a fresh sandbox
with the same seed (so both start equally cold):

  (a) a plain loop: one httpx.Client, one token, GET each detail, decode the JSON;
  (b) ``w.supplier.requests(ids)`` at the default concurrency: the same GETs on a thread pool,
      plus what the workbench adds (PESC parsing, one DataFrame, per-id errors).

For reference, two more ways to make the same GETs, 8 at a time, with nothing else done:
  (c) a plain thread pool over one ``httpx.Client``: the ceiling for (b)'s design;
  (d) ``httpx.AsyncClient`` with 8 tasks at a time: the design we did not choose.

Prints each phase's time and peak RSS, and the speed-up of (b) over (a). Goal: >= 6x.

    .venv/bin/python bench/pull_details.py [--requests 1000] [--latency-ms 30]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

SEED = 11


def serve_sandbox(settings: dict[str, Any], conn: Any) -> None:
    from workbench.sandbox import serve

    with serve(**settings) as sb:
        conn.send(sb.env)
        conn.recv()  # until the parent says stop


def _token(client: Any, env: dict[str, str]) -> str:
    answer = client.post(
        env["WORKBENCH_AUTH_URL"] + "/auth/connect/token",
        data={
            "grant_type": "client_credentials",
            "client_id": env["WORKBENCH_SUPPLIER_CLIENT_ID"],
            "client_secret": env["WORKBENCH_SUPPLIER_CLIENT_SECRET"],
            "scope": env["WORKBENCH_SUPPLIER_SCOPE"],
        },
    )
    return answer.json()["access_token"]


def phase_sequential(env: dict[str, str]) -> dict[str, Any]:
    import httpx

    base_rss = _rss_mb()
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        token = _token(client, env)
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        base = env["WORKBENCH_EXCHANGE_URL"]
        pending = client.get(base + "/api/transcriptrequests/no_response", headers=headers)
        details = []
        for item in pending.json():
            answer = client.get(
                base + f"/api/transcriptrequests/{item['RequestID']}", headers=headers
            )
            answer.raise_for_status()
            details.extend(answer.json())
    return {
        "seconds": time.perf_counter() - started,
        "rows": len(details),
        "errors": 0,
        "base_rss_mb": base_rss,
        "peak_rss_mb": _rss_mb(),
    }


def phase_threads(env: dict[str, str]) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    base_rss = _rss_mb()
    started = time.perf_counter()
    with httpx.Client(timeout=30, limits=httpx.Limits(max_connections=16)) as client:
        client.headers["Authorization"] = f"Bearer {_token(client, env)}"
        base = env["WORKBENCH_EXCHANGE_URL"]
        ids = [
            i["RequestID"] for i in client.get(base + "/api/transcriptrequests/no_response").json()
        ]
        with ThreadPoolExecutor(8) as pool:
            details = list(
                pool.map(lambda i: client.get(f"{base}/api/transcriptrequests/{i}").json(), ids)
            )
    return _plain(started, details, base_rss)


def phase_async(env: dict[str, str]) -> dict[str, Any]:
    import asyncio

    import httpx

    async def run() -> list[Any]:
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(
                env["WORKBENCH_AUTH_URL"] + "/auth/connect/token",
                data={
                    "grant_type": "client_credentials",
                    "client_id": env["WORKBENCH_SUPPLIER_CLIENT_ID"],
                    "client_secret": env["WORKBENCH_SUPPLIER_CLIENT_SECRET"],
                    "scope": env["WORKBENCH_SUPPLIER_SCOPE"],
                },
            )
            client.headers["Authorization"] = f"Bearer {answer.json()['access_token']}"
            base = env["WORKBENCH_EXCHANGE_URL"]
            listing = await client.get(base + "/api/transcriptrequests/no_response")
            gate = asyncio.Semaphore(8)

            async def one(request_id: str) -> Any:
                async with gate:
                    return (await client.get(f"{base}/api/transcriptrequests/{request_id}")).json()

            return await asyncio.gather(*(one(i["RequestID"]) for i in listing.json()))

    base_rss = _rss_mb()
    started = time.perf_counter()
    return _plain(started, asyncio.run(run()), base_rss)


def _plain(started: float, details: list[Any], base_rss: float) -> dict[str, Any]:
    return {
        "seconds": time.perf_counter() - started,
        "rows": len(details),
        "base_rss_mb": base_rss,
        "peak_rss_mb": _rss_mb(),
    }


def phase_workbench(env: dict[str, str]) -> dict[str, Any]:
    import workbench as wb

    base_rss = _rss_mb()
    # Its own fresh store, as a first connect makes one: never the data/ of the folder it runs in.
    folder = tempfile.mkdtemp(prefix="bench-pull-details-")
    started = time.perf_counter()
    with wb.connect(env={**env, "WORKBENCH_DB": f"{folder}/workbench.db"}) as w:
        details = w.supplier.requests(w.supplier.pending_requests(), progress=False)
        concurrency = w.profile.concurrency
    return {
        "seconds": time.perf_counter() - started,
        "rows": len(details),
        "errors": int(details["error"].notna().sum()),
        "parse_errors": int(details["parse_error"].notna().sum()),
        "columns": details.shape[1],
        "frame_mb": details.memory_usage(deep=True).sum() / 2**20,
        "concurrency": concurrency,
        "base_rss_mb": base_rss,
        "peak_rss_mb": _rss_mb(),
    }


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kB


def run_phase(ctx: Any, phase: Any, settings: dict[str, Any]) -> dict[str, Any]:
    parent, child = ctx.Pipe()
    server = ctx.Process(target=serve_sandbox, args=(settings, child), daemon=True)
    server.start()
    try:
        if not parent.poll(60):
            raise RuntimeError("the sandbox did not start")
        env = parent.recv()
        with ProcessPoolExecutor(1, mp_context=ctx) as pool:
            return pool.submit(phase, env).result()
    finally:
        parent.send("stop")
        server.join(timeout=15)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=30.0)
    args = parser.parse_args()
    settings = {
        "seed": SEED,
        "initial_requests": args.requests,
        "latency_ms": args.latency_ms,
        "requests_per_hour": 0.0,
        "closed_elsewhere_per_hour": 0.0,
    }
    ctx = mp.get_context("spawn")
    print(f"{args.requests} details, sandbox latency {args.latency_ms:.0f} ms, own process")
    seq = run_phase(ctx, phase_sequential, settings)
    print(
        f"(a) sequential httpx loop      {seq['seconds']:7.2f} s  {seq['rows']} rows  "
        f"peak RSS {seq['peak_rss_mb']:.0f} MB (after imports {seq['base_rss_mb']:.0f} MB)"
    )
    par = run_phase(ctx, phase_workbench, settings)
    print(
        f"(b) w.supplier.requests (c={par['concurrency']}) {par['seconds']:7.2f} s  "
        f"{par['rows']} rows x {par['columns']} columns, {par['errors']} errors, "
        f"{par['parse_errors']} parse errors  peak RSS {par['peak_rss_mb']:.0f} MB "
        f"(after imports {par['base_rss_mb']:.0f} MB; the DataFrame {par['frame_mb']:.1f} MB)"
    )
    for label, phase in (
        ("(c) plain thread pool (8)", phase_threads),
        ("(d) httpx.AsyncClient (8) ", phase_async),
    ):
        ref = run_phase(ctx, phase, settings)
        print(
            f"{label}     {ref['seconds']:7.2f} s  {ref['rows']} rows  "
            f"peak RSS {ref['peak_rss_mb']:.0f} MB   (GETs only, for reference)"
        )
    ratio = seq["seconds"] / par["seconds"]
    print(f"speed-up (a)/(b): {ratio:.1f}x  (goal >= 6x)")
    ok = par["rows"] == seq["rows"] == args.requests and par["errors"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
