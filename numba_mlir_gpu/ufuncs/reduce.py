"""`UFunc.reduce`: NumPy's `ufunc.reduce` over one axis or all of them.

Along an axis, one generated loop reduces each line in order, the lines in
parallel (the axis is moved last with a transposed view, no copy). A whole
1-D array is reduced in levels: a loop reduces chunks of it in parallel,
in order within each chunk, into a shorter array, until one value is left
(a handful of launches); for a ufunc with an identity, which NumPy treats as
reorderable (commutative too), a chunk takes every m-th element instead, so
that neighbouring GPU threads load neighbouring elements. The kernel is any
associative function, so the
parallel-loop reductions of our lowering (which know +, *, min and max) do
not apply. `initial` is combined with the result by one more call of the
ufunc (`initial op (a0 op a1 ...)`, equal by associativity).
"""
from __future__ import annotations

import math

import numpy as np
from numba.np.ufunc import _internal

from . import loopgen, operands

# Level sizes of a 1-D reduction: each parallel chunk reduces at least this
# many elements, and a level has at most _MAX_CHUNKS chunks.
_MIN_CHUNK = 64
_MAX_CHUNKS = 1 << 16


def _identity(ufunc):
    identity = ufunc.identity
    return None if identity in (None, _internal.PyUFunc_None, _internal.PyUFunc_ReorderableNone) \
        else identity


def reduce(ufunc, array, axis=0, dtype=None, out=None, keepdims: bool = False, initial=None):
    name = ufunc.__name__
    if ufunc.nin != 2:
        raise ValueError(f"{name}: reduce only supported for binary functions")
    if not operands.is_array(array):
        array = np.asarray(array)
    if array.ndim == 0:
        raise ValueError(f"{name}: cannot reduce a 0-d array")
    if isinstance(axis, tuple):
        if len(axis) != 1:
            raise ValueError(f"{name}: reduce over {len(axis)} axes is not supported (one "
                             "axis or None)")
        (axis,) = axis
    dt = np.dtype(dtype) if dtype is not None else np.dtype(array.dtype)
    loop = ufunc._loop_for([None, None], [dt, dt])
    if axis is None:
        line, rest, axis_kept = array.reshape(-1), (), None
    else:
        axis = int(axis)
        if not -array.ndim <= axis < array.ndim:
            raise np.exceptions.AxisError(axis, array.ndim)
        axis %= array.ndim
        rest = tuple(s for d, s in enumerate(array.shape) if d != axis)
        line, axis_kept = array, axis
    length = line.shape[axis_kept if axis_kept is not None else 0]
    if length == 0:
        start = initial if initial is not None else _identity(ufunc)
        if start is None:
            raise ValueError(f"zero-size array to reduction operation {name} which has no "
                             "identity")
        result = np.full(rest, start, loop.output_dtypes[0])
        initial = None
    elif line.ndim == 1:
        result = _reduce_line(ufunc, loop, line)
    else:
        perm = [d for d in range(line.ndim) if d != axis_kept] + [axis_kept]
        moved = line.transpose(perm)
        result = ufunc._reduction_loop("axis", loop, line.ndim)(
            moved, *loopgen.shape_arguments(rest))
    if initial is not None:
        result = ufunc(initial, result)
    if keepdims:
        kept = tuple(1 if axis is None or d == axis else s for d, s in enumerate(array.shape))
        result = result.reshape(kept)
    if out is not None:
        out[...] = result
        return out
    return result


def _reduce_line(ufunc, loop, line):
    """The reduction of a 1-D array, in levels of parallel chunks; a NumPy
    scalar (a 0-d array for device arrays). A ufunc with an identity
    (NumPy's "reorderable") takes strided chunks, so that neighbouring
    threads read neighbouring elements; others contiguous ones, in order."""
    strided = _identity(ufunc) is not None
    level = ufunc._reduction_loop("strided" if strided else "chunks", loop)
    while True:
        n = line.shape[0]
        size = max(_MIN_CHUNK, math.ceil(n / _MAX_CHUNKS))
        count = math.ceil(n / size)
        line = level(line, *loopgen.shape_arguments((count,) if strided else (count, size)))
        if count == 1:
            break
    return line[0] if isinstance(line, np.ndarray) else line.reshape(())
