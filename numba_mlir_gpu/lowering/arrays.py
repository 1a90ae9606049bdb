"""Arrays: element access, attributes and the NumPy allocation functions."""
from __future__ import annotations

import numpy as np
from numba.core import types
from numba.np.arrayobj import _array_copy_intrinsic
from numba.np.npyimpl import _make_dtype_object
from numba.np.unsafe.ndarray import empty_inferred
from numba.parfors.array_analysis import assert_equiv
from numba.parfors.parfor import get_type_max_value, get_type_min_value

from .._mlir import arith, ir, memref
from .build import cmpi, const, const_i64, dim, select, to_i64, to_index
from .casts import cast
from .errors import UnsupportedConstructError
from .loops import parallel_for
from .registry import attr_rules, call_rules, method_rules
from .types import is_fortran, memref_type, storage_type
from .values import ArrayValue, PyValue, TupleValue


# -- element access -----------------------------------------------------------

def static_index(lw, index, index_var):
    """The index of a static_getitem/static_setitem as (value, numba type)."""
    if index_var is not None:
        return lw.read(index_var), lw.typeof(index_var.name)
    if isinstance(index, int):
        return const_i64(index), types.intp
    if isinstance(index, slice):
        from .views import constant_slice
        return constant_slice(index), types.slice3_type
    if isinstance(index, tuple) and all(isinstance(i, int) for i in index):
        return (TupleValue([const_i64(i) for i in index], types.UniTuple(types.intp, len(index))),
                types.UniTuple(types.intp, len(index)))
    raise UnsupportedConstructError(f"the index {index!r}", lw.loc)


def _index_components(lw, index, index_ty, ndim: int, loc):
    index_ty = types.unliteral(index_ty)
    if isinstance(index_ty, types.Integer):
        comps = [(index, index_ty)]
    elif isinstance(index_ty, types.BaseTuple) and isinstance(index, TupleValue) and \
            all(isinstance(types.unliteral(t), types.Integer) for t in index_ty.types):
        comps = list(zip(index.items, (types.unliteral(t) for t in index_ty.types)))
    else:
        raise UnsupportedConstructError(f"indexing arrays with {index_ty} (slices and "
                                        "fancy indexing come later)", loc)
    if len(comps) != ndim:
        raise UnsupportedConstructError(
            f"indexing a {ndim}-d array with {len(comps)} integer(s) (array views)", loc)
    return comps


def element_indices(lw, array: ArrayValue, index, index_ty, loc) -> list[ir.Value]:
    """MLIR indices for an integer (tuple) index, wrapping negative values
    around as Python does."""
    result = []
    for axis, (value, ty) in enumerate(_index_components(lw, index, index_ty, array.type.ndim, loc)):
        value = cast(value, ty, types.intp if ty.signed else types.uintp)
        if ty.signed:
            zero = const(types.intp, 0)
            wrapped = arith.AddIOp(value, to_i64(dim(array.memref, axis))).result
            value = select(cmpi("slt", value, zero), wrapped, value)
        result.append(to_index(value))
    return result


def load_element(array: ArrayValue, indices: list) -> ir.Value:
    value = memref.LoadOp(array.memref, indices).result
    if isinstance(array.type.dtype, types.Boolean):
        value = arith.TruncIOp(ir.IntegerType.get_signless(1), value).result
    return value


def store_element(value: ir.Value, array: ArrayValue, indices: list) -> None:
    if isinstance(array.type.dtype, types.Boolean):
        value = arith.ExtUIOp(ir.IntegerType.get_signless(8), value).result
    memref.StoreOp(value, array.memref, indices)


def load_item(lw, array: ArrayValue, index, index_ty, loc, result_ty=None):
    """`array[index]`: an element, or a view for an index with slices or
    fewer integers than axes."""
    from . import fancy, views
    if views.is_basic_view_index(index_ty, array.type.ndim):
        return views.basic_view(lw, array, index, index_ty, result_ty, loc)
    if fancy.is_advanced_index(index_ty):
        return fancy.fancy_getitem(lw, array, index, index_ty, result_ty, loc)
    lw.target.check_element_access(lw, array, loc)
    return load_element(array, element_indices(lw, array, index, index_ty, loc))


def store_item(lw, target_var, index, index_ty, value_var) -> None:
    if lw.cooperation is not None and lw.cooperation.free:
        # every thread of the block runs this statement: one stores
        lw.cooperation.single(lambda: _store_item(lw, target_var, index, index_ty, value_var),
                              lw)
        return
    _store_item(lw, target_var, index, index_ty, value_var)


def _store_item(lw, target_var, index, index_ty, value_var) -> None:
    from . import fancy, views
    array = lw.read(target_var)
    if not isinstance(array, ArrayValue):
        raise UnsupportedConstructError(
            f"item assignment to {lw.typeof(target_var.name)}", target_var.loc)
    lw.target.check_element_access(lw, array, target_var.loc)
    if fancy.is_advanced_index(index_ty):
        fancy.fancy_setitem(lw, array, index, index_ty, lw.read(value_var),
                            lw.typeof(value_var.name), target_var.loc)
        return
    if views.is_basic_view_index(index_ty, array.type.ndim):
        result_ty = views.view_type(array.type, index_ty)
        view = views.basic_view(lw, array, index, index_ty, result_ty, target_var.loc)
        views.assign_view(lw, view, lw.read(value_var), lw.typeof(value_var.name),
                          target_var.loc)
        return
    value = lw.read_as(value_var, array.type.dtype)
    store_element(value, array, element_indices(lw, array, index, index_ty, target_var.loc))


# -- attributes ---------------------------------------------------------------

def shape_of(array: ArrayValue) -> list[ir.Value]:
    return [dim(array.memref, axis) for axis in range(array.type.ndim)]


@attr_rules.register((types.Array, "shape"))
def attr_shape(lw, array, ty, expr):
    return TupleValue([to_i64(d) for d in shape_of(array)], types.UniTuple(types.intp, ty.ndim))


@attr_rules.register((types.Array, "size"))
def attr_size(lw, array, ty, expr):
    size = const_i64(1)
    for d in shape_of(array):
        size = arith.MulIOp(size, to_i64(d)).result
    return size


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


def copy_array(lw, source: ArrayValue, result_ty=None) -> ArrayValue:
    """A new array with the elements of `source`, C-ordered unless
    `result_ty` says otherwise."""
    extents = shape_of(source)
    result = allocate(lw, result_ty or source.type.copy(layout="C", readonly=False), extents)

    def body(indices):
        store_element(load_element(source, indices), result, indices)
    parallel_for(lw, extents, body)
    return result


def constant_array(lw, value: np.ndarray, ty: types.Array) -> ArrayValue:
    """A new array holding the elements of a global NumPy array, copied from
    a constant memref.global of the module."""
    if value.ndim == 0 or value.size == 0:
        raise UnsupportedConstructError("empty or 0-d global arrays", lw.loc)
    element = storage_type(ty.dtype, lw.loc)
    data = np.ascontiguousarray(value)
    if data.dtype == np.bool_:
        data = data.astype(np.uint8)
    static = ir.MemRefType.get(list(data.shape), element)
    name = f"{lw.name}_global_{len(lw.global_arrays)}"
    with ir.InsertionPoint(lw.mlower.module.body):
        memref.GlobalOp(name, ir.TypeAttr.get(static), sym_visibility="private",
                        initial_value=ir.DenseElementsAttr.get(
                            data, type=ir.RankedTensorType.get(list(data.shape), element)),
                        constant=True)
    source = memref.GetGlobalOp(static, name).result
    result = allocate(lw, ty.copy(layout="C", readonly=False),
                      [to_index(const_i64(n)) for n in data.shape])
    memref.CopyOp(source, memref.CastOp(static, result.memref).result)
    return ArrayValue(result.memref, ty)


# -- allocation -----------------------------------------------------------------

def _shape_values(shape, loc) -> list[ir.Value]:
    if isinstance(shape, TupleValue):
        return [to_index(v) for v in shape.items]
    if isinstance(shape, ir.Value):
        return [to_index(shape)]
    raise UnsupportedConstructError(f"the array shape {shape!r}", loc)


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
    return array


def fortran_array(buffer: ir.Value, ty: types.Array, loc) -> ArrayValue:
    """The Fortran-ordered array of type `ty` over `buffer`, a C-ordered
    buffer of the reversed extents (its transpose)."""
    from .views import transpose
    storage = ArrayValue(buffer, ty.copy(layout="C"))
    return ArrayValue(transpose(storage, storage.type, loc, ty).memref, ty, storage=buffer)


def fortran_storage(lw, array: ArrayValue, ty: types.Array) -> ir.Value:
    """The C-ordered buffer behind a Fortran-ordered result, which functions
    return in its place: the array's own when it has one, else that of a
    Fortran-ordered copy (a view, an argument, a carried variable)."""
    if array.storage is None:
        array = copy_array(lw, array, ty.copy(readonly=False))
    return array.storage


def fill(lw, array: ArrayValue, value: ir.Value) -> None:
    extents = shape_of(array)

    def body(indices):
        store_element(value, array, indices)
    parallel_for(lw, extents, body)


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
