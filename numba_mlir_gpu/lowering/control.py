"""`for` loops over `range`, and the builtins that convert scalars."""
from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.parfors import parfor

from .._mlir import arith, memref
from .build import cmpi, const_i64, select
from .casts import cast, truth
from .errors import UnsupportedConstructError
from .registry import call_rules
from .values import IterPair, RangeIter, RangeValue


@call_rules.register(range, numba.prange, parfor.internal_prange)
def builtin_range(lw, args, sig, expr):
    args = [cast(a, t, types.int64) for a, t in zip(args, sig.args)]
    if len(args) == 1:
        return RangeValue(const_i64(0), args[0], const_i64(1))
    if len(args) == 2:
        return RangeValue(args[0], args[1], const_i64(1))
    return RangeValue(*args)


def getiter(lw, value, ty, expr):
    if not isinstance(value, RangeValue):
        raise UnsupportedConstructError(f"iterating over {ty}", expr.loc)
    counter = lw.new_slot(types.int64)
    memref.StoreOp(value.start, counter, [])
    return RangeIter(counter, value.stop, value.step)


def iternext(lw, it, expr):
    if not isinstance(it, RangeIter):
        raise UnsupportedConstructError("this iterator", expr.loc)
    current = memref.LoadOp(it.counter, []).result
    zero = const_i64(0)
    valid = select(cmpi("sgt", it.step, zero),
                   cmpi("slt", current, it.stop),
                   cmpi("sgt", current, it.stop))
    memref.StoreOp(arith.AddIOp(current, it.step).result, it.counter, [])
    return IterPair(current, valid)


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

