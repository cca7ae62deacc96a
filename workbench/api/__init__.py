"""The partner operations as DataFrames: the gateway's interfaces, the transcript exchange and
its send checks, the DataFrame contract (``frames.SCHEMA``). Use them through
:func:`workbench.connect`."""
