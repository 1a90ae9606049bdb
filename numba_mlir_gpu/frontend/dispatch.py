"""A shorter way from a call to compiled code, for calls on CuPy arrays.

Numba's C dispatcher types each argument by its fingerprint; it cannot
fingerprint a CuPy array (CuPy's buffer export raises, twice) and then asks
Python. On the H100 host that costs about 2.2 us per CuPy argument, as much
as our kernel launch. `numba_mlir_gpu.njit` returns Numba's own dispatcher
with one more step in front: when every argument is a CuPy array (or a
Python or NumPy number) of a type already in the dispatcher's `overloads`,
the compiled entry point is called directly. Anything else (new types,
keywords, omitted arguments, other objects) goes to Numba's dispatcher, which
compiles, converts and raises as usual. The entry point is the one Numba's
dispatcher would pick: an exact match of the argument types.
"""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.core.registry import CPUDispatcher

from ..runtime.device_arrays import _CUPY_TYPES, _TYPES

# Numbers typed as numba.typeof types them (Python ints are not here: their
# type depends on their size).
_SCALARS = {float: types.float64, bool: types.boolean, np.bool_: types.boolean,
            **{np.dtype(t).type: getattr(types, t)
               for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                         "uint64", "float32", "float64")}}


class DeviceArrayDispatcher(CPUDispatcher):
    """Numba's CPU dispatcher, typing CuPy arrays and numbers itself first."""

    def __call__(self, *args, **kws):
        if not kws:
            key = []
            for value in args:
                cls = type(value)
                if cls in _CUPY_TYPES:
                    ty = _TYPES.get((value.dtype, value.ndim, value._c_contiguous, False))
                else:
                    ty = _SCALARS.get(cls)
                if ty is None:
                    break
                key.append(ty)
            else:
                compiled = self.overloads.get(tuple(key))
                if compiled is not None:
                    return compiled.entry_point(*args)
        return super().__call__(*args, **kws)


def with_device_shortcut(dispatcher):
    """`dispatcher` (a CPUDispatcher, as numba.njit makes) as a DeviceArrayDispatcher."""
    if type(dispatcher) is CPUDispatcher:
        dispatcher.__class__ = DeviceArrayDispatcher
    return dispatcher
