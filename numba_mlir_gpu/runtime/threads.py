"""Numba's threading layer, for numba.get_num_threads()/set_num_threads(n)
and get/set_parallel_chunksize in host code (lowering/threading_layer.py):
each engine resolves the symbols the lowering declares to the layer's C
functions in this process, so the values are the ones Numba's own code and
its Python functions use."""
from __future__ import annotations

import ctypes


def register_threading_layer(engine, symbols: dict) -> None:
    """`symbols`: symbol -> name of the function in numba.np.ufunc.parallel."""
    from numba.np.ufunc import parallel
    parallel._launch_threads()      # loads the layer once; later calls return at once
    for symbol, name in symbols.items():
        engine.raw_register_runtime(symbol, ctypes.cast(getattr(parallel, name),
                                                        ctypes.c_void_p))
