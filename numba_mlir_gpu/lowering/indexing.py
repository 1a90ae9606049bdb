"""`array[index]` and `array[index] = value`: what kind of index it is, and
element access for integer indices.

An index of integers (one per axis) reads or writes one element, here. An
index with slices or fewer integers than axes selects a view, one with an
index array is advanced indexing: both are rules (`getitem_rules` and
`setitem_rules`, keyed by `index_kind`), in rules/views.py and rules/fancy.py.
The slice arithmetic they share is here.
"""
from __future__ import annotations

from numba.core import types

from .._mlir import arith, ir
from .arrays import load_element, store_element
from .build import cmpi, const, const_i64, dim, select, to_i64, to_index
from .casts import cast
from .errors import UnsupportedConstructError
from .registry import getitem_rules, setitem_rules
from .values import ArrayValue, SliceValue, TupleValue

ELEMENT, VIEW, ADVANCED = "element", "view", "advanced"


def index_kind(index_ty, ndim: int) -> str:
    """ELEMENT (an integer per axis), VIEW (integers, slices, an ellipsis)
    or ADVANCED (with an index array)."""
    if is_advanced_index(index_ty):
        return ADVANCED
    if is_basic_view_index(index_ty, ndim):
        return VIEW
    return ELEMENT


def is_advanced_index(index_ty) -> bool:
    index_ty = types.unliteral(index_ty)
    parts = list(index_ty.types) if isinstance(index_ty, types.BaseTuple) else [index_ty]
    return any(isinstance(types.unliteral(p), types.Array) for p in parts)


def is_basic_view_index(index_ty, ndim: int) -> bool:
    """Integers and slices (and at most one ellipsis) that select a view,
    not a single element."""
    index_ty = types.unliteral(index_ty)
    parts = list(index_ty.types) if isinstance(index_ty, types.BaseTuple) else [index_ty]
    parts = [types.unliteral(p) for p in parts]
    if not all(isinstance(p, (types.Integer, types.SliceType, types.EllipsisType)) for p in parts):
        return False
    ints = sum(isinstance(p, types.Integer) for p in parts)
    return ints < ndim or any(not isinstance(p, types.Integer) for p in parts)


def view_type(array_ty: types.Array, index_ty) -> types.Type:
    """Numba's type of `array[index]` for an index that selects a view."""
    from numba.core.typing.arraydecl import get_array_index_type
    return get_array_index_type(array_ty, index_ty).result


def index_parts(index, index_ty, loc) -> list:
    """The index as a list of (value, numba type) per component."""
    index_ty = types.unliteral(index_ty)
    if isinstance(index_ty, types.BaseTuple):
        if not isinstance(index, TupleValue):
            raise UnsupportedConstructError(f"indexing with {index_ty}", loc)
        return list(zip(index.items, (types.unliteral(t) for t in index_ty.types)))
    return [(index, index_ty)]


# -- slices ---------------------------------------------------------------------

def constant_slice(value: slice) -> SliceValue:
    def part(x):
        if x is None:
            return None
        if isinstance(x, int):
            return const_i64(x)
        raise UnsupportedConstructError(f"the slice {value!r}")
    return SliceValue(part(value.start), part(value.stop), part(value.step))


def _clamp(value, low, high):
    value = select(cmpi("slt", value, low), low, value)
    return select(cmpi("sgt", value, high), high, value)


def fix_slice(lw, sl: SliceValue, extent) -> tuple:
    """(start, length, step) of `sl` over an axis of `extent` elements, with
    Python's rules for defaults, negative bounds and clamping."""
    zero, one, minus_one = const_i64(0), const_i64(1), const_i64(-1)
    step = sl.step if sl.step is not None else one
    if sl.step is not None:
        is_zero = cmpi("eq", step, zero)
        code = lw.errors.code(ValueError, ("slice step cannot be zero",))
        lw.errors.raise_if(lw, is_zero, code)
        step = select(is_zero, one, step)    # the raise is checked after the statement
    negative = cmpi("slt", step, zero)
    last = arith.SubIOp(extent, one).result
    low = select(negative, minus_one, zero)
    high = select(negative, last, extent)

    def bound(value, default):
        if value is None:
            return default
        wrapped = select(cmpi("slt", value, zero), arith.AddIOp(value, extent).result, value)
        return _clamp(wrapped, low, high)

    start = bound(sl.start, select(negative, last, zero))
    stop = bound(sl.stop, select(negative, minus_one, extent))
    # length = ceil((stop - start) / step) when positive, else 0
    distance = arith.SubIOp(stop, start).result
    adjust = select(negative, one, minus_one)
    length = arith.AddIOp(arith.DivSIOp(arith.AddIOp(distance, adjust).result, step).result,
                          one).result
    empty = select(negative, cmpi("sge", stop, start), cmpi("sle", stop, start))
    return start, select(empty, zero, length), step


# -- element access -----------------------------------------------------------

def static_index(lw, index, index_var):
    """The index of a static_getitem/static_setitem as (value, numba type)."""
    if index_var is not None:
        return lw.read(index_var), lw.typeof(index_var.name)
    if isinstance(index, int):
        return const_i64(index), types.intp
    if isinstance(index, slice):
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
        raise UnsupportedConstructError(f"indexing arrays with {index_ty}", loc)
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


def _rule(registry, kind: str, index_ty, loc):
    rule = registry.get(kind)
    if rule is None:
        raise UnsupportedConstructError(f"indexing arrays with {index_ty}", loc)
    return rule


def load_item(lw, array: ArrayValue, index, index_ty, loc, result_ty=None):
    """`array[index]`: an element, or what the rule of the index's kind
    makes (a view, a gathered copy)."""
    kind = index_kind(index_ty, array.type.ndim)
    if kind != ELEMENT:
        return _rule(getitem_rules, kind, index_ty, loc)(lw, array, index, index_ty,
                                                         result_ty, loc)
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
    array = lw.read(target_var)
    if not isinstance(array, ArrayValue):
        raise UnsupportedConstructError(
            f"item assignment to {lw.typeof(target_var.name)}", target_var.loc)
    lw.target.check_element_access(lw, array, target_var.loc)
    kind = index_kind(index_ty, array.type.ndim)
    if kind != ELEMENT:
        _rule(setitem_rules, kind, index_ty, target_var.loc)(
            lw, array, index, index_ty, lw.read(value_var), lw.typeof(value_var.name),
            target_var.loc)
        return
    value = lw.read_as(value_var, array.type.dtype)
    store_element(value, array, element_indices(lw, array, index, index_ty, target_var.loc))
