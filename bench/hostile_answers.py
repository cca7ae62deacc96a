"""Peak memory of a pull whose partner answers details with gzip bombs (issue #10, findings 4, 5).

The sandbox runs in this process behind a loopback proxy that passes every request through,
except some transcript requests' details: each is answered with ``--bomb-mb`` MB of zeros,
gzipped (about 1/1000 of that on the wire, generated in a stream, never held inflated). Each pull
runs in a fresh process of its own, at ``WORKBENCH_CONCURRENCY=8``, so its peak RSS
(``ru_maxrss``) is its own. Prints:

  1. peak RSS of the pull given one bomb, and its ratio to 400 MB (goal < 1), with the error the
     bombed call failed with (it names WORKBENCH_MAX_ANSWER_BYTES) and the details stored;
  2. the same with eight bombs, fetched at once by the eight detail threads;
  3. the baseline, in the same run: the same pull with the proxy passing everything through,
     and how many times each bombed peak RSS is the baseline's.

    .venv/bin/python bench/hostile_answers.py [--bomb-mb 512] [--requests 200]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import tempfile
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

GOAL_MB = 400.0
_HOP = {"connection", "content-encoding", "content-length", "keep-alive", "transfer-encoding"}


def gzip_bomb(megabytes: int) -> bytes:
    """``megabytes`` MB of zeros, gzipped one MB at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 16+: the gzip format
    block = bytes(1024 * 1024)
    return b"".join(packer.compress(block) for _ in range(megabytes)) + packer.flush()


class BombProxy:
    """``upstream`` on 127.0.0.1, except a GET of one of ``paths``: answered with ``bomb``."""

    def __init__(self, upstream: str, paths: set[str], bomb: bytes) -> None:
        import httpx

        forward = httpx.Client(timeout=60)

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                content = self.rfile.read(length) if length else b""
                if self.command == "GET" and self.path in paths:
                    status, headers = 200, {"Content-Encoding": "gzip"}
                    body = bomb
                else:
                    sent = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                    answer = forward.request(
                        self.command, upstream + self.path, headers=sent, content=content
                    )
                    status, body = answer.status_code, answer.content
                    headers = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def measured_pull(env: dict[str, str], db: str, conn: Any) -> None:
    """In a fresh process: one pull; sends back its status, failures and peak RSS (MB)."""
    import workbench as wb

    with wb.connect(env=env, db=db) as w:
        summary = w.pull()
        fetched = summary.lists["supplier_requests"].details_fetched
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    conn.send((summary.status, summary.failures, fetched, peak_mb))


def run_pull(
    ctx: Any, env: dict[str, str], db: Path
) -> tuple[str, list[dict[str, str]], int, float]:
    parent, child = ctx.Pipe()
    process = ctx.Process(target=measured_pull, args=(env, str(db), child))
    process.start()
    if not parent.poll(600):
        process.kill()
        raise RuntimeError("the pull did not finish in 10 minutes")
    result = parent.recv()
    process.join(timeout=60)
    return result  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bomb-mb", type=int, default=512, help="inflated size of the bomb")
    parser.add_argument("--requests", type=int, default=200, help="transcript requests listed")
    args = parser.parse_args()

    from workbench import spec
    from workbench.api.ids import request_path
    from workbench.sandbox import serve

    ctx = mp.get_context("spawn")
    bomb = gzip_bomb(args.bomb_mb)
    print(f"gzip bomb: {args.bomb_mb} MB of zeros in {len(bomb) / 1024:.0f} KiB on the wire")
    with serve(initial_requests=args.requests) as sb, tempfile.TemporaryDirectory() as tmp:
        targets = [
            request_path(spec.SUPPLIER_REQUEST_PATH, request_id)
            for request_id in sb.pending_request_ids()[:8]
        ]
        results = {}
        for name, bombed in (("baseline", 0), ("one bomb", 1), ("eight bombs", 8)):
            proxy = BombProxy(sb.exchange_url, set(targets[:bombed]), bomb)
            try:
                env = {**sb.env, "WORKBENCH_EXCHANGE_URL": proxy.url, "WORKBENCH_CONCURRENCY": "8"}
                results[name] = run_pull(ctx, env, Path(tmp) / f"{bombed}.db")
            finally:
                proxy.close()

    base_status, _, base_fetched, base_peak = results["baseline"]
    ok = True
    for n, (name, bombs) in enumerate((("one bomb", 1), ("eight bombs", 8)), start=1):
        status, failures, fetched, peak = results[name]
        print(
            f"{n}. peak RSS of a pull given {name} of {args.bomb_mb} MB: {peak:.0f} MB = "
            f"{peak / GOAL_MB:.2f} x {GOAL_MB:.0f} MB (goal < 1), {peak / base_peak:.2f} x the "
            f"baseline; run {status}, {fetched} details stored"
        )
        for failure in failures[:2]:
            print(f"   failed: {failure['id']}: {failure['error'][:300]}")
        ok = ok and peak < GOAL_MB and status == "partial" and len(failures) == bombs
    print(
        f"3. baseline, the same pull without a bomb: {base_peak:.0f} MB (run {base_status}, "
        f"{base_fetched} details stored)"
    )
    if not ok:
        print("OVER THE GOAL, or the bombs did not fail alone", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
