"""`array[index]` and `array[index] = value`: what kind of index it is, and
element access for integer indices.

An index of integers (one per axis) reads or writes one element, here. An
index with slices or fewer integers than axes selects a view, one with an
index array is advanced indexing: both are rules (`getitem_rules` and
`setitem_rules`, keyed by `index_kind`), in rules/views.py and rules/fancy.py.
The slice arithmetic they share is here.
"""
from __future__ import annotations

from typing import Optional

from numba.core import types

from .._mlir import arith, ir, scf
from .arrays import load_element, shape_of, size_of, store_element
from .build import cmpi, const, const_i64, dim, select, to_i64, to_index
from .casts import cast
from .errors import UnsupportedConstructError, user_name
from .loops import delinearize
from .registry import getitem_rules, setitem_rules
from .types import scalar_type
from .values import ArrayValue, FlatValue, SliceValue, TupleValue

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


def flat_indices(flat: FlatValue, index, index_ty) -> list:
    """The array's indices of position `index` of `a.flat` (C order;
    negative counts from the end, as for a Python sequence)."""
    k = cast(index, types.unliteral(index_ty), types.int64)
    wrapped = arith.AddIOp(k, size_of(flat.array)).result
    k = select(cmpi("slt", k, const_i64(0)), wrapped, k)
    return delinearize(to_index(k), shape_of(flat.array))


def load_item(lw, array: ArrayValue, index, index_ty, loc, result_ty=None,
              name: Optional[str] = None):
    """`array[index]`: an element, or what the rule of the index's kind
    makes (a view, a gathered copy). `name`: the array's variable."""
    if isinstance(array, FlatValue):
        return _flat_element(lw, array, index, index_ty, loc, load=True, name=name)
    kind = index_kind(index_ty, array.type.ndim)
    if kind != ELEMENT:
        return _rule(getitem_rules, kind, index_ty, loc)(lw, array, index, index_ty,
                                                         result_ty, loc)
    lw.target.check_element_access(lw, array, loc)
    return checked_load(lw, array, element_indices(lw, array, index, index_ty, loc), name)


def store_item(lw, target_var, index, index_ty, value_var) -> None:
    if lw.cooperation is not None and lw.cooperation.free:
        # every thread of the block runs this statement: one stores
        lw.cooperation.single(lambda: _store_item(lw, target_var, index, index_ty, value_var),
                              lw)
        return
    _store_item(lw, target_var, index, index_ty, value_var)


def _store_item(lw, target_var, index, index_ty, value_var) -> None:
    array = lw.read(target_var)
    if isinstance(array, FlatValue):
        value = lw.read_as(value_var, array.array.type.dtype)
        _flat_element(lw, array, index, index_ty, target_var.loc, load=False, value=value,
                      name=target_var.name)
        return
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
    checked_store(lw, value, array, element_indices(lw, array, index, index_ty, target_var.loc),
                  target_var.name)


def _flat_element(lw, flat: FlatValue, index, index_ty, loc, load: bool, value=None,
                  name: Optional[str] = None):
    """`a.flat[k]` read or written; an integer `k` only."""
    if not isinstance(types.unliteral(index_ty), types.Integer):
        raise UnsupportedConstructError(f"indexing an array's .flat with {index_ty}", loc)
    lw.target.check_element_access(lw, flat.array, loc)
    indices = flat_indices(flat, index, index_ty)
    if load:
        return checked_load(lw, flat.array, indices, name)
    checked_store(lw, value, flat.array, indices, name)
    return None


# -- boundscheck=True ---------------------------------------------------------------
# Numba's `boundscheck` option (or NUMBA_BOUNDSCHECK=1): an element index
# outside the array raises IndexError, after the statement, from host code or
# from a kernel (its status flag, exceptions.py); the access itself is
# skipped, so a kernel never touches memory outside the array.

OUT_OF_BOUNDS = "index is out of bounds"      # Numba's message


def in_bounds(lw, array: ArrayValue, indices: list, name: Optional[str] = None):
    """With boundscheck on, whether `indices` (wrapped) lie inside `array`
    (variable `name`), the IndexError registered for when they do not; None
    when unchecked."""
    if not lw.mlower.boundscheck or not indices:
        return None
    ok = None
    for axis, index in enumerate(indices):
        inside = arith.CmpIOp(arith.CmpIPredicate.ult, index, dim(array.memref, axis)).result
        ok = inside if ok is None else arith.AndIOp(ok, inside).result
    outside = arith.XOrIOp(ok, const(types.boolean, 1)).result
    message = OUT_OF_BOUNDS
    if name is not None and not name.startswith("$"):
        message += f" (array '{user_name(name)}')"
    lw.errors.raise_if(lw, outside, lw.errors.code(IndexError, (message,)))
    return ok


def checked_load(lw, array: ArrayValue, indices: list, name: Optional[str] = None) -> ir.Value:
    ok = in_bounds(lw, array, indices, name)
    if ok is None:
        return load_element(array, indices)
    branch = scf.IfOp(ok, [scalar_type(array.type.dtype)], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([load_element(array, indices)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([const(array.type.dtype, 0)])
    return branch.results[0]


def checked_store(lw, value: ir.Value, array: ArrayValue, indices: list,
                  name: Optional[str] = None) -> None:
    ok = in_bounds(lw, array, indices, name)
    if ok is None:
        store_element(value, array, indices)
        return
    branch = scf.IfOp(ok)
    with ir.InsertionPoint(branch.then_block):
        store_element(value, array, indices)
        scf.YieldOp([])
