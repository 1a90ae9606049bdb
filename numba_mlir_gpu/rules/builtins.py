"""Python builtins that make values: `range` (and `prange`), `enumerate`,
`zip`, `np.ndenumerate`, `bool`, the scalar conversions `int(x)`, `float(x)`,
`np.float32(x)`, ..., and the functions of the `operator` module called as
values (`op(a, b)` with `op = operator.gt`, as in np.ptp)."""
from __future__ import annotations

import operator

import numba
import numpy as np
from numba.core import types
from numba.parfors import parfor

from ..lowering.build import const_i64
from ..lowering.casts import cast, truth
from ..lowering.errors import UnsupportedConstructError
from ..lowering.indexing import index_parts
from ..lowering.optionals import unwrap_optional, wrap_optional
from ..lowering.registry import call_rules
from ..lowering.values import (ArrayValue, EnumerateValue, NdEnumerateValue, NdIndexValue,
                                RangeValue, ZipValue)


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
    start = cast(args[1], sig.args[1], types.int64) if len(args) == 2 else None
    return EnumerateValue(args[0], sig.args[0], start)


@call_rules.register(zip)
def builtin_zip(lw, args, sig, expr):
    if not args:
        raise UnsupportedConstructError("zip() of nothing", expr.loc)
    return ZipValue(list(args), [types.unliteral(t) for t in sig.args])


@call_rules.register(np.ndenumerate)
def numpy_ndenumerate(lw, args, sig, expr):
    if len(args) != 1 or not isinstance(args[0], ArrayValue):
        raise UnsupportedConstructError(f"np.ndenumerate of {sig.args[0]}", expr.loc)
    return NdEnumerateValue(args[0])


@call_rules.register(np.ndindex)
def numpy_ndindex(lw, args, sig, expr):
    """np.ndindex(shape) or np.ndindex(d0, d1, ...): the index tuples of
    that shape in C order."""
    if len(args) == 1 and isinstance(types.unliteral(sig.args[0]), types.BaseTuple):
        parts = index_parts(args[0], sig.args[0], expr.loc)
    else:
        parts = list(zip(args, (types.unliteral(t) for t in sig.args)))
    if not all(isinstance(t, types.Integer) for _, t in parts):
        raise UnsupportedConstructError(f"np.ndindex of {', '.join(map(str, sig.args))}",
                                        expr.loc)
    return NdIndexValue([cast(v, t, types.int64) for v, t in parts])


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



# -- functions of the operator module, called as values -------------------------

def _operator_call(fn, binary: bool):
    """`op(a, b)` where `op` is `operator.gt` (a free variable of Numba's
    np.ptp, sort and partition implementations): the operator itself, on
    scalars, tuples or arrays alike. One difference: a division called this
    way follows NumPy's error model (no ZeroDivisionError), as ufuncs do."""
    def rule(lw, args, sig, expr):
        if len(args) != (2 if binary else 1):
            raise UnsupportedConstructError(f"operator.{fn.__name__} with {len(args)} arguments",
                                            expr.loc)
        return lw.binop(fn, *args, sig, expr) if binary else lw.unary(fn, args[0], sig, expr)
    return rule


for _fn in (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
            operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
            operator.lshift, operator.rshift, operator.eq, operator.ne, operator.lt,
            operator.le, operator.gt, operator.ge, operator.contains, operator.is_,
            operator.is_not):
    call_rules.register(_fn)(_operator_call(_fn, binary=True))
for _fn in (operator.neg, operator.pos, operator.not_, operator.invert):
    call_rules.register(_fn)(_operator_call(_fn, binary=False))
# the builtin pow(x, y) is `x ** y` (Numba types it so; pow(x, y, m) it does not support)
call_rules.register(pow)(_operator_call(operator.pow, binary=True))


def _inplace_operator_call(fn, immutable):
    """`operator.iadd(a, b)` called as a function: as `a += b` (an array is
    updated and returned, a scalar gives `a + b`)."""
    def rule(lw, args, sig, expr):
        if len(args) != 2:
            raise UnsupportedConstructError(f"operator.{fn.__name__} with {len(args)} arguments",
                                            expr.loc)
        return lw.inplace_binop(fn, immutable, *args, sig, expr)
    return rule


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
              "lshift", "rshift", "matmul"):
    _immutable = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    _fn = getattr(operator, "i" + _name)
    call_rules.register(_fn)(_inplace_operator_call(_fn, _immutable))


@call_rules.register(unwrap_optional, wrap_optional)
def optional_conversion(lw, args, sig, expr):
    """The array an Optional holds (frontend/optionals.py; Numba's TypeError
    when it holds None), or an array as an Optional."""
    return lw.convert(args[0], sig.args[0], sig.return_type)
