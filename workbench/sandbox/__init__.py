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

Faults (``Faults``, set at start or with ``set_faults``, scoped by ``path_pattern``): latency
and jitter, 500/503, 429 with Retry-After, connections dropped before or after the operation
runs, acknowledgments that miscount. Answers hostile on purpose (trickled, gzip bombs...) are
the tests' own (``tests/hostile``).

One process serves three base URLs, so a client that mixes them up gets 404s as it would in
production: ``{root}/identity`` (identity server), ``{root}/gateway`` (international and domestic
interfaces) and ``{root}/exchange`` (transcript exchange).

Choices for what the spec leaves open (DESIGN §3), each a setting whose answers are in
``settings.answers()`` (the default first); ``unknown_partner(seed)`` draws one of each:

- event records are small JSON objects, ``{eventId, eventType, occurredAt, payload}`` by
  default; ``event_shape`` "kind_at" sends ``{id, kind, at, payload}`` and "event_info" OCAS'
  International SIS ``{id, eventInfo: {action, data}}`` with no time; ``event_time`` writes
  times as ISO text, epoch milliseconds or ASP.NET's ``/Date(ms)/``; both event endpoints
  answer a JSON array, or (``event_list="object"``) ``{"events": [...], "count": n}``;
- ``Count`` on peek is an integer 1..``max_peek_count`` (100 by default), default 10; anything
  else is a 400 with a ``Message`` naming the range;
  peeking does not remove events unless ``peek_removes``; pending placement events stay until
  the clock moves;
- the exchange authenticates with bearer tokens from the sandbox identity server (client
  credentials, scope ``transcript_api``), one client per role; it needs no subscription key;
  a token of one role is refused (403) on the other role's operations;
- every gateway call needs ``Subscription-Key``: missing or wrong is a 401 with a ``Message``;
  gateway tokens are checked for the interface's scope (403 otherwise);
- error bodies are ``{"Message": "..."}`` everywhere, or (``error_body``) RFC 7807 problem
  details with the text in ``detail``, or the text alone; 401 for a missing, malformed, expired
  or wrongly signed token (with no body at all by ``unauthorized_body="empty"``);
- the account has all four interfaces, or (``interfaces``) the exchange's two, the gateway's
  two, or the supplier role only: ``env`` holds URLs and credentials for those, and the
  identity server knows no client of the others;
- ``id_scheme="tracking"`` (the default): ``RequestID``s are GUIDs written without dashes (32
  hex digits) and the ID is also the XML's ``RequestTrackingID``, as in OCAS' examples (the
  schemas cap it at 35 characters). ``id_scheme="guid"``: the ``RequestID`` is a dashed
  36-character GUID, as in the spec's transcript detail, and the documents carry a distinct
  C-number (``C2026030200001``). Either way a send is checked against the item's tracking ID,
  never against the API id. A by-id value outside ``[A-Za-z0-9-]{1,64}`` is a 400 whose
  message says the value is invalid; a trailing slash after ``:id`` is accepted (a 404 with
  ``trailing_slash="refused"``);
- one id, many documents (NOTES §0): as the clock moves, transcripts are re-issued
  (``reissue_per_hour``; TransmissionType ``Reissue``, back on the list if they had left it),
  listed requests resubmitted (``Resubmission``) or cancelled (``cancellation_per_hour``), each
  time with a new DocumentID and RequestDate. PESC's TransmissionType has no Cancellation, so
  a cancellation is TransmissionType ``MutuallyDefined`` with a TransmissionData
  ``NoteMessage`` ``Cancellation`` (``cancellation_as="transmission_type"`` writes
  TransmissionType ``Cancellation``, as OCAS names it); the request stays listed with it until
  the clock next moves, then leaves the list;
- an empty exchange list is the spec's 400 ``{"Message": "No requests found"}`` (``No
  transcripts found.``), or ``200 []`` with ``empty_list="array"``;
- a detail body is a one-item array, or a bare object with ``detail_shape="object"``; list and
  detail items spell the key ``RequestID``, or ``RequestId`` with ``id_key="RequestId"``;
- a share of ``PESCXML`` strings is XML-escaped (``escaped_share``); the detail's key is
  spelled ``PESCXML``, or ``PESCXml`` or ``pescxml`` (``pescxml_key``);
- sending a response or a transcript takes a request off the no-response list; sending an
  acknowledgment takes a transcript off the consumer's list. A second send is accepted and
  recorded (the partner does not deduplicate: that is the client's job);
- a transcript sent for a request is answered with ``pesc.build_acknowledgment``'s
  Acknowledgment: totals counted from the transcript, its DocumentID echoed, the request's
  tracking ID, this environment's process code.
"""

from __future__ import annotations

from workbench.sandbox.runner import Sandbox, serve
from workbench.sandbox.settings import Credentials, Faults, SandboxSettings

__all__ = ["Credentials", "Faults", "Sandbox", "SandboxSettings", "serve"]
