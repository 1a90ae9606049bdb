"""BLAS for host code (lowering/blas.py): Numba's `numba_xxgemm` helper,
which calls SciPy's BLAS, resolved in each engine that declares it."""
from __future__ import annotations

import ctypes


def register_blas(engine, symbol: str) -> None:
    from numba import _helperlib
    from numba.np.linalg import ensure_blas
    ensure_blas()       # SciPy's BLAS (an ImportError naming SciPy without it)
    engine.raw_register_runtime(symbol, ctypes.c_void_p(_helperlib.c_helpers["xxgemm"]))
