"""A process for the crash tests: imports once, then forks a writer each time it is told to.

Protocol (lines on stdin/stdout): the test writes ``go``; a forked writer prints ``pid N`` and
then one line per committed write (``call ID``, ``snapshot ID N``, ``outbox ID``), writing until
it is killed; this process reaps it and prints ``reaped``. ``quit`` ends it. Forking keeps each
round fast: the writers inherit the already-imported modules.
"""

from __future__ import annotations

import os
import random
import sys
import traceback
from datetime import UTC, datetime

from workbench.store import Store


class Exchange:
    def __init__(self, n: int, size: int) -> None:
        self.method = "GET"
        self.operation = "supplier.request"
        self.url = f"http://h/api/transcriptrequests/R-{n}?size={size}"
        self.status = 200
        self.started_at = datetime.now(UTC)
        self.response_body = "x" * size


def write_forever(path: str) -> None:
    rng = random.Random(os.getpid())
    store = Store(path, busy_timeout_s=30)
    print(f"pid {os.getpid()}", flush=True)
    with store.run_lock(timeout_s=30):
        run = store.begin_run(kind="pull")
        n = 0
        while True:
            n += 1
            size = rng.choice((100, 5_000, 60_000, 400_000))
            print(f"call {store.record_call(Exchange(n, size), run_id=run)}", flush=True)
            if n % 3 == 0:
                items = [{"RequestID": f"R-{n}-{i}"} for i in range(rng.choice((10, 2000)))]
                diff = store.record_snapshot(run, "supplier_requests", items)
                print(f"snapshot {diff.snapshot_id} {len(items)}", flush=True)
            if n % 5 == 0:
                entry = store.outbox.begin("send_response", f"R-{os.getpid()}-{n}", "<TResp/>")
                print(f"outbox {entry}", flush=True)
                store.outbox.mark_sent(entry, status=200, response_body="{}")


def main() -> None:
    path = sys.argv[1]
    for line in sys.stdin:
        if line.strip() != "go":
            break
        pid = os.fork()
        if pid == 0:  # the writer
            try:
                write_forever(path)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(1)
        os.waitpid(pid, 0)
        print("reaped", flush=True)


if __name__ == "__main__":
    main()
