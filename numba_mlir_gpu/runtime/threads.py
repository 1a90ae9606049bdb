"""Numba's threading layer, for numba.get_num_threads()/set_num_threads(n)
in host code (lowering/threading_layer.py): each engine resolves the two
symbols the lowering declares to the layer's C functions in this process,
so the count is the one Numba's own code and `numba.set_num_threads` use."""
from __future__ import annotations

import ctypes


def register_threading_layer(engine, get_symbol: str, set_symbol: str) -> None:
    from numba.np.ufunc import parallel
    parallel._launch_threads()      # loads the layer once; later calls return at once
    for symbol, fn in ((get_symbol, parallel._get_num_threads),
                       (set_symbol, parallel._set_num_threads)):
        engine.raw_register_runtime(symbol, ctypes.cast(fn, ctypes.c_void_p))
