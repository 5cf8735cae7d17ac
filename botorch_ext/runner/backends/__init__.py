r"""The backends of ``run_grid``, behind one interface (``streaming``).

Local worker processes (``processes``) and Dask's distributed scheduler (``dask``).
"""
