"""Text that is safe to print on a terminal, whatever the partner put in it.

An id or a message from the partner may carry control characters: ``ESC ] 0;... BEL`` retitles
the terminal, ``ESC [ 2J`` clears it, and the single-byte CSI (U+009B) does the same on some
terminals. Bidirectional controls (U+202E and kin) reorder what follows them, so an id shows
as another. Everything the CLI prints passes :func:`printable` once, at the print boundary.

>>> printable("R-1\\x1b]0;pwned\\x07")
'R-1\\\\x1b]0;pwned\\\\x07'
"""

from __future__ import annotations

import re

# C0 controls, DEL and the C1 controls (CSI U+009B among them): the category Cc; and the
# bidirectional formatting characters (Cf): ALM, LRM, RLM, LRE..RLO, LRI..PDI.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}]")
_CONTROL_BUT_LINES = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_BIDI}]")  # keeps \t, \n


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character written as its escape (``\\x1b``, ``\\n``,
    ``\\u202e``).

    ``keep_newlines``: leave newlines and tabs as they are, for text of ours that spans lines
    (partner values inside it must have been made printable without it first).
    """
    pattern = _CONTROL_BUT_LINES if keep_newlines else _CONTROL
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")
