"""Advanced (fancy) indexing with one 1-d index array: `a[idx]`, `a[mask]`,
`A[:, idx]`, and the assignments `a[mask] = v`, `a[idx] = v`.

A boolean mask is first turned into the positions of its true elements (as
np.nonzero: a parallel scan, or in order inside a parallel body). Reading
gathers into a new array in parallel. Writing through a mask is parallel too
(each position once); through an index array it walks the selection in
order, so that repeated indices end with the last value as in NumPy.
"""
from __future__ import annotations

from numba.core import types

from .._mlir import arith
from ..lowering.arrays import allocate, copy_array, load_element, store_element
from ..lowering.broadcast import broadcast_element
from ..lowering.build import cmpi, const_i64, dim, select, to_i64, to_index
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.indexing import ADVANCED, fix_slice, index_parts
from ..lowering.loops import parallel_for, sequential_for
from ..lowering.registry import getitem_rules, setitem_rules
from ..lowering.values import ArrayValue, SliceValue
from ..parallel.scan import nonzero_indices


def _positions(lw, index: ArrayValue, loc) -> ArrayValue:
    """The index array as int64 positions; a boolean mask becomes the
    positions of its true elements (np.nonzero's scan: kernels on the GPU)."""
    if index.type.ndim != 1:
        raise UnsupportedConstructError(f"indexing with a {index.type.ndim}-d index array", loc)
    if not isinstance(index.type.dtype, types.Boolean):
        if not isinstance(index.type.dtype, types.Integer):
            raise UnsupportedConstructError(f"indexing with {index.type}", loc)
        return index
    return nonzero_indices(lw, index, [types.Array(types.int64, 1, "C")], loc)[0]


class Selection:
    """How the extents of a fancy selection map back to source indices."""

    def __init__(self, lw, array: ArrayValue, index, index_ty, loc):
        parts = index_parts(index, index_ty, loc)
        ndim = array.type.ndim
        advanced = [i for i, (_, t) in enumerate(parts) if isinstance(t, types.Array)]
        if len(advanced) != 1:
            raise UnsupportedConstructError("indexing with several index arrays", loc)
        if any(isinstance(t, types.EllipsisType) for _, t in parts):
            raise UnsupportedConstructError("'...' with an index array", loc)
        if len(parts) > ndim:
            raise UnsupportedConstructError(f"indexing a {ndim}-d array with {len(parts)} indices",
                                            loc)
        full = (SliceValue(None, None, None), types.slice2_type)
        parts = parts + [full] * (ndim - len(parts))
        self.array = array
        self.unique = False     # no element selected twice (a mask)
        self.axes = []          # per source axis: ("int", v) / ("slice", start, step) / ("adv", pos)
        self.extents = []
        for axis, (value, ty) in enumerate(parts):
            extent = to_i64(dim(array.memref, axis))
            if isinstance(ty, types.Array) and ty.ndim == 0 and \
                    isinstance(ty.dtype, types.Integer):
                # a 0-d index array broadcasts to no axis: NumPy takes its integer
                value, ty = load_element(value, []), ty.dtype
            if isinstance(ty, types.Integer):
                value = cast(value, ty, types.intp)
                if ty.signed:
                    value = select(cmpi("slt", value, const_i64(0)),
                                   arith.AddIOp(value, extent).result, value)
                self.axes.append(("int", value))
            elif isinstance(ty, types.SliceType):
                start, length, step = fix_slice(lw, value, extent)
                self.axes.append(("slice", start, step))
                self.extents.append(to_index(length))
            elif isinstance(ty, types.Array):
                self.unique = isinstance(ty.dtype, types.Boolean)
                positions = _positions(lw, value, loc)
                self.axes.append(("adv", positions, extent))
                self.extents.append(dim(positions.memref, 0))
            else:
                raise UnsupportedConstructError(f"indexing with {ty}", loc)

    def source_indices(self, indices: list) -> list:
        result, k = [], 0
        for axis in self.axes:
            if axis[0] == "int":
                result.append(to_index(axis[1]))
                continue
            i = to_i64(indices[k])
            k += 1
            if axis[0] == "slice":
                result.append(to_index(arith.AddIOp(axis[1], arith.MulIOp(i, axis[2]).result).result))
            else:
                positions, extent = axis[1], axis[2]
                p = cast(load_element(positions, [to_index(i)]), positions.type.dtype, types.intp)
                if positions.type.dtype.signed:
                    p = select(cmpi("slt", p, const_i64(0)), arith.AddIOp(p, extent).result, p)
                result.append(to_index(p))
        return result


@getitem_rules.register(ADVANCED)
def fancy_getitem(lw, array: ArrayValue, index, index_ty, result_ty, loc) -> ArrayValue:
    selection = Selection(lw, array, index, index_ty, loc)
    if not isinstance(result_ty, types.Array) or result_ty.ndim != len(selection.extents):
        raise UnsupportedConstructError(f"indexing {array.type} with {index_ty}", loc)
    result = allocate(lw, result_ty, selection.extents)

    def body(indices):
        element = load_element(array, selection.source_indices(indices))
        store_element(cast(element, array.type.dtype, result_ty.dtype), result, indices)
    parallel_for(lw, selection.extents, body)
    return result


@setitem_rules.register(ADVANCED)
def fancy_setitem(lw, array: ArrayValue, index, index_ty, value, value_ty, loc) -> None:
    selection = Selection(lw, array, index, index_ty, loc)
    if isinstance(value, ArrayValue):
        if value.type.ndim > len(selection.extents):
            raise UnsupportedConstructError("assigning an array of higher rank", loc)
        if value.view:
            value = copy_array(lw, value)
        element_ty = value.type.dtype
    else:
        element_ty = value_ty

    def body(indices):
        element = broadcast_element(value, indices)
        store_element(cast(element, element_ty, array.type.dtype), array,
                      selection.source_indices(indices))
    if selection.unique:      # a mask's positions: each element is written once
        parallel_for(lw, selection.extents, body)
    else:
        sequential_for(selection.extents, body)
