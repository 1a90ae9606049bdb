"""Array views: basic slicing (`a[1:3]`, `a[i]` of a 2-d array, `a[:, j]`),
`.T`, `reshape`/`ravel` of contiguous arrays, and `.real`/`.imag`.

A view is a `memref.subview`, `memref.transpose` or `memref.reinterpret_cast`
of its base with a fully dynamic strided layout: it aliases the base, as a
NumPy view does. Its Numba type may still say 'C' (a row of a C array);
what matters to the memref is only that its layout is strided.
"""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.parfors.array_analysis import wrap_index

from .._mlir import arith, ir, llvm, memref
from ..lowering.arrays import (allocate, copy_array, fill, load_element, shape_of,
                               store_element, transpose)
from ..lowering.build import cmpi, const, const_i64, const_index, dim, select, to_i64, to_index
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.indexing import VIEW, fix_slice, index_parts, view_type
from ..lowering.loops import parallel_for
from ..lowering.overlap import read_source
from ..lowering.registry import (attr_rules, call_rules, getitem_rules, method_rules,
                                 setitem_rules)
from ..lowering.types import strided_memref_type
from ..lowering.values import ArrayValue, FlatValue, PyValue, SliceValue, TupleValue


def _dynamic_offset() -> int:
    return ir.ShapedType.get_dynamic_stride_or_offset()


def _dynamic_size() -> int:
    return ir.ShapedType.get_dynamic_size()


# -- slices ---------------------------------------------------------------------

@call_rules.register(slice)
def make_slice(lw, args, sig, expr):
    parts = [None if isinstance(a, PyValue) or isinstance(types.unliteral(t), types.NoneType)
             else cast(a, t, types.intp) for a, t in zip(args, sig.args)]
    if len(parts) == 1:
        return SliceValue(None, parts[0], None)
    if len(parts) == 2:
        return SliceValue(parts[0], parts[1], None)
    return SliceValue(*parts)


@call_rules.register(wrap_index)
def lower_wrap_index(lw, args, sig, expr):
    """Numba's array-analysis index wrapping: idx relative to size, clamped
    to [0, size] (see numba.parfors.array_analysis.wrap_index)."""
    idx = cast(args[0], sig.args[0], types.intp)
    size = cast(args[1], sig.args[1], types.intp)
    zero = const_i64(0)
    negative = select(cmpi("sle", idx, arith.SubIOp(zero, size).result), zero,
                      arith.AddIOp(idx, size).result)
    positive = select(cmpi("sge", idx, size), size, idx)
    result = select(cmpi("slt", idx, zero), negative, positive)
    return cast(result, types.intp, sig.return_type)


# -- indexing with slices ----------------------------------------------------------

@getitem_rules.register(VIEW)
def basic_view(lw, array: ArrayValue, index, index_ty, result_ty, loc) -> ArrayValue:
    """`array[index]` for an index of integers and slices: a memref.subview."""
    parts = index_parts(index, index_ty, loc)
    ndim = array.type.ndim
    ellipses = [i for i, (_, t) in enumerate(parts) if isinstance(t, types.EllipsisType)]
    if len(ellipses) > 1:
        raise UnsupportedConstructError("an index with more than one '...'", loc)
    full = (SliceValue(None, None, None), types.slice2_type)
    if ellipses:
        at = ellipses[0]
        parts = parts[:at] + [full] * (ndim - len(parts) + 1) + parts[at + 1:]
    if len(parts) > ndim:
        raise UnsupportedConstructError(f"indexing a {ndim}-d array with {len(parts)} indices", loc)
    parts += [full] * (ndim - len(parts))
    offsets, sizes, strides = [], [], []
    static_offsets, static_sizes, static_strides = [], [], []
    kept, dropped = 0, []
    for axis, (value, ty) in enumerate(parts):
        extent = to_i64(dim(array.memref, axis))
        if isinstance(ty, types.Integer):
            value = cast(value, ty, types.intp)
            if ty.signed:
                wrapped = arith.AddIOp(value, extent).result
                value = select(cmpi("slt", value, const_i64(0)), wrapped, value)
            offsets.append(to_index(value))
            sizes.append(const_index(1))
            strides.append(const_index(1))
            static_offsets.append(_dynamic_offset())
            static_sizes.append(_dynamic_size())
            static_strides.append(_dynamic_offset())
            dropped.append(axis)
            continue
        if not isinstance(value, SliceValue):
            raise UnsupportedConstructError(f"indexing with {ty}", loc)
        start, length, step = fix_slice(lw, value, extent)
        offsets.append(to_index(start))
        sizes.append(to_index(length))
        strides.append(to_index(step))
        static_offsets.append(_dynamic_offset())
        static_sizes.append(_dynamic_size())
        static_strides.append(_dynamic_offset())
        kept += 1
    if not isinstance(result_ty, types.Array) or result_ty.ndim != kept:
        raise UnsupportedConstructError(f"indexing {array.type} with {index_ty}", loc)
    # No rank-reducing subview: once sizes fold to constants, MLIR may drop a
    # different unit axis than the indexed one. Subview at full rank, then
    # reinterpret with the kept axes' sizes and strides.
    full = memref.SubViewOp(strided_memref_type(array.type.copy(layout="A"), loc), array.memref,
                            offsets, sizes, strides,
                            static_offsets, static_sizes, static_strides).result
    if not dropped:
        return ArrayValue(full, result_ty, view=True)
    meta = memref.ExtractStridedMetadataOp(full).results
    keep = [a for a in range(ndim) if a not in dropped]
    return _reinterpreted(full, meta[1], [meta[2 + a] for a in keep],
                          [meta[2 + ndim + a] for a in keep], result_ty, loc)


def _reinterpreted(source: ir.Value, offset, extents: list, strides: list, result_ty,
                   loc) -> ArrayValue:
    """A view of `source`'s memory with the given offset, extents and
    strides (index values), of type `result_ty`."""
    n = len(extents)
    view = memref.ReinterpretCastOp(
        strided_memref_type(result_ty, loc), source, [offset], extents, strides,
        [_dynamic_offset()], [_dynamic_size()] * n, [_dynamic_offset()] * n).result
    return ArrayValue(view, result_ty, view=True)


@setitem_rules.register(VIEW)
def assign_to_view(lw, array: ArrayValue, index, index_ty, value, value_ty, loc) -> None:
    """`array[index] = value` for an index that selects a view."""
    view = basic_view(lw, array, index, index_ty, view_type(array.type, index_ty), loc)
    assign_view(lw, view, value, value_ty, loc)


def assign_view(lw, view: ArrayValue, value, value_ty, loc) -> None:
    """`a[slices] = value`: a scalar is stored everywhere, an array of the
    view's shape (or broadcast along leading axes) is copied."""
    extents = shape_of(view)
    if isinstance(value, ArrayValue):
        source_ndim = value.type.ndim
        if source_ndim > view.type.ndim:
            raise UnsupportedConstructError("assigning an array of higher rank to a slice", loc)
        lead = view.type.ndim - source_ndim
        failed = None
        for axis in range(source_ndim):
            mismatch = cmpi("ne", to_i64(dim(value.memref, axis)), to_i64(extents[lead + axis]))
            failed = mismatch if failed is None else arith.OrIOp(failed, mismatch).result
        if failed is not None:
            code = lw.errors.code(ValueError, ("cannot assign slice from input of different size",))
            lw.errors.raise_if(lw, failed, code)
        source = read_source(lw, value, [view])

        def body(indices):
            element = load_element(source, indices[lead:])
            store_element(cast(element, value.type.dtype, view.type.dtype), view, indices)
    else:
        scalar = cast(value, value_ty, view.type.dtype)

        def body(indices):
            store_element(scalar, view, indices)
    parallel_for(lw, extents, body)



# -- transpose, reshape, ravel ---------------------------------------------------

@attr_rules.register((types.Array, "flat"))
def attr_flat(lw, array, ty, expr):
    return FlatValue(array)


@attr_rules.register((types.Array, "T"))
def attr_transpose(lw, array, ty, expr):
    return transpose(array, lw.typeof(expr.value.name), expr.loc)


@call_rules.register(np.transpose)
def np_transpose(lw, args, sig, expr):
    if len(args) != 1:
        raise UnsupportedConstructError("np.transpose with axes", expr.loc)
    return transpose(args[0], sig.args[0], expr.loc, sig.return_type)


@method_rules.register((types.Array, "transpose"))
def method_transpose(lw, args, sig, expr):
    if len(args) != 1:
        raise UnsupportedConstructError("transpose with axes", expr.loc)
    return transpose(args[0], sig.recvr, expr.loc, sig.return_type)


def _new_extents(lw, shape, shape_ty, total, loc) -> list:
    """The extents of a reshape, with one -1 inferred, checked to hold
    exactly `total` elements (ValueError otherwise)."""
    parts = index_parts(shape, shape_ty, loc)
    extents = [cast(v, t, types.intp) for v, t in parts]
    known = const_i64(1)
    unknown = None
    for i, e in enumerate(extents):
        is_unknown = cmpi("slt", e, const_i64(0))
        known = arith.MulIOp(known, select(is_unknown, const_i64(1), e)).result
        unknown = is_unknown if unknown is None else arith.OrIOp(unknown, is_unknown).result
    safe = select(cmpi("eq", known, const_i64(0)), const_i64(1), known)
    inferred = arith.DivSIOp(total, safe).result
    extents = [select(cmpi("slt", e, const_i64(0)), inferred, e) for e in extents]
    size = const_i64(1)
    for e in extents:
        size = arith.MulIOp(size, e).result
    code = lw.errors.code(ValueError, ("total size of new array must be unchanged",))
    lw.errors.raise_if(lw, cmpi("ne", size, total), code)
    return extents


def reshape_contiguous(lw, array: ArrayValue, extents: list, result_ty, loc) -> ArrayValue:
    """A view of a C-contiguous array with new extents (C strides)."""
    meta = memref.ExtractStridedMetadataOp(array.memref)
    offset = meta.results[1]
    strides = [const_i64(1)]
    for e in reversed(extents[1:]):
        strides.insert(0, arith.MulIOp(strides[0], e).result)
    return _reinterpreted(array.memref, offset, [to_index(e) for e in extents],
                          [to_index(s) for s in strides], result_ty, loc)


def _total(array: ArrayValue):
    total = const_i64(1)
    for d in shape_of(array):
        total = arith.MulIOp(total, to_i64(d)).result
    return total


def _reshape(lw, array, array_ty, shape, shape_ty, result_ty, loc):
    if array_ty.layout != "C":
        raise UnsupportedConstructError(f"reshape of a non-contiguous array ({array_ty})", loc)
    extents = _new_extents(lw, shape, shape_ty, _total(array), loc)
    return reshape_contiguous(lw, array, extents, result_ty, loc)


@method_rules.register((types.Array, "reshape"))
def method_reshape(lw, args, sig, expr):
    array, *shape = args
    if len(shape) == 1:
        shape, shape_ty = shape[0], sig.args[0]
    else:
        shape_ty = types.UniTuple(types.intp, len(shape))
        shape = TupleValue([cast(v, t, types.intp) for v, t in zip(shape, sig.args)], shape_ty)
    return _reshape(lw, array, sig.recvr, shape, shape_ty, sig.return_type, expr.loc)


@call_rules.register(np.reshape)
def np_reshape(lw, args, sig, expr):
    return _reshape(lw, args[0], sig.args[0], args[1], sig.args[1], sig.return_type, expr.loc)


def _ravel(lw, array, array_ty, result_ty, loc, copy: bool):
    if copy or array_ty.layout != "C":
        array = copy_array(lw, array)
    return reshape_contiguous(lw, array, [_total(array)], result_ty, loc)


@method_rules.register((types.Array, "ravel"))
def method_ravel(lw, args, sig, expr):
    return _ravel(lw, args[0], sig.recvr, sig.return_type, expr.loc, copy=False)


@call_rules.register(np.ravel)
def np_ravel(lw, args, sig, expr):
    return _ravel(lw, args[0], sig.args[0], sig.return_type, expr.loc, copy=False)


@method_rules.register((types.Array, "flatten"))
def method_flatten(lw, args, sig, expr):
    return _ravel(lw, args[0], sig.recvr, sig.return_type, expr.loc, copy=True)


# -- .real / .imag ----------------------------------------------------------------

@attr_rules.register((types.Array, "real"), (types.Array, "imag"))
def attr_part(lw, array, ty, expr):
    """A complex array's parts are views of it, as in NumPy (`z.real[:] = 0`
    writes z); a real array's `.real` is the array itself and its `.imag`
    zeros (NumPy's is read-only)."""
    if isinstance(ty.dtype, types.Complex):
        return _part_view(array, 0 if expr.attr == "real" else 1,
                          ty.copy(dtype=ty.dtype.underlying_float, layout="A"), expr.loc)
    if expr.attr == "real":
        return array
    zeros = allocate(lw, ty.copy(layout="C"), shape_of(array))
    fill(lw, zeros, const(ty.dtype, 0))
    return zeros


def _part_view(array: ArrayValue, part: int, result_ty: types.Array, loc) -> ArrayValue:
    """The real (0) or imaginary (1) parts of a complex array's elements, as
    a strided view of float elements: the same buffer, offset and strides
    doubled (a complex is two floats, real first). MLIR has no memref op that
    changes the element type, so the descriptor is rebuilt as LLVM's memref
    struct between two casts that the conversion to LLVM removes; buffer
    deallocation takes the view for a value of unknown origin (it copies it
    where it would escape)."""
    ndim = array.type.ndim
    i64 = ir.IntegerType.get_signless(64)
    fields = "ptr, ptr, i64" + (f", array<{ndim} x i64>, array<{ndim} x i64>" if ndim else "")
    struct = ir.Type.parse(f"!llvm.struct<({fields})>")
    source, strided = array.memref, strided_memref_type(array.type.copy(layout="A"), loc)
    if source.type != strided:      # the identity layout of a C array
        source = memref.CastOp(strided, source).result
    descriptor = _cast(source, struct)
    two = arith.ConstantOp(i64, 2).result
    offset = llvm.ExtractValueOp(i64, descriptor, [2]).result
    offset = arith.AddIOp(arith.MulIOp(offset, two).result,
                          arith.ConstantOp(i64, part).result).result
    descriptor = llvm.InsertValueOp(descriptor, offset, [2]).result
    for axis in range(ndim):
        stride = llvm.ExtractValueOp(i64, descriptor, [4, axis]).result
        descriptor = llvm.InsertValueOp(descriptor, arith.MulIOp(stride, two).result,
                                        [4, axis]).result
    return ArrayValue(_cast(descriptor, strided_memref_type(result_ty, loc)), result_ty,
                      view=True)


def _cast(value: ir.Value, to: ir.Type) -> ir.Value:
    return ir.Operation.create("builtin.unrealized_conversion_cast", results=[to],
                               operands=[value]).result


# -- np.atleast_1d/2d/3d: views with unit dimensions ---------------------------

def _with_unit_dims(array: ArrayValue, result_ty: types.Array, minimum: int, loc) -> ArrayValue:
    """NumPy's placement of the new unit dims: 0-d -> (1,)*minimum; 1-d (n)
    -> (1, n) or (1, n, 1); 2-d (m, n) -> (m, n, 1) for 3. A unit dim's
    stride is the one C order would give it, so a C array stays one."""
    ndim = array.type.ndim
    if ndim >= minimum:
        return array
    meta = memref.ExtractStridedMetadataOp(array.memref)
    extents = [to_i64(e) for e in meta.results[2:2 + ndim]]
    strides = [to_i64(s) for s in meta.results[2 + ndim:]]
    one = const_i64(1)
    if ndim == 0:
        extents, strides = [one] * minimum, [one] * minimum
    else:
        if minimum >= 2 and ndim == 1:      # (n) -> (1, n)
            extents, strides = [one] + extents, \
                [arith.MulIOp(extents[0], strides[0]).result] + strides
        if minimum == 3:                    # (m, n) -> (m, n, 1)
            extents, strides = extents + [one], strides + [one]
    return _reinterpreted(array.memref, meta.results[1], [to_index(e) for e in extents],
                          [to_index(s) for s in strides], result_ty, loc)


def _atleast(minimum: int):
    def rule(lw, args, sig, expr):
        results = sig.return_type.types if isinstance(sig.return_type, types.BaseTuple) \
            else (sig.return_type,)
        if len(args) != len(results) or \
                not all(isinstance(a, ArrayValue) for a in args):
            raise UnsupportedConstructError(
                f"np.atleast_{minimum}d of {', '.join(map(str, sig.args))} (arrays are "
                "supported)", expr.loc)
        views = [_with_unit_dims(a, r, minimum, expr.loc) for a, r in zip(args, results)]
        return views[0] if len(views) == 1 and not isinstance(sig.return_type, types.BaseTuple) \
            else TupleValue(views, sig.return_type)
    return rule


for _minimum, _function in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d)):
    call_rules.register(_function)(_atleast(_minimum))
