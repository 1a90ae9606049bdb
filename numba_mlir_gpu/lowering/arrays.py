"""Arrays as memrefs: elements, extents, allocation, copies and transposes.

The helpers every rule that makes or walks arrays builds on. The rules for
array attributes and the NumPy allocation functions are in rules/arrays.py.
"""
from __future__ import annotations

import numpy as np
from numba.core import types

from .._mlir import arith, ir, memref
from .build import const_i64, constant_global, dim, to_i64, to_index
from .casts import cast
from .errors import UnsupportedConstructError
from .loops import parallel_for
from .types import is_fortran, memref_type, storage_type, strided_memref_type
from .values import ArrayValue


def load_element(array: ArrayValue, indices: list) -> ir.Value:
    value = memref.LoadOp(array.memref, indices).result
    if isinstance(array.type.dtype, types.Boolean):
        value = arith.TruncIOp(ir.IntegerType.get_signless(1), value).result
    return value


def store_element(value: ir.Value, array: ArrayValue, indices: list) -> None:
    if isinstance(array.type.dtype, types.Boolean):
        value = arith.ExtUIOp(ir.IntegerType.get_signless(8), value).result
    memref.StoreOp(value, array.memref, indices)


def shape_of(array: ArrayValue) -> list[ir.Value]:
    return [dim(array.memref, axis) for axis in range(array.type.ndim)]


def size_of(array: ArrayValue) -> ir.Value:
    """The number of elements, as an i64."""
    size = const_i64(1)
    for extent in shape_of(array):
        size = arith.MulIOp(size, to_i64(extent)).result
    return size


def allocate(lw, ty: types.Array, extents: list[ir.Value],
             bounds: list[ir.Value] | None = None) -> ArrayValue:
    """A new array laid out as Numba's type says: C-ordered, or for a
    Fortran-ordered `ty` a transposed C-ordered buffer of the reversed
    extents (column-major strides, as NumPy's order='F'). `bounds`: upper
    bounds of data-dependent extents (the true elements of a mask are at
    most its length), which a GPU kernel's scratch can be sized by."""
    lw.target.check_allocation(lw, lw.loc)
    mty = memref_type(types.Array(ty.dtype, ty.ndim, "C"), lw.loc)
    if is_fortran(ty):
        extents, bounds = extents[::-1], bounds and bounds[::-1]
        buffer = memref.AllocOp(mty, extents, []).result
        array = fortran_array(buffer, ty, lw.loc)
    else:
        buffer = memref.AllocOp(mty, extents, []).result
        array = ArrayValue(buffer, ty.copy(layout="C"))
    if lw.cooperation is not None:
        lw.cooperation.allocated(buffer, lw.loc, bounds)
    else:
        lw.target.allocated(lw, buffer, extents)
    return array


def fortran_array(buffer: ir.Value, ty: types.Array, loc) -> ArrayValue:
    """The Fortran-ordered array of type `ty` over `buffer`, a C-ordered
    buffer of the reversed extents (its transpose)."""
    storage = ArrayValue(buffer, ty.copy(layout="C"))
    return ArrayValue(transpose(storage, storage.type, loc, ty).memref, ty, storage=buffer)


def fortran_storage(lw, array: ArrayValue, ty: types.Array) -> ir.Value:
    """The C-ordered buffer behind a Fortran-ordered result, which functions
    return in its place: the array's own when it has one, else that of a
    Fortran-ordered copy (a view, an argument, a carried variable)."""
    if array.storage is None:
        array = copy_array(lw, array, ty.copy(readonly=False))
    return array.storage


def transpose(array: ArrayValue, ty, loc, result_ty=None) -> ArrayValue:
    """The array with its axes reversed: a view (memref.transpose)."""
    if ty.ndim == 1:
        return array
    result_ty = result_ty or ty.copy(layout={"C": "F", "F": "C"}.get(ty.layout, "A"))
    permutation = ir.AffineMap.get_permutation(list(reversed(range(ty.ndim))))
    strided = strided_memref_type(result_ty, loc)
    source = array.memref
    if source.type != strided:      # transpose keeps static strides: drop them first
        source = memref.CastOp(strided, source).result
    view = memref.TransposeOp(strided, source, ir.AffineMapAttr.get(permutation)).result
    return ArrayValue(view, result_ty, view=True)


def copy_array(lw, source: ArrayValue, result_ty=None) -> ArrayValue:
    """A new array with the elements of `source`, C-ordered unless
    `result_ty` says otherwise (and converted to its element type)."""
    extents = shape_of(source)
    result = allocate(lw, result_ty or source.type.copy(layout="C", readonly=False), extents)
    fromty, toty = source.type.dtype, result.type.dtype

    def body(indices):
        store_element(cast(load_element(source, indices), fromty, toty), result, indices)
    parallel_for(lw, extents, body)
    return result


def fill(lw, array: ArrayValue, value: ir.Value) -> None:
    extents = shape_of(array)

    def body(indices):
        store_element(value, array, indices)
    parallel_for(lw, extents, body)


def constant_array(lw, value: np.ndarray, ty: types.Array) -> ArrayValue:
    """A new array holding the elements of a global NumPy array, copied from
    a constant memref.global of the module."""
    if value.ndim == 0:
        raise UnsupportedConstructError("0-d global arrays", lw.loc)
    result = allocate(lw, ty.copy(layout="C", readonly=False),
                      [to_index(const_i64(n)) for n in value.shape])
    if value.size == 0:         # (an omitted `bounds=np.empty((0, 2))`): nothing to copy
        return ArrayValue(result.memref, ty)
    data = np.ascontiguousarray(value)
    if data.dtype == np.bool_:
        data = data.astype(np.uint8)
    source = constant_global(lw.mlower.module, f"{lw.name}_global_{len(lw.global_arrays)}",
                             data, storage_type(ty.dtype, lw.loc))
    memref.CopyOp(source, memref.CastOp(source.type, result.memref).result)
    return ArrayValue(result.memref, ty)
