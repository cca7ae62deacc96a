"""Sandbox throughput against a minimal uvicorn app returning fixed JSON, in the same run.

Each server runs in its own process (so the load generator does not share its GIL); the same
threaded keep-alive httpx load hits both. The load is what our client is (Python, httpx), so a
ratio near 1 means the sandbox is not what bounds a client benchmark; a faster C load generator
would measure server capacity instead, which is not the question. Prints requests/s and the
ratio sandbox/minimal for a list call and a detail call. Goal: ratio >= 0.5, so the sandbox
never bounds client benchmarks.

    .venv/bin/python bench/sandbox_throughput.py [--requests 3000] [--threads 8]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

MINIMAL = """
import socket, sys, uvicorn
BODY = b'[{"RequestID":"7c1d0b5255d44e7b9c0e8e4b1f0a9d11","RequestDate":"2026-03-02T09:00:00Z"}]'
async def app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(BODY)).encode())]})
    await send({"type": "http.response.body", "body": BODY})
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                              lifespan="off")).run(sockets=[sock])
"""

SANDBOX = """
import sys, threading
from workbench.sandbox import serve
with serve(seed=1) as sb:
    print(sb.port, flush=True)
    threading.Event().wait()
"""


def start(code: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def rate(url: str, headers: dict[str, str], requests: int, threads: int) -> float:
    """Requests per second of GET url, over keep-alive clients, one per thread."""
    per_thread = requests // threads

    def work(_: int) -> None:
        with httpx.Client(headers=headers) as client:
            for _ in range(per_thread):
                client.get(url).raise_for_status()

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, range(threads)))  # warm-up: connections, caches
        started = time.perf_counter()
        list(pool.map(work, range(threads)))
        elapsed = time.perf_counter() - started
    return per_thread * threads / elapsed


def sandbox_headers(port: int) -> tuple[str, dict[str, str], str]:
    from workbench.sandbox import Credentials

    c = Credentials()
    root = f"http://127.0.0.1:{port}"
    form = {
        "client_id": c.supplier_client_id,
        "client_secret": c.supplier_client_secret,
        "grant_type": "client_credentials",
        "scope": "transcript_api",
    }
    token = httpx.post(f"{root}/identity/auth/connect/token", data=form).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    listing = f"{root}/exchange/api/transcriptrequests/no_response"
    first = httpx.get(listing, headers=headers).json()[0]["RequestID"]
    return listing, headers, f"{root}/exchange/api/transcriptrequests/{first}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    minimal, minimal_port = start(MINIMAL)
    sandbox, sandbox_port = start(SANDBOX)
    try:
        baseline_url = f"http://127.0.0.1:{minimal_port}/"
        listing, headers, detail = sandbox_headers(sandbox_port)
        results = {}
        for name, url, hdrs in [("list", listing, headers), ("detail", detail, headers)]:
            base = rate(baseline_url, {}, args.requests, args.threads)
            ours = rate(url, hdrs, args.requests, args.threads)
            results[name] = (ours, base)
    finally:
        for proc in (minimal, sandbox):
            proc.terminate()
            proc.wait(10)
    print(f"{args.requests} requests, {args.threads} threads, keep-alive, servers in subprocesses")
    for name, (ours, base) in results.items():
        verdict = "ok" if ours / base >= 0.5 else "BELOW GOAL"
        print(
            f"{name:7s} sandbox {ours:7.0f} req/s   minimal app {base:7.0f} req/s   "
            f"ratio {ours / base:.2f} (goal >= 0.5: {verdict})"
        )


if __name__ == "__main__":
    main()
