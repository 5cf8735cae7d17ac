r"""The backends of ``run_grid``, behind one interface (``streaming``): local
worker processes (``processes``) and Dask's distributed scheduler (``dask``)."""
