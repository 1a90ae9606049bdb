"""check() for inputs of any layout (C, Fortran, strided).

The GPU target refuses non-contiguous NumPy arguments (docs/supported.md),
so its variants of these tests take C-contiguous copies of them; the CPU
target gets the arrays as they are.
"""
import numpy as np

from . import support


def check(pyfunc, *args, target: str = "cpu", **kwargs):
    if target != "cpu":
        args = tuple(np.ascontiguousarray(a) if isinstance(a, np.ndarray) and a.ndim > 0
                     and not a.flags.c_contiguous else a for a in args)
    return support.check(pyfunc, *args, target=target, **kwargs)
