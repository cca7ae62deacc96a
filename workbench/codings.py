"""An answer's body, decompressed as its ``Content-Encoding`` says, never past a size cap.

httpx inflates each raw chunk whole, so a few hundred bytes of gzip inside gzip become
gigabytes before anyone can count them. :func:`read_capped` inflates every layer a step at a
time instead: memory stays bounded by the cap whatever the compression ratio.

Supported: ``gzip``, ``deflate`` (zlib-wrapped or raw), ``identity``, stacked up to
:data:`MAX_LAYERS` deep. Anything else is refused: :data:`ACCEPT_ENCODING` tells a well-behaved
partner what to use.

>>> import gzip
>>> read_capped([gzip.compress(b"[]")], ["gzip"], limit=10)
b'[]'
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Sequence

ACCEPT_ENCODING = "gzip, deflate"
MAX_LAYERS = 2  # compressing layers; more is no use to anyone but an attacker
_STEP = 64 * 1024  # bytes inflated at a time, per layer
_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


class AnswerTooLarge(Exception):
    """The body is larger than the cap once decompressed."""


class Undecodable(ValueError):
    """The body does not match its ``Content-Encoding``, or uses one we do not accept."""


def read_capped(raw: Iterable[bytes], codings: Sequence[str], *, limit: int) -> bytes:
    """The body of ``raw`` chunks, decoded through ``codings`` (as sent, outermost last).

    ``AnswerTooLarge`` past ``limit`` decoded bytes (a body that inflates to nothing for ever
    ends at the call's deadline); ``Undecodable`` for a body that is not what ``codings``
    say, or codings we do not support.
    """
    layers = [c.strip().lower() for c in codings if c.strip().lower() not in ("", "identity")]
    unknown = sorted({c for c in layers if c not in _WBITS})
    if unknown:
        raise Undecodable(
            f"unsupported Content-Encoding {', '.join(unknown)} (we ask for {ACCEPT_ENCODING})"
        )
    if len(layers) > MAX_LAYERS:
        raise Undecodable(f"{len(layers)} layers of Content-Encoding (at most {MAX_LAYERS})")
    stream = raw
    for coding in reversed(layers):
        stream = _inflated(stream, coding)
    size, parts = 0, []
    for part in stream:
        size += len(part)
        if size > limit:
            raise AnswerTooLarge
        parts.append(part)
    return b"".join(parts)


def _inflated(chunks: Iterable[bytes], coding: str) -> Iterator[bytes]:
    """``chunks`` inflated ``_STEP`` bytes at a time; deflate may be zlib-wrapped or raw."""
    decoder = zlib.decompressobj(_WBITS[coding])
    started = False
    try:
        for chunk in chunks:
            data = chunk
            while data:
                try:
                    out = decoder.decompress(data, _STEP)
                except zlib.error:
                    if coding != "deflate" or started:
                        raise
                    decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, no header
                    out = decoder.decompress(data, _STEP)
                started = True
                data = decoder.unconsumed_tail
                if out:
                    yield out
                # A full step may leave output inside zlib even with no input left.
                while not data and len(out) == _STEP:
                    out = decoder.decompress(b"", _STEP)
                    if out:
                        yield out
        while not decoder.eof and (out := decoder.decompress(b"", _STEP)):
            yield out
    except zlib.error as exc:
        raise Undecodable(f"the body is not valid {coding}: {exc}") from exc
