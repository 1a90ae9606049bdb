"""`for` loops over `range`, and the builtins that convert scalars."""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba.core import types
from numba.parfors import parfor

from .._mlir import arith, ir, memref, scf
from .build import cmpi, const, const_i64, dim, select, to_i64, to_index
from .casts import cast, truth
from .errors import UnsupportedConstructError
from .registry import call_rules
from .types import scalar_type
from .values import ArrayValue, IterPair, RangeIter, RangeValue, TupleValue


@call_rules.register(range, numba.prange, parfor.internal_prange)
def builtin_range(lw, args, sig, expr):
    args = [cast(a, t, types.int64) for a, t in zip(args, sig.args)]
    if len(args) == 1:
        return RangeValue(const_i64(0), args[0], const_i64(1))
    if len(args) == 2:
        return RangeValue(args[0], args[1], const_i64(1))
    return RangeValue(*args)


@dataclass
class ArrayIter:
    """Iteration over the first axis of an array: elements or row views."""
    range: RangeIter
    array: ArrayValue
    item_type: types.Type


@dataclass
class EnumerateValue:
    iterable: object
    type: types.Type          # the iterable's Numba type


@dataclass
class EnumerateIter:
    inner: object
    count: RangeIter


@call_rules.register(enumerate)
def builtin_enumerate(lw, args, sig, expr):
    if len(args) != 1:
        raise UnsupportedConstructError("enumerate with a start", expr.loc)
    return EnumerateValue(args[0], sig.args[0])


def getiter(lw, value, ty, expr):
    if isinstance(value, RangeValue):
        counter = lw.new_slot(types.int64)
        memref.StoreOp(value.start, counter, [])
        return RangeIter(counter, value.stop, value.step)
    if isinstance(value, ArrayValue):
        ty = types.unliteral(ty)
        item_ty = ty.dtype if ty.ndim == 1 else ty.copy(ndim=ty.ndim - 1)
        stop = to_i64(dim(value.memref, 0))
        return ArrayIter(getiter(lw, RangeValue(const_i64(0), stop, const_i64(1)), None, expr),
                         value, item_ty)
    if isinstance(value, EnumerateValue):
        count = getiter(lw, RangeValue(const_i64(0), const_i64(2 ** 62), const_i64(1)), None, expr)
        return EnumerateIter(getiter(lw, value.iterable, value.type, expr), count)
    raise UnsupportedConstructError(f"iterating over {ty}", expr.loc)


def iternext(lw, it, expr):
    if isinstance(it, RangeIter):
        current = memref.LoadOp(it.counter, []).result
        zero = const_i64(0)
        valid = select(cmpi("sgt", it.step, zero),
                       cmpi("slt", current, it.stop),
                       cmpi("sgt", current, it.stop))
        memref.StoreOp(arith.AddIOp(current, it.step).result, it.counter, [])
        return IterPair(current, valid)
    if isinstance(it, ArrayIter):
        step = iternext(lw, it.range, expr)
        return IterPair(_array_item(lw, it, step.value, step.valid, expr), step.valid)
    if isinstance(it, EnumerateIter):
        item = iternext(lw, it.inner, expr)
        index = iternext(lw, it.count, expr).value
        ty = types.Tuple([types.intp, _item_type(it.inner)])
        return IterPair(TupleValue([index, item.value], ty), item.valid)
    raise UnsupportedConstructError("this iterator", expr.loc)


def _item_type(it) -> types.Type:
    if isinstance(it, RangeIter):
        return types.int64
    if isinstance(it, ArrayIter):
        return it.item_type
    return types.Tuple([types.intp, _item_type(it.inner)])


def _array_item(lw, it: ArrayIter, index, valid, expr):
    """a[index]: read only when the iteration is valid (the index may be one
    past the end); a row view needs no read."""
    from .arrays import load_element
    from .views import basic_view
    if isinstance(it.item_type, types.Array):
        safe = select(valid, index, const_i64(0))
        return basic_view(lw, it.array, safe, types.intp, it.item_type, expr.loc)
    branch = scf.IfOp(valid, [scalar_type(it.item_type)], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([load_element(it.array, [to_index(index)])])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([const(it.item_type, 0)])
    return branch.results[0]


@call_rules.register(bool)
def builtin_bool(lw, args, sig, expr):
    if not args:
        return cast(const_i64(0), types.int64, types.boolean)
    return truth(args[0], sig.args[0])


def _convert(lw, args, sig, expr):
    """int(x), float(x), np.float32(x), ...: a cast to the result type."""
    if len(args) != 1:
        raise UnsupportedConstructError(f"{sig.return_type}() with {len(args)} arguments", expr.loc)
    if isinstance(sig.args[0], types.Array):
        raise UnsupportedConstructError(f"converting arrays with {sig.return_type}()", expr.loc)
    return cast(args[0], sig.args[0], sig.return_type)


call_rules.register(int, float)(_convert)
call_rules.register(*(getattr(np, name) for name in (
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "intp", "uintp")))(_convert)

