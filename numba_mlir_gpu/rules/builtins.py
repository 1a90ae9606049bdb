"""Python builtins that make values: `range` (and `prange`), `enumerate`,
`bool`, and the scalar conversions `int(x)`, `float(x)`, `np.float32(x)`, ..."""
from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.parfors import parfor

from ..lowering.build import const_i64
from ..lowering.casts import cast, truth
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import call_rules
from ..lowering.values import EnumerateValue, RangeValue


@call_rules.register(range, numba.prange, parfor.internal_prange)
def builtin_range(lw, args, sig, expr):
    args = [cast(a, t, types.int64) for a, t in zip(args, sig.args)]
    if len(args) == 1:
        return RangeValue(const_i64(0), args[0], const_i64(1))
    if len(args) == 2:
        return RangeValue(args[0], args[1], const_i64(1))
    return RangeValue(*args)


@call_rules.register(enumerate)
def builtin_enumerate(lw, args, sig, expr):
    if len(args) != 1:
        raise UnsupportedConstructError("enumerate with a start", expr.loc)
    return EnumerateValue(args[0], sig.args[0])


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

