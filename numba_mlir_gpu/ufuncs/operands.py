"""The Python side of a ufunc call: operands as the loops take them.

NumPy arrays and device arrays (objects with `__cuda_array_interface__`
and NumPy's array methods, such as CuPy's) are passed on as they are;
numbers stay scalars (a loop argument, not a broadcast array); NumPy 0-d
arrays become NumPy scalars; anything else goes through `np.asarray`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..runtime.device_arrays import CudaArrayLike


def is_device(value) -> bool:
    return isinstance(value, CudaArrayLike)


def is_array(value) -> bool:
    return isinstance(value, np.ndarray) or is_device(value)


def normalise(value):
    """`value` as a loop operand: an array (ndim >= 1, or a device 0-d
    array) or a scalar."""
    if is_device(value):
        return value
    if isinstance(value, np.ndarray):
        return value[()] if value.ndim == 0 else value
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return value
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"ufunc operands must be numbers or arrays, not {type(value).__name__}")
    return array[()] if array.ndim == 0 else array


def broadcast_shape(shapes: Sequence[tuple], what: str = "operands") -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{what} could not be broadcast together with shapes "
                         + " ".join(str(tuple(s)) for s in shapes)) from None


def shape_of(value) -> tuple:
    return tuple(value.shape) if is_array(value) else ()


def c_contiguous(value) -> bool:
    return bool(value.flags.c_contiguous)


# Classes a call key reads: arrays by (class, dtype, shape, strides),
# scalars whose type alone fixes how a call treats them by class (Python
# ints are not here: which integer loop they fit depends on their value).
# Device array classes join the first are seen (the check is costly).
_ARRAYS: set = {np.ndarray}
_SCALARS: set = {float, complex, bool, type(None)}


def call_key(values: Sequence, out) -> tuple | None:
    """What a call's plan depends on (types, dtypes, shapes, strides), or
    None for operands a call must look at each time (Python ints, lists,
    0-d NumPy arrays). Runs on every call: kept cheap."""
    key = []
    for v in (*values, out):
        cls = type(v)
        if cls in _ARRAYS:
            if cls is np.ndarray and not v.ndim:
                return None
            key.append((cls, v.dtype, v.shape, v.strides))
        elif cls in _SCALARS:
            key.append(cls)
        elif isinstance(v, np.generic):
            _SCALARS.add(cls)
            key.append(cls)
        elif is_device(v):
            _ARRAYS.add(cls)
            key.append((cls, v.dtype, v.shape, v.strides))
        else:
            return None
    return tuple(key)
