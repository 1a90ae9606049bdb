"""`for` loops: iterators over ranges, arrays (elements or rows),
homogeneous tuples, `enumerate`, `zip`, `np.ndenumerate` and `np.ndindex`,
as Numba's getiter / iternext / pair_first / pair_second."""
from __future__ import annotations

from dataclasses import dataclass

from numba.core import types

from .._mlir import arith, ir, memref, scf
from .arrays import load_element, shape_of, size_of
from .build import cmpi, const, const_i64, const_index, dim, select, to_i64, to_index
from .errors import UnsupportedConstructError
from .indexing import VIEW, flat_indices
from .loops import delinearize
from .registry import getitem_rules
from .types import is_scalar, scalar_type
from .values import (ArrayValue, EnumerateValue, FlatValue, IterPair, NdEnumerateValue,
                     NdIndexValue, RangeIter, RangeValue, TupleValue, ZipValue)


@dataclass
class ArrayIter:
    """Iteration over the first axis of an array: elements or row views."""
    range: RangeIter
    array: ArrayValue
    item_type: types.Type


@dataclass
class FlatIter:
    """Iteration over `a.flat`: the elements in C order."""
    range: RangeIter
    flat: FlatValue


@dataclass
class EnumerateIter:
    inner: object
    count: RangeIter


@dataclass
class NdEnumerateIter:
    """np.ndenumerate: the elements in C order with their index tuples."""
    range: RangeIter
    array: ArrayValue


@dataclass
class NdIndexIter:
    """np.ndindex: the index tuples of a shape in C order."""
    range: RangeIter
    extents: list


@dataclass
class TupleIter:
    """Iteration over a homogeneous tuple of scalars: item k picked by a
    chain of selects (the loop is not unrolled: its body is emitted once)."""
    range: RangeIter
    tuple: TupleValue


@dataclass
class ZipIter:
    """zip(...): one iterator per iterable, stepped together; the pair is
    valid while all of them are (Python's zip stops at the shortest)."""
    inners: list


def getiter(lw, value, ty, expr):
    if isinstance(value, RangeValue):
        counter = lw.new_slot(types.int64)
        memref.StoreOp(value.start, counter, [])
        if getattr(lw, "loop_bounds_in_slots", False):
            # bounds read back at each step (kernel/cpu_groups.py keeps the
            # slots per work-item; mem2reg makes them values again)
            return RangeIter(counter, _in_slot(lw, value.stop), _in_slot(lw, value.step))
        return RangeIter(counter, value.stop, value.step)
    if isinstance(value, ArrayValue):
        ty = types.unliteral(ty)
        item_ty = ty.dtype if ty.ndim == 1 else ty.copy(ndim=ty.ndim - 1)
        stop = to_i64(dim(value.memref, 0))
        return ArrayIter(getiter(lw, RangeValue(const_i64(0), stop, const_i64(1)), None, expr),
                         value, item_ty)
    if isinstance(value, FlatValue):
        stop = size_of(value.array)
        return FlatIter(getiter(lw, RangeValue(const_i64(0), stop, const_i64(1)), None, expr),
                        value)
    if isinstance(value, TupleValue) and _scalar_items(value):
        stop = const_i64(len(value.items))
        return TupleIter(getiter(lw, RangeValue(const_i64(0), stop, const_i64(1)), None, expr),
                         value)
    if isinstance(value, EnumerateValue):
        start = const_i64(0) if value.start is None else value.start
        count = getiter(lw, RangeValue(start, const_i64(2 ** 62), const_i64(1)), None, expr)
        return EnumerateIter(getiter(lw, value.iterable, value.type, expr), count)
    if isinstance(value, NdEnumerateValue):
        stop = size_of(value.array)
        return NdEnumerateIter(getiter(lw, RangeValue(const_i64(0), stop, const_i64(1)), None,
                                       expr), value.array)
    if isinstance(value, NdIndexValue):
        stop = const_i64(1)
        for extent in value.extents:     # no index when any extent is 0 (or negative)
            stop = arith.MulIOp(stop, select(cmpi("slt", extent, const_i64(0)), const_i64(0),
                                             extent)).result
        return NdIndexIter(getiter(lw, RangeValue(const_i64(0), stop, const_i64(1)), None,
                                   expr), value.extents)
    if isinstance(value, ZipValue):
        return ZipIter([getiter(lw, v, t, expr) for v, t in zip(value.iterables, value.types)])
    raise UnsupportedConstructError(f"iterating over {ty}", expr.loc)


def _in_slot(lw, value: ir.Value) -> ir.Value:
    slot = lw.new_slot(types.int64)
    memref.StoreOp(value, slot, [])
    return slot


def _read(value: ir.Value) -> ir.Value:
    """A range bound: the value, or the value in its slot."""
    if isinstance(value.type, ir.MemRefType):
        return memref.LoadOp(value, []).result
    return value


def iternext(lw, it, expr):
    if isinstance(it, RangeIter):
        current = memref.LoadOp(it.counter, []).result
        zero = const_i64(0)
        stop, step = _read(it.stop), _read(it.step)
        valid = select(cmpi("sgt", step, zero),
                       cmpi("slt", current, stop),
                       cmpi("sgt", current, stop))
        memref.StoreOp(arith.AddIOp(current, step).result, it.counter, [])
        return IterPair(current, valid)
    if isinstance(it, ArrayIter):
        step = iternext(lw, it.range, expr)
        return IterPair(_array_item(lw, it, step.value, step.valid, expr), step.valid)
    if isinstance(it, FlatIter):
        step = iternext(lw, it.range, expr)
        return IterPair(_guarded_load(it.flat.array, flat_indices(
            it.flat, select(step.valid, step.value, const_i64(0)), types.int64), step.valid),
            step.valid)
    if isinstance(it, TupleIter):
        step = iternext(lw, it.range, expr)
        items = it.tuple.items
        item = items[0]
        for k, other in enumerate(items[1:], 1):
            item = select(cmpi("eq", step.value, const_i64(k)), other, item)
        return IterPair(item, step.valid)
    if isinstance(it, EnumerateIter):
        item = iternext(lw, it.inner, expr)
        index = iternext(lw, it.count, expr).value
        ty = types.Tuple([types.intp, item_type(it.inner)])
        return IterPair(TupleValue([index, item.value], ty), item.valid)
    if isinstance(it, NdEnumerateIter):
        return _ndenumerate_next(lw, it, expr)
    if isinstance(it, NdIndexIter):
        step = iternext(lw, it.range, expr)
        return IterPair(_delinearized(step, it.extents), step.valid)
    if isinstance(it, ZipIter):
        steps = [iternext(lw, inner, expr) for inner in it.inners]
        valid = steps[0].valid
        for step in steps[1:]:
            valid = arith.AndIOp(valid, step.valid).result
        return IterPair(TupleValue([step.value for step in steps], item_type(it)), valid)
    raise UnsupportedConstructError("this iterator", expr.loc)


def item_type(it) -> types.Type:
    """The Numba type of the values `it` yields as our lowering builds them
    (a range counts in int64 whatever its Numba type)."""
    if isinstance(it, RangeIter):
        return types.int64
    if isinstance(it, ArrayIter):
        return it.item_type
    if isinstance(it, FlatIter):
        return it.flat.array.type.dtype
    if isinstance(it, TupleIter):
        return it.tuple.type.dtype
    if isinstance(it, NdEnumerateIter):
        ty = it.array.type
        return types.Tuple([types.UniTuple(types.intp, ty.ndim), ty.dtype])
    if isinstance(it, NdIndexIter):
        return types.UniTuple(types.intp, len(it.extents))
    if isinstance(it, ZipIter):
        return types.Tuple([item_type(inner) for inner in it.inners])
    return types.Tuple([types.intp, item_type(it.inner)])


def _scalar_items(value: TupleValue) -> bool:
    ty = value.type
    return (isinstance(ty, types.UniTuple) and len(value.items) > 0
            and is_scalar(types.unliteral(ty.dtype)))


def _ndenumerate_next(lw, it: NdEnumerateIter, expr) -> IterPair:
    """The C-order position k as an index tuple (delinearized over extents
    of at least 1, so that an empty array divides by no zero) and the
    element there, read only while valid."""
    step = iternext(lw, it.range, expr)
    index = _delinearized(step, [to_i64(e) for e in shape_of(it.array)])
    value = _guarded_load(it.array, [to_index(i) for i in index.items], step.valid)
    return IterPair(TupleValue([index, value], item_type(it)), step.valid)


def _delinearized(step: IterPair, extents: list) -> TupleValue:
    """The C-order position of `step` as an index tuple, delinearized over
    extents of at least 1 (an empty shape divides by no zero; its positions
    are never valid)."""
    k = to_index(select(step.valid, step.value, const_i64(0)))
    one = const_index(1)
    extents = [to_index(e) for e in extents]
    extents = [select(cmpi("sle", e, const_index(0)), one, e) for e in extents]
    indices = delinearize(k, extents)
    return TupleValue([to_i64(i) for i in indices], types.UniTuple(types.intp, len(extents)))


def _array_item(lw, it: ArrayIter, index, valid, expr):
    """a[index]: read only when the iteration is valid (the index may be one
    past the end); a row view needs no read."""
    if isinstance(it.item_type, types.Array):
        safe = select(valid, index, const_i64(0))
        row_view = getitem_rules.get(VIEW)
        if row_view is None:
            raise UnsupportedConstructError(f"iterating over the rows of {it.array.type}",
                                            expr.loc)
        return row_view(lw, it.array, safe, types.intp, it.item_type, expr.loc)
    return _guarded_load(it.array, [to_index(index)], valid)


def _guarded_load(array: ArrayValue, indices: list, valid) -> ir.Value:
    """array[indices] where `valid`, else 0 (the indices may be past the end)."""
    dtype = array.type.dtype
    branch = scf.IfOp(valid, [scalar_type(dtype)], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([load_element(array, indices)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([const(dtype, 0)])
    return branch.results[0]
