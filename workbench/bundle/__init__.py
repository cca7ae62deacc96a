"""Support bundles: everything recorded about one request, zipped for a ticket with the partner.

>>> from workbench.bundle import make_bundle
>>> make_bundle(store, "7c1d0b52...", secrets=profile.secrets())  # doctest: +SKIP
PosixPath('data/bundles/7c1d0b52...-20260302T090000Z.zip')

The zip holds:

- ``README.txt``: what is in the bundle, when and by which workbench version it was made, and
  which redactions were applied;
- ``calls.har``: a HAR 1.2 log of every recorded call about the id (it opens in a browser's
  developer tools): calls whose ``request_id`` is the id, the calls of its outbox entries, and
  the list calls in which it appeared on or vanished from a partner list (their bodies cut down
  to this id's items, so no other request leaks in). Token calls are left out;
- ``documents/NN-<kind>-<type>.xml``: every distinct PESC document about the id, from call
  bodies, the outbox and the stored details, unescaped and pretty-printed, in the order first
  seen; ``kind`` is ``sent`` or ``received``, ``type`` the root element (``unparsed`` when it
  does not parse: it is then written as stored);
- ``validation.json``: per document, its validation (status, schema, note, errors with the line
  in the bundled file) and where it was seen;
- ``timeline.csv``: ``Store.timeline(id)``.

Secrets never leave: every text passes :class:`workbench.http.masking.Redactor` with the given
``secrets``, so sensitive headers and fields are masked by name, the secrets by value, JWTs and
bearer credentials by shape, even if the store somehow held one. ``redact_personal=True`` also
masks student personal data (:data:`PERSONAL_ELEMENTS`) in every member, with stable
placeholders such as ``[LastName-1]``: the same value gets the same placeholder throughout the
bundle, so the partner can still see that two documents name the same student.

Layout: ``assemble.py`` (make_bundle, README, zip), ``har.py`` (calls -> HAR 1.2),
``documents.py`` (documents and their validation), ``redaction.py`` (secrets, personal data),
``plain.py`` (values made plain for JSON).
"""

from __future__ import annotations

from workbench.bundle.assemble import make_bundle, make_bundle_from_profile
from workbench.bundle.redaction import DEFAULT_OUT_DIR, PERSONAL_ELEMENTS

__all__ = ["DEFAULT_OUT_DIR", "PERSONAL_ELEMENTS", "make_bundle", "make_bundle_from_profile"]
