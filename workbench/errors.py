"""One exception hierarchy for the whole workbench.

::

    WorkbenchError              catch this to catch everything we raise
    ├── ConfigError             a setting is missing or wrong (names the variable to set)
    │   └── InvalidParameter    a job's parameter is unusable (names it: ``as_of``, ...)
    ├── AuthError               bad credentials, refused token, 401 after one renewal
    ├── PartnerError            an unexpected status; carries ``status`` and ``body``
    │   ├── NotFound            unknown transcript request / transcript id
    │   ├── InvalidValue        a value is invalid (the partner's 400), or we refused to send it
    │   │   ├── DuplicateSend   the outbox already holds this send: ``force=True`` to resend
    │   │   └── DocumentMismatch a document does not fit what it answers: another request's
    │   │                       tracking id, another student, another DocumentProcessCode
    │   └── UnreadableAnswer    a 2xx answer that is not safe JSON, or not of the expected shape
    ├── TransportError          the network failed (connect, read, TLS) after retries
    ├── PescError               XML that is malformed, hostile, too big or not PESC
    ├── StoreError              the local database refused (locked, newer schema, ...)
    └── NotebookFailed          a report notebook raised or timed out; names the cell

Messages say what happened and what to do. They never contain a secret or a token: code that
builds a message from partner text passes it through the session's redaction first.
"""

from __future__ import annotations

from pathlib import Path


class WorkbenchError(Exception):
    """Base of every error the workbench raises on purpose."""

    call_id: int | None = None  # the recorded call that failed (set by Session.call)


class ConfigError(WorkbenchError):
    """A setting is missing or malformed; the message names the variable to set."""


class InvalidParameter(ConfigError):
    """A job's parameter cannot be used; ``parameter`` names it (``as_of``, ``output_dir``...)."""

    def __init__(self, message: str, *, parameter: str) -> None:
        super().__init__(message)
        self.parameter = parameter


class AuthError(WorkbenchError):
    """Credentials were refused, or a token twice; the message quotes OAuth2's error."""


class PartnerError(WorkbenchError):
    """The partner answered with a status we do not expect; ``status`` and ``body`` say which."""

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None):
        super().__init__(message)
        self.status, self.body = status, body


class NotFound(PartnerError):
    """The partner does not know this transcript request or transcript id."""


class InvalidValue(PartnerError):
    """A value was refused as invalid, by the partner (400) or by us before sending."""


class UnreadableAnswer(PartnerError):
    """A 2xx answer (``status``) that is not safe JSON, or not of the expected shape."""


class DuplicateSend(InvalidValue):
    """Already sent (or may have been); ``force=True`` sends again. ``entry_id``, ``state``:
    the outbox entry that blocks it."""

    def __init__(self, message: str, *, entry_id: int, state: str) -> None:
        super().__init__(message)
        self.entry_id, self.state = entry_id, state


class DocumentMismatch(InvalidValue):
    """A document does not fit what it answers, or the profile's ``environment``: another
    request's RequestTrackingID, another student, another DocumentProcessCode. Nothing sent."""


class TransportError(WorkbenchError):
    """The network failed and retries did not help; ``may_have_reached`` is False only when
    the request provably never left (a send may otherwise have taken effect)."""

    def __init__(self, message: str, *, may_have_reached: bool = True) -> None:
        super().__init__(message)
        self.may_have_reached = may_have_reached


class PescError(WorkbenchError):
    """An XML document is malformed, hostile, oversized or not PESC; ``reason`` tags which
    (``"malformed"``, ``"dtd"``, ``"too-large"``, ``"too-deep"``, ``"not-pesc"``, ...)."""

    def __init__(self, message: str, *, reason: str = "malformed") -> None:
        super().__init__(message)
        self.reason = reason


class StoreError(WorkbenchError):
    """The local database cannot be used as asked (locked, newer schema, corrupt)."""


class NotebookFailed(WorkbenchError):
    """A report notebook raised, or a cell timed out: ``cell_index`` (0-based; None:
    unknown) and ``cell_line`` where, ``ename``/``evalue`` what; the partial outputs' paths."""

    def __init__(
        self,
        message: str,
        *,
        notebook: str,
        cell_index: int | None,
        cell_line: str,
        ename: str,
        evalue: str,
        ipynb_path: Path | None = None,
        html_path: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.notebook, self.cell_index, self.cell_line = notebook, cell_index, cell_line
        self.ename, self.evalue = ename, evalue
        self.ipynb_path, self.html_path = ipynb_path, html_path
