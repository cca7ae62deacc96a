"""The partner operations, one module per interface, each operation returning a DataFrame.

Helpers: ``frames`` (the DataFrame contract), ``documents`` (the PESCXML field), ``ids``
(RequestID checks) and ``batch`` (many details at once). Use them through :func:`workbench.connect`.
"""
