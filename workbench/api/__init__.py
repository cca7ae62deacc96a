"""The partner operations, one module per interface, each operation returning a DataFrame.

Helpers: ``frames`` (the DataFrame contract), ``documents`` (the PESCXML field), ``ids``
(RequestID checks), ``batch`` (many details at once) and ``send_checks`` (what a send must pass
before anything leaves, for the API and the CLI alike). Use them through :func:`workbench.connect`.
"""
