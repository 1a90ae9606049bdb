"""NumPy's NaN-ignoring reductions of a whole array: np.nansum, np.nanprod,
np.nanmin, np.nanmax, np.nanmean, np.nanvar and np.nanstd.

Numba implements them as serial loops over `np.nditer` (0-d views, which we
do not lower); here each is a parallel fold (parallel/folds.fold_elements:
deterministic partials on both targets, sequential inside a prange body)
with Numba's results:

* sums and products accumulate in Numba's accumulator type (the call's
  return type: int64 for small integers, the float type itself for floats);
* nanmin/nanmax of floats ignore NaNs and are NaN when every element is;
  among equal elements Numba keeps the last (`if not best < v: best = v`),
  which shows only in the sign of a zero, so the fold also finds the last
  zero's sign; an empty array raises ValueError as in Numba;
* nanmean/nanvar/nanstd accumulate in float64 (Numba's `c = 0.0`).
"""
from __future__ import annotations

import operator

import numpy as np
from numba.core import types

from .._mlir import arith, ir, math
from ..lowering.arrays import size_of
from ..lowering.build import cmpf, cmpi, const, const_i64, select
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.operands import array_operand, call_operands
from ..lowering.registry import call_rules
from ..lowering.values import ArrayValue
from ..parallel.folds import fold_elements
from ..parallel.reduction import Reduction, extreme_identity

_F64 = types.float64


def _operands(lw, args, sig, expr, name: str) -> tuple[ArrayValue, dict]:
    operands = call_operands(lw, args, sig, expr, ("a", "axis", "dtype", "out", "ddof"))
    array = array_operand(operands, f"np.{name}", expr)
    if isinstance(array.type.dtype, types.Complex):
        raise UnsupportedConstructError(f"np.{name} of an array of {array.type.dtype}", expr.loc)
    return array, operands


def _array(lw, args, sig, expr, name: str) -> ArrayValue:
    return _operands(lw, args, sig, expr, name)[0]


def _ordered(v: ir.Value, dtype) -> ir.Value:
    """i1: `v` is not NaN (always, for integers and booleans)."""
    if isinstance(dtype, types.Float):
        return cmpf("ORD", v, v)
    return const(types.boolean, 1)


# -- nansum / nanprod --------------------------------------------------------------

def _nan_fold(name: str, op, identity):
    def rule(lw, args, sig, expr):
        array = _array(lw, args, sig, expr, name)
        dtype, acc_ty = array.type.dtype, types.unliteral(sig.return_type)
        acc = Reduction(name, acc_ty, op, identity)

        def step(k, v, accs):
            combined = acc.combine(accs[0], cast(v, dtype, acc_ty))
            return [select(_ordered(v, dtype), combined, accs[0])]
        (result,) = fold_elements(lw, array, [acc], step)
        return result
    return rule


call_rules.register(np.nansum)(_nan_fold("nansum", operator.add, 0))
call_rules.register(np.nanprod)(_nan_fold("nanprod", operator.mul, 1))


# -- nanmin / nanmax ---------------------------------------------------------------

def _sign_bit(v: ir.Value, dtype: types.Float) -> ir.Value:
    """i64: 1 for a negative sign (-0.0 included), else 0."""
    bits = ir.IntegerType.get_signless(dtype.bitwidth)
    raw = arith.BitcastOp(bits, v).result
    top = arith.ShRUIOp(raw, arith.ConstantOp(bits, dtype.bitwidth - 1).result).result
    if dtype.bitwidth == 64:
        return top
    return arith.ExtUIOp(ir.IntegerType.get_signless(64), top).result


def _nan_extreme(largest: bool):
    name = "nanmax" if largest else "nanmin"

    def rule(lw, args, sig, expr):
        array = _array(lw, args, sig, expr, name)
        lw.errors.raise_if(lw, cmpi("eq", size_of(array), const_i64(0)), lw.errors.code(
            ValueError, ("zero-size array to reduction operation not possible",)))
        dtype, result_ty = array.type.dtype, types.unliteral(sig.return_type)
        if not isinstance(dtype, types.Float):
            # booleans fold as bytes: partials live in memory, which has no i1
            work = types.uint8 if isinstance(dtype, types.Boolean) else dtype
            best = Reduction(name, work, max if largest else min, extreme_identity(work, largest))
            (result,) = fold_elements(lw, array, [best], lambda k, v, accs: [
                best.combine(accs[0], cast(v, dtype, work))])
            return cast(result, work, result_ty)
        return cast(_float_extreme(lw, array, name, largest), dtype, result_ty)
    return rule


def _float_extreme(lw, array: ArrayValue, name: str, largest: bool) -> ir.Value:
    dtype = array.type.dtype
    best = Reduction(name, dtype, max if largest else min, extreme_identity(dtype, largest))
    seen = Reduction("seen", types.uint8, max, 0)
    last_zero = Reduction("last_zero", types.int64, max, -1)    # 2 * index + sign bit

    def step(k, v, accs):
        ordered = _ordered(v, dtype)
        key = arith.AddIOp(arith.MulIOp(k, const_i64(2)).result, _sign_bit(v, dtype)).result
        is_zero = cmpf("OEQ", v, const(dtype, 0.0))
        return [select(ordered, best.combine(accs[0], v), accs[0]),
                select(ordered, const(types.uint8, 1), accs[1]),
                select(is_zero, last_zero.combine(accs[2], key), accs[2])]
    result, any_seen, zero_key = fold_elements(lw, array, [best, seen, last_zero], step)
    negative = cmpi("eq", arith.AndIOp(zero_key, const_i64(1)).result, const_i64(1))
    zero = select(negative, const(dtype, -0.0), const(dtype, 0.0))
    result = select(cmpf("OEQ", result, const(dtype, 0.0)), zero, result)
    return select(cmpi("eq", any_seen, const(types.uint8, 0)), const(dtype, float("nan")), result)


call_rules.register(np.nanmin)(_nan_extreme(False))
call_rules.register(np.nanmax)(_nan_extreme(True))


# -- nanmean / nanvar / nanstd -----------------------------------------------------

def _sum_and_count(lw, array: ArrayValue, term) -> tuple[ir.Value, ir.Value]:
    """(sum of term(v) in float64, count) over the elements that are not NaN."""
    dtype = array.type.dtype
    total = Reduction("total", _F64, operator.add, 0.0)
    count = Reduction("count", types.int64, operator.add, 0)

    def step(k, v, accs):
        ordered = _ordered(v, dtype)
        return [select(ordered, total.combine(accs[0], term(cast(v, dtype, _F64))), accs[0]),
                select(ordered, count.combine(accs[1], const_i64(1)), accs[1])]
    total_value, count_value = fold_elements(lw, array, [total, count], step)
    return total_value, count_value


def _mean(lw, array: ArrayValue) -> ir.Value:
    total, count = _sum_and_count(lw, array, lambda v: v)
    # np.divide: 0 / 0 is NaN, no ZeroDivisionError
    return arith.DivFOp(total, cast(count, types.int64, _F64)).result


def _variance(lw, args, sig, expr, name: str) -> ir.Value:
    array, operands = _operands(lw, args, sig, expr, name)
    ddof = cast(*operands["ddof"], types.int64) if "ddof" in operands else const_i64(0)
    mean = _mean(lw, array)

    def square(v):
        d = arith.SubFOp(v, mean).result
        return arith.MulFOp(d, d).result
    ssd, count = _sum_and_count(lw, array, square)
    dof = arith.SubIOp(count, ddof).result
    variance = arith.DivFOp(ssd, cast(dof, types.int64, _F64)).result
    return select(cmpi("sle", count, ddof), const(_F64, float("nan")), variance)


@call_rules.register(np.nanmean)
def numpy_nanmean(lw, args, sig, expr):
    return cast(_mean(lw, _array(lw, args, sig, expr, "nanmean")), _F64,
                types.unliteral(sig.return_type))


@call_rules.register(np.nanvar)
def numpy_nanvar(lw, args, sig, expr):
    return cast(_variance(lw, args, sig, expr, "nanvar"), _F64, types.unliteral(sig.return_type))


@call_rules.register(np.nanstd)
def numpy_nanstd(lw, args, sig, expr):
    # Numba's `np.nanvar(a, ddof=ddof) ** 0.5`
    root = math.PowFOp(_variance(lw, args, sig, expr, "nanstd"), const(_F64, 0.5)).result
    return cast(root, _F64, types.unliteral(sig.return_type))
