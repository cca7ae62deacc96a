"""The embedded partner sandbox: a strict, independent simulation of the partner spec.

::

    with serve(seed=7, token_ttl=60) as sb:
        os.environ.update(sb.env)        # WORKBENCH_* variables that point a client here
        sb.advance(hours=6)              # the partner moves: new requests, transcripts, events
        sb.set_faults(error_rate=0.2)    # 500/503 on a fifth of the calls
        sb.received                      # every POST it processed

or ``workbench sandbox --port 8765 --seed 7``. Its data is deterministic (same seed and start,
same data); every point the spec leaves open is a ``SandboxSettings`` field (DESIGN §3).
"""

from __future__ import annotations

from workbench.sandbox.runner import Sandbox, serve
from workbench.sandbox.settings import Credentials, Faults, SandboxSettings

__all__ = ["Credentials", "Faults", "Sandbox", "SandboxSettings", "serve"]
