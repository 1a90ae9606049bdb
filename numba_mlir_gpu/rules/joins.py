"""np.concatenate, np.stack, np.vstack and np.hstack of a tuple of arrays.

Numba implements each as an overload whose body calls an intrinsic
(np_concatenate, np_stack_common, _np_vstack, _np_hstack) with LLVM code of
its own; the overloads are lowered from their source and these rules take
the intrinsics. The result is a new C-contiguous array; each input is
copied into its place by one parallel loop (a kernel on the GPU), its
elements cast to the result's dtype. The axis may be a run-time value: it is
normalised as Numba does (negative counts from the end; out of range raises
Numba's IndexError), and the copies pick dimensions with selects. Sizes that
do not match raise Numba's ValueError; the copies are clamped to the result,
so a mismatch never writes outside it before the error is raised.
"""
from __future__ import annotations

from numba.core import types
from numba.np.arrayobj import _np_hstack, _np_vstack, np_concatenate, np_stack_common

from .._mlir import arith, ir
from ..lowering.arrays import allocate, load_element, shape_of, store_element
from ..lowering.build import (cmpi, const, const_i64, const_index, logical_not, select,
                              to_index)
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import parallel_for
from ..lowering.registry import call_rules
from ..lowering.types import is_static, static_value
from ..lowering.values import ArrayValue, TupleValue


def _arrays(value, ty, expr) -> list:
    if not isinstance(value, TupleValue) or not all(isinstance(v, ArrayValue)
                                                    for v in value.items):
        raise UnsupportedConstructError(f"joining {ty} (a tuple of arrays is supported)",
                                        expr.loc)
    if any(v.type.ndim == 0 for v in value.items):
        raise UnsupportedConstructError("joining 0-dimensional arrays", expr.loc)
    return list(value.items)


def _axis(lw, value, ty, ndim: int, name: str) -> ir.Value:
    """The axis as an index in [0, ndim): Numba's _normalize_axis, its
    IndexError raised after the statement (0 is used meanwhile)."""
    if is_static(ty) or isinstance(ty, types.Literal):     # axis=0 left out, or a literal
        axis = const_i64(static_value(ty))
    else:
        axis = cast(value, ty, types.int64)
    axis = select(cmpi("slt", axis, const_i64(0)),
                  arith.AddIOp(axis, const_i64(ndim)).result, axis)
    outside = arith.OrIOp(cmpi("slt", axis, const_i64(0)),
                          cmpi("sge", axis, const_i64(ndim))).result
    lw.errors.raise_if(lw, outside, lw.errors.code(IndexError,
                                                   (f"{name}(): axis out of bounds",)))
    return to_index(select(outside, const_i64(0), axis))


def _is(axis: ir.Value, d: int) -> ir.Value:
    return cmpi("eq", axis, const_index(d))


def _copy_into(lw, out: ArrayValue, array: ArrayValue, extents: list, place) -> None:
    """out[place(indices)] = array[indices] over the box `extents`."""
    dtype = out.type.dtype

    def body(indices):
        value = cast(load_element(array, indices), array.type.dtype, dtype)
        store_element(value, out, place(indices))
    parallel_for(lw, extents, body)


def concatenate(lw, arrays: list, axis: ir.Value, ty: types.Array, name: str) -> ArrayValue:
    shapes = [shape_of(a) for a in arrays]
    ndim = ty.ndim
    extents = []
    for d in range(ndim):
        total = shapes[0][d]
        for shape in shapes[1:]:
            total = arith.AddIOp(total, shape[d]).result
            mismatch = arith.AndIOp(logical_not(_is(axis, d)),
                                    cmpi("ne", shape[d], shapes[0][d])).result
            lw.errors.raise_if(lw, mismatch, lw.errors.code(
                ValueError, (f"{name}(): input sizes over dimension {d} do not match",)))
        extents.append(select(_is(axis, d), total, shapes[0][d]))
    out = allocate(lw, ty, extents)
    offset = const_index(0)
    for array, shape in zip(arrays, shapes):
        start = offset
        box = [select(_is(axis, d), shape[d], arith.MinUIOp(shape[d], extents[d]).result)
               for d in range(ndim)]
        _copy_into(lw, out, array, box, lambda idx, start=start: [
            select(_is(axis, d), arith.AddIOp(i, start).result, i) for d, i in enumerate(idx)])
        offset = arith.AddIOp(offset, _at_axis(axis, shape)).result
    return out


def _at_axis(axis: ir.Value, shape: list) -> ir.Value:
    """shape[axis] for a run-time axis."""
    value = shape[0]
    for d in range(1, len(shape)):
        value = select(_is(axis, d), shape[d], value)
    return value


def stack(lw, arrays: list, axis: ir.Value, ty: types.Array, name: str) -> ArrayValue:
    """A new axis at `axis` (in the result's dimensions), array k at k."""
    shapes = [shape_of(a) for a in arrays]
    for shape in shapes[1:]:
        mismatch = const(types.boolean, 0)
        for a, b in zip(shape, shapes[0]):
            mismatch = arith.OrIOp(mismatch, cmpi("ne", a, b)).result
        lw.errors.raise_if(lw, mismatch, lw.errors.code(
            ValueError, (f"{name}(): all input arrays must have the same shape",)))
    first = shapes[0]
    count = const_index(len(arrays))
    # result dimension d is the new axis, or input dimension d (before it) or d - 1
    extents = [_inserted(axis, d, count, first) for d in range(ty.ndim)]
    out = allocate(lw, ty, extents)
    for k, (array, shape) in enumerate(zip(arrays, shapes)):
        box = [arith.MinUIOp(s, f).result for s, f in zip(shape, first)]
        _copy_into(lw, out, array, box, lambda idx, k=k: [
            _inserted(axis, d, const_index(k), idx) for d in range(ty.ndim)])
    return out


def _inserted(axis: ir.Value, d: int, new: ir.Value, values: list) -> ir.Value:
    """Dimension d of a shape or index with `new` inserted at `axis`."""
    before = values[d] if d < len(values) else new      # d < axis (never when d == ndim - 1)
    after = values[d - 1] if d > 0 else new             # d > axis (never when d == 0)
    inner = select(cmpi("ult", const_index(d), axis), before, after)
    return select(_is(axis, d), new, inner)


def _along_an_axis(join, name: str):
    """The rule of an intrinsic taking (arrays, axis)."""
    def rule(lw, args, sig, expr):
        ty = types.unliteral(sig.return_type)
        arrays = _arrays(args[0], sig.args[0], expr)
        return join(lw, arrays, _axis(lw, args[1], sig.args[1], ty.ndim, name), ty, name)
    return rule


call_rules.register(np_concatenate)(_along_an_axis(concatenate, "np.concatenate"))
call_rules.register(np_stack_common)(_along_an_axis(stack, "np.stack"))


@call_rules.register(_np_vstack)
def numpy_vstack(lw, args, sig, expr):
    """1-d inputs: rows of a new 2-d array; more: joined along axis 0."""
    ty = types.unliteral(sig.return_type)
    arrays = _arrays(args[0], sig.args[0], expr)
    zero = const_index(0)
    if arrays[0].type.ndim == 1:
        return stack(lw, arrays, zero, ty, "np.stack")
    return concatenate(lw, arrays, zero, ty, "np.concatenate")


@call_rules.register(_np_hstack)
def numpy_hstack(lw, args, sig, expr):
    """1-d inputs joined end to end; more: along axis 1."""
    ty = types.unliteral(sig.return_type)
    arrays = _arrays(args[0], sig.args[0], expr)
    axis = const_index(0 if arrays[0].type.ndim == 1 else 1)
    return concatenate(lw, arrays, axis, ty, "np.concatenate")
