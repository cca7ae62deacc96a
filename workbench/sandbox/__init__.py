"""The embedded partner sandbox: a strict, independent simulation of the partner spec.

Start it from Python::

    from workbench.sandbox import serve

    with serve(seed=7, token_ttl=60) as sb:
        os.environ.update(sb.env)        # WORKBENCH_* variables that point a client here
        sb.auth_url, sb.gateway_url, sb.exchange_url
        sb.advance(hours=6)              # the partner moves: new requests, transcripts, events
        sb.set_faults(error_rate=0.2)    # 500/503 on a fifth of the calls
        sb.received                      # the sandbox's own record of every POST it processed

or from the shell: ``workbench sandbox --port 8765 --seed 7``.

One process serves three base URLs, so a client that mixes them up gets 404s as it would in
production: ``{root}/identity`` (identity server), ``{root}/gateway`` (international and domestic
interfaces) and ``{root}/exchange`` (transcript exchange). Its data is deterministic (same seed
and start, same data) and moves with its clock: new requests, transcripts and events, requests
closed elsewhere, transcripts re-issued, requests resubmitted and cancelled.

Every point the spec leaves open is a ``SandboxSettings`` field (DESIGN §3 lists each, its
answers and the client's stance); ``settings.answers()`` gives them, the default first, and
``unknown_partner(seed)`` draws one of each. Faults (``Faults``, set at start or with
``set_faults``, scoped by ``path_pattern``): latency and jitter, 500/503, 429 with Retry-After,
connections dropped before or after the operation runs, acknowledgments that miscount. Answers
hostile on purpose (trickled, gzip bombs...) are the tests' own (``tests/hostile``).
"""

from __future__ import annotations

from workbench.sandbox.runner import Sandbox, serve
from workbench.sandbox.settings import Credentials, Faults, SandboxSettings

__all__ = ["Credentials", "Faults", "Sandbox", "SandboxSettings", "serve"]
