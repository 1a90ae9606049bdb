"""Array attributes (`.shape`, `.strides`, `.dtype`, `.size`, `.ndim`, `len`), copies, and the
NumPy functions that make arrays from a shape (np.empty, np.zeros, np.full,
the *_like forms), plus the helpers Numba's own implementations call
(its shape check, dtype objects, the start values of min/max)."""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.np.arrayobj import _array_copy_intrinsic, np_array
from numba.np.npyimpl import _make_dtype_object
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import empty_inferred
from numba.parfors.array_analysis import assert_equiv
from numba.parfors.parfor import get_type_max_value, get_type_min_value

from .._mlir import arith, ir, memref
from ..lowering.arrays import (allocate, copy_array, fill, load_element, shape_of, size_of,
                               store_element)
from ..lowering.build import cmpi, const, const_i64, const_index, dim, to_i64, to_index
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import attr_rules, call_rules, method_rules
from ..lowering.values import ArrayValue, PyValue, TupleValue


@attr_rules.register((types.Array, "shape"))
def attr_shape(lw, array, ty, expr):
    return TupleValue([to_i64(d) for d in shape_of(array)], types.UniTuple(types.intp, ty.ndim))


@attr_rules.register((types.Array, "strides"))
def attr_strides(lw, array, ty, expr):
    """Strides in bytes: the memref's element strides times the item size
    (metadata only, so also inside kernels). The memref of a C-contiguous
    array has the identity layout, so its strides follow from the extents;
    NumPy may report other strides for axes of extent 1 or 0, which no
    element access can tell apart."""
    if lw.target.gpu and not _keeps_argument_strides(lw):
        raise UnsupportedConstructError(
            "'.strides' on the GPU target where arrays may be non-contiguous arguments "
            "(their GPU copies are C-contiguous)", expr.loc)
    rank = array.type.ndim
    meta = memref.ExtractStridedMetadataOp(array.memref).results
    itemsize = const_i64(np.dtype(str(array.type.dtype)).itemsize)
    strides = [arith.MulIOp(to_i64(s), itemsize).result for s in meta[2 + rank:2 + 2 * rank]]
    return TupleValue(strides, types.UniTuple(types.intp, rank))


def _keeps_argument_strides(lw) -> bool:
    """On the GPU target array arguments are used through C-contiguous
    copies: their strides are NumPy's only when every array argument is
    C-contiguous (or already on the device), which only the entry knows."""
    return lw.entry and all(not isinstance(t, types.Array) or t.layout == "C"
                            for arg in lw.argtypes
                            for t in (arg.types if isinstance(arg, types.BaseTuple) else [arg]))


@attr_rules.register((types.Array, "dtype"))
def attr_dtype(lw, array, ty, expr):
    """A compile-time dtype object (np.finfo(a.dtype), a.dtype.type(0))."""
    return PyValue(types.DType(types.unliteral(ty).dtype))


@attr_rules.register((types.Array, "size"))
def attr_size(lw, array, ty, expr):
    return size_of(array)


@attr_rules.register((types.Array, "itemsize"))
def attr_itemsize(lw, array, ty, expr):
    """The element's size in bytes, a compile-time constant (stumpy's
    `_compute_diagonal`: `T_A.itemsize`)."""
    return const_i64(as_dtype(types.unliteral(ty).dtype).itemsize)


@attr_rules.register((types.Array, "ndim"))
def attr_ndim(lw, array, ty, expr):
    return const_i64(ty.ndim)


@call_rules.register(len)
def builtin_len(lw, args, sig, expr):
    (value,) = args
    if isinstance(value, ArrayValue):
        return to_i64(dim(value.memref, 0))
    if isinstance(value, TupleValue):
        return const_i64(len(value.items))
    raise UnsupportedConstructError(f"len() of {sig.args[0]}", expr.loc)


@call_rules.register(assert_equiv)
def shapes_agree(lw, args, sig, expr):
    """Numba's array-analysis check that its arguments have equal shapes:
    raises AssertionError (with Numba's message) when they do not."""
    message = sig.args[0].literal_value
    extents = [_extents(value, ty, expr) for value, ty in zip(args[1:], sig.args[1:])]
    failed = const(types.boolean, 0)
    for other in extents[1:]:
        if len(other) != len(extents[0]):
            failed = const(types.boolean, 1)
            continue
        for a, b in zip(extents[0], other):
            failed = arith.OrIOp(failed, cmpi("ne", a, b)).result
    code = lw.errors.code(AssertionError, (message,))
    lw.errors.raise_if(lw, failed, code)
    return PyValue(None)


def _extents(value, ty, expr) -> list:
    if isinstance(value, ArrayValue):
        return [to_i64(d) for d in shape_of(value)]
    if isinstance(value, TupleValue):
        return [cast(v, t, types.int64) for v, t in zip(value.items, ty.types)]
    if isinstance(ty, types.Integer):
        return [cast(value, ty, types.int64)]
    raise UnsupportedConstructError(f"a shape check on {ty}", expr.loc)


@call_rules.register(_make_dtype_object)
def dtype_object(lw, args, sig, expr):
    """np.dtype(...) inside Numba's implementations: a compile-time value."""
    return PyValue(sig.return_type)


def _extreme_value(largest: bool):
    """Numba's get_type_max_value / get_type_min_value (reduction starts)."""
    def rule(lw, args, sig, expr):
        ty = types.unliteral(sig.return_type)
        if isinstance(ty, types.Float):
            return const(ty, float("inf") if largest else float("-inf"))
        info = np.iinfo(np.dtype(str(ty)))
        return const(ty, info.max if largest else info.min)
    return rule


call_rules.register(get_type_max_value)(_extreme_value(True))
call_rules.register(get_type_min_value)(_extreme_value(False))


@method_rules.register((types.Array, "copy"))
@call_rules.register(_array_copy_intrinsic, np.copy)
def array_copy(lw, args, sig, expr):
    source = args[0]
    if not isinstance(source, ArrayValue):
        raise UnsupportedConstructError(f"copying {sig.args[0]}", expr.loc)
    return copy_array(lw, source, sig.return_type)


def _shape_values(shape, loc) -> list[ir.Value]:
    if isinstance(shape, TupleValue):
        return [to_index(v) for v in shape.items]
    if isinstance(shape, ir.Value):
        return [to_index(shape)]
    raise UnsupportedConstructError(f"the array shape {shape!r}", loc)


def _new_array(fill_value=None, like=False, explicit_fill=False):
    def rule(lw, args, sig, expr):
        ty = sig.return_type
        if not isinstance(ty, types.Array):
            raise UnsupportedConstructError(f"{expr.func.name} returning {ty}", expr.loc)
        source = args[0]
        extents = shape_of(source) if like else _shape_values(source, expr.loc)
        if len(extents) != ty.ndim:
            raise UnsupportedConstructError(f"the shape argument of {expr.func.name}", expr.loc)
        array = allocate(lw, ty, extents)
        if explicit_fill:
            fill(lw, array, cast(args[1], sig.args[1], ty.dtype))
        elif fill_value is not None:
            fill(lw, array, const(ty.dtype, fill_value))
        return array
    return rule


call_rules.register(np.empty, empty_inferred)(_new_array())
call_rules.register(np.zeros)(_new_array(0))
call_rules.register(np.ones)(_new_array(1))
call_rules.register(np.full)(_new_array(explicit_fill=True))
call_rules.register(np.empty_like)(_new_array(like=True))
call_rules.register(np.zeros_like)(_new_array(0, like=True))
call_rules.register(np.ones_like)(_new_array(1, like=True))
call_rules.register(np.full_like)(_new_array(like=True, explicit_fill=True))


@call_rules.register(np_array)
def numpy_array(lw, args, sig, expr):
    """np.array(obj[, dtype]) (Numba's np_array intrinsic, which np.asarray
    calls too) of a scalar (a 0-d array) or of nested tuples of scalars."""
    obj, obj_ty = args[0], types.unliteral(sig.args[0])
    result_ty = types.unliteral(sig.return_type)
    shape, items = _sequence_items(obj, obj_ty, expr)
    result = allocate(lw, result_ty, [const_index(n) for n in shape])
    for position, (value, ty) in zip(np.ndindex(*shape), items):
        store_element(cast(value, ty, result_ty.dtype), result,
                      [const_index(i) for i in position])
    return result


def _sequence_items(obj, ty, expr) -> tuple[tuple, list]:
    """(shape, [(value, type)] in C order) of a scalar or nested tuples."""
    if isinstance(obj, TupleValue):
        parts = [_sequence_items(v, t, expr) for v, t in zip(obj.items, obj.type.types)]
        if any(p[0] != parts[0][0] for p in parts):
            raise UnsupportedConstructError(f"np.array of the ragged {ty}", expr.loc)
        inner = parts[0][0] if parts else ()
        return (len(parts),) + inner, [item for p in parts for item in p[1]]
    if isinstance(obj, ir.Value) and isinstance(ty, (types.Number, types.Boolean)):
        return (), [(obj, ty)]
    raise UnsupportedConstructError(f"np.array of {ty}", expr.loc)


@method_rules.register((types.Number, "item"))
@method_rules.register((types.Boolean, "item"))
def scalar_item(lw, args, sig, expr):
    """x.item() of a scalar (a 0-d array's operators give scalars): itself."""
    if len(args) != 1:
        raise UnsupportedConstructError(".item() with arguments", expr.loc)
    return cast(args[0], sig.recvr, sig.return_type)


@method_rules.register((types.Array, "item"))
def array_item(lw, args, sig, expr):
    """a.item(): the one element of an array of size 1 (ValueError otherwise,
    as NumPy and Numba)."""
    array = args[0]
    if len(args) != 1:
        raise UnsupportedConstructError(".item() with arguments", expr.loc)
    lw.errors.raise_if(lw, cmpi("ne", size_of(array), const_i64(1)), lw.errors.code(
        ValueError, ("item(): can only convert an array of size 1 to a Python scalar",)))
    origin = [const_index(0)] * array.type.ndim
    return load_element(array, origin)
