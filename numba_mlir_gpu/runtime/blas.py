"""BLAS for host code (lowering/blas.py): Numba's `numba_xxgemm`,
`numba_xxgemv` and `numba_xxdot` helpers, which call SciPy's BLAS, resolved
in each engine that declares them."""
from __future__ import annotations

import ctypes


def register_blas(engine, symbols: dict) -> None:
    """`symbols`: our symbol -> the name of Numba's helper (_helperlib.c_helpers)."""
    from numba import _helperlib
    from numba.np.linalg import ensure_blas
    ensure_blas()       # SciPy's BLAS (an ImportError naming SciPy without it)
    for symbol, helper in symbols.items():
        engine.raw_register_runtime(symbol, ctypes.c_void_p(_helperlib.c_helpers[helper]))
