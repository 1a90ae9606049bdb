"""np.sort, `a.sort()`, np.argsort and np.unique of 1-d arrays: a parallel
merge sort.

Numba sorts with a quicksort written in Python over a list of partitions,
which we do not lower (and which would be one thread on the GPU). Here the
array is copied and sorted bottom-up: level l merges runs of 2**l elements
into runs of 2**(l + 1), every element at once (one parallel loop, a kernel
on the GPU, per level): an element's place in the merged run is its place
in its own run plus the number of elements of the other run that go before
it, found by binary search. Elements of the left run go before equal ones
of the right, so the sort is stable, whatever `kind` asks for. Levels
alternate between two buffers. ceil(log2(n)) levels of O(n log n) work.

Order: NumPy's, NaNs last; integers signed or not as their type; booleans
as bytes. Inside a prange body the levels run in order, each spread over the
block's threads on the GPU (parallel_for).
"""
from __future__ import annotations

import numpy as np
from numba.core import types

from .._mlir import arith, ir, scf
from ..lowering.arrays import allocate, copy_array, load_element, size_of, store_element
from ..lowering.build import cmpf, cmpi, const_index, logical_not, select, to_i64, to_index
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import parallel_for
from ..lowering.indexing import ADVANCED
from ..lowering.registry import call_rules, getitem_rules, method_rules
from ..lowering.values import ArrayValue, PyValue

_KINDS = ("quicksort", "mergesort", "stable", "heapsort")


def _sortable(array, function: str, expr) -> ArrayValue:
    if not isinstance(array, ArrayValue) or array.type.ndim != 1:
        raise UnsupportedConstructError(
            f"{function} of {getattr(array, 'type', array)} (1-d arrays are supported)", expr.loc)
    dtype = array.type.dtype
    if not isinstance(dtype, (types.Integer, types.Float, types.Boolean)):
        raise UnsupportedConstructError(f"{function} of an array of {dtype}", expr.loc)
    return array


def _before(a: ir.Value, b: ir.Value, dtype) -> ir.Value:
    """i1: `a` sorts before `b` (NaNs after every number)."""
    if isinstance(dtype, types.Float):
        nan_b_only = arith.AndIOp(cmpf("UNO", b, b), cmpf("ORD", a, a)).result
        return arith.OrIOp(cmpf("OLT", a, b), nan_b_only).result
    signed = isinstance(dtype, types.Integer) and dtype.signed
    return cmpi("slt" if signed else "ult", a, b)


def _count_before(keys: ArrayValue, lo: ir.Value, hi: ir.Value, goes_before) -> ir.Value:
    """The elements of the sorted run keys[lo:hi] for which goes_before(x)
    holds (a prefix of the run): lo + their number, by binary search."""
    index = ir.IndexType.get()
    loop = scf.WhileOp([index, index], [lo, hi])
    before = loop.before.blocks.append(index, index)
    with ir.InsertionPoint(before):
        low, high = before.arguments
        scf.ConditionOp(cmpi("ult", low, high), [low, high])
    after = loop.after.blocks.append(index, index)
    with ir.InsertionPoint(after):
        low, high = after.arguments
        mid = arith.ShRUIOp(arith.AddIOp(low, high).result, const_index(1)).result
        go = goes_before(load_element(keys, [mid]))
        next_low = select(go, arith.AddIOp(mid, const_index(1)).result, low)
        next_high = select(go, high, mid)
        scf.YieldOp([next_low, next_high])
    return loop.results[0]


def _merge_level(lw, n, width, keys, out_keys, indices, out_indices) -> None:
    """Runs of `width` elements of `keys` (and their `indices`) merged in
    pairs into `out_keys` (`out_indices`)."""
    dtype = keys.type.dtype
    two = arith.MulIOp(width, const_index(2)).result

    def body(position):
        (k,) = position
        start = arith.MulIOp(arith.DivUIOp(k, two).result, two).result
        mid = arith.MinUIOp(arith.AddIOp(start, width).result, n).result
        end = arith.MinUIOp(arith.AddIOp(start, two).result, n).result
        key = load_element(keys, [k])
        left = cmpi("ult", k, mid)
        # left elements go before equal right ones: stable
        other_lo, other_hi = select(left, mid, start), select(left, end, mid)
        own_start = select(left, start, mid)
        in_left = _count_before(keys, other_lo, other_hi, lambda x: _before(x, key, dtype))
        in_right = _count_before(keys, other_lo, other_hi,
                                 lambda x: logical_not(_before(key, x, dtype)))
        passed = arith.SubIOp(select(left, in_left, in_right), other_lo).result
        place = arith.AddIOp(arith.AddIOp(start, arith.SubIOp(k, own_start).result).result,
                             passed).result
        store_element(key, out_keys, [place])
        if indices is not None:
            store_element(load_element(indices, [k]), out_indices, [place])
    parallel_for(lw, [n], body)


def _merge_sort(lw, array: ArrayValue, with_indices: bool):
    """(sorted keys, their original positions or None), new C arrays."""
    n = to_index(size_of(array))
    keys = [copy_array(lw, array), allocate(lw, array.type.copy(layout="C"), [n])]
    indices = None
    if with_indices:
        index_ty = types.Array(types.intp, 1, "C")
        indices = [allocate(lw, index_ty, [n]), allocate(lw, index_ty, [n])]
        parallel_for(lw, [n], lambda k: store_element(to_i64(k[0]), indices[0], k))
    # levels: ceil(log2(n)), at least 0
    levels = scf.WhileOp([ir.IndexType.get(), ir.IndexType.get()],
                         [const_index(0), const_index(1)])
    before = levels.before.blocks.append(ir.IndexType.get(), ir.IndexType.get())
    with ir.InsertionPoint(before):
        count, width = before.arguments
        scf.ConditionOp(cmpi("ult", width, n), [count, width])
    after = levels.after.blocks.append(ir.IndexType.get(), ir.IndexType.get())
    with ir.InsertionPoint(after):
        count, width = after.arguments
        scf.YieldOp([arith.AddIOp(count, const_index(1)).result,
                     arith.MulIOp(width, const_index(2)).result])
    level_count = levels.results[0]
    loop = scf.ForOp(const_index(0), level_count, const_index(1))
    with ir.InsertionPoint(loop.body):
        level = loop.induction_variable
        even = cmpi("eq", arith.AndIOp(level, const_index(1)).result, const_index(0))
        width = arith.ShLIOp(const_index(1), level).result

        def pick(pair, first: bool):
            a, b = (pair[0], pair[1]) if first else (pair[1], pair[0])
            return ArrayValue(select(even, a.memref, b.memref), a.type)
        _merge_level(lw, n, width, pick(keys, True), pick(keys, False),
                     indices and pick(indices, True), indices and pick(indices, False))
        scf.YieldOp([])
    odd = cmpi("eq", arith.AndIOp(level_count, const_index(1)).result, const_index(1))

    def result(pair):
        return ArrayValue(select(odd, pair[1].memref, pair[0].memref), pair[0].type)
    return result(keys), indices and result(indices)


def _kind(lw, expr, position: int) -> None:
    names = dict(expr.kws)
    var = names.get("kind", expr.args[position] if len(expr.args) > position else None)
    if var is None:
        return
    kind = getattr(lw.typeof(var.name), "literal_value", None)
    if kind not in _KINDS:
        raise UnsupportedConstructError(f"sorting with kind={kind!r}", expr.loc)


@call_rules.register(np.sort)
def numpy_sort(lw, args, sig, expr):
    array = _sortable(args[0], "np.sort", expr)
    _kind(lw, expr, 2)
    keys, _ = _merge_sort(lw, array, with_indices=False)
    return keys


@method_rules.register((types.Array, "sort"))
def array_sort(lw, args, sig, expr):
    array = _sortable(args[0], ".sort()", expr)
    keys, _ = _merge_sort(lw, array, with_indices=False)
    parallel_for(lw, [to_index(size_of(array))],
                 lambda k: store_element(load_element(keys, k), array, k))
    return PyValue(None)


@call_rules.register(np.argsort)
def numpy_argsort(lw, args, sig, expr):
    array = _sortable(args[0], "np.argsort", expr)
    _kind(lw, expr, 1)
    _, indices = _merge_sort(lw, array, with_indices=True)
    return indices


@method_rules.register((types.Array, "argsort"))
def array_argsort(lw, args, sig, expr):
    array = _sortable(args[0], ".argsort()", expr)
    _kind(lw, expr, 0)
    _, indices = _merge_sort(lw, array, with_indices=True)
    return indices


@call_rules.register(np.unique)
def numpy_unique(lw, args, sig, expr):
    """Numba's np.unique: the sorted elements, each kept unless it equals
    the one before it or both are NaN (one NaN is kept), as a mask whose
    elements the advanced-indexing rule gathers."""
    array = _sortable(args[0], "np.unique", expr)
    keys, _ = _merge_sort(lw, array, with_indices=False)
    n = to_index(size_of(array))
    mask_ty = types.Array(types.boolean, 1, "C")
    keep = allocate(lw, mask_ty, [n])
    dtype = keys.type.dtype

    def first_of_its_value(position):
        (k,) = position
        previous = load_element(keys, [arith.SubIOp(
            arith.MaxUIOp(k, const_index(1)).result, const_index(1)).result])
        current = load_element(keys, [k])
        if isinstance(dtype, types.Float):
            both_nan = arith.AndIOp(cmpf("UNO", current, current),
                                    cmpf("UNO", previous, previous)).result
            differs = arith.AndIOp(cmpf("UNE", current, previous),
                                   logical_not(both_nan)).result
        else:
            differs = cmpi("ne", current, previous)
        store_element(arith.OrIOp(cmpi("eq", k, const_index(0)), differs).result, keep, [k])
    parallel_for(lw, [n], first_of_its_value)
    gather = getitem_rules.get(ADVANCED)
    return gather(lw, keys, keep, mask_ty, types.unliteral(sig.return_type), expr.loc)
