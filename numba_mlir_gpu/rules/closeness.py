"""np.isclose and np.allclose of arrays, with NumPy
broadcasting: one parallel loop (isclose) or one parallel "all" fold
(allclose) over the broadcast shape, on both targets.

Numba implements the array forms with np.broadcast_shapes, np.broadcast_to
and np.nditer, which we do not lower; its scalar forms are plain scalar code
and compile as they are. The element tests are Numba's (`_isclose_item`,
`_allclose_scalars` in numba/np/arraymath.py), in the arguments' common type.
"""
from __future__ import annotations

import numpy as np
from numba.core import types

from .._mlir import arith, ir, math
from ..lowering.arrays import allocate, store_element
from ..lowering.broadcast import SHAPE_MISMATCH, broadcast_element, broadcast_shape
from ..lowering.build import cmpf, const, logical_not, select
from ..lowering.calls import call_jitted, jitted_implementation
from ..lowering.casts import cast, truth
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import parallel_for
from ..lowering.operands import call_operands
from ..lowering.registry import call_rules
from ..lowering.types import element_type
from ..lowering.values import ArrayValue
from ..parallel.folds import fold_box
from ..parallel.reduction import Reduction

_NAMES = ("a", "b", "rtol", "atol", "equal_nan")


class _Closeness:
    """The operands of one call: a and b, and the tolerances as values."""

    def __init__(self, lw, args, sig, expr, name: str):
        operands = call_operands(lw, args, sig, expr, _NAMES)
        (self.a, a_ty), (self.b, b_ty) = operands["a"], operands["b"]
        self.types = [element_type(a_ty), element_type(b_ty)]
        common = lw.mlower.typingctx.unify_types(*self.types)
        if not isinstance(common, (types.Float, types.Integer, types.Boolean)):
            raise UnsupportedConstructError(f"{name} of {a_ty} and {b_ty}", expr.loc)
        # Numba's `np.abs(b * 1.0)`, `abs(x - y)`: integers compare as float64
        self.common = common if isinstance(common, types.Float) else types.float64
        self.rtol = self._scalar(operands, "rtol", 1e-05)
        self.atol = self._scalar(operands, "atol", 1e-08)
        equal_nan = operands.get("equal_nan")
        self.equal_nan = (truth(*equal_nan) if equal_nan is not None
                          else const(types.boolean, 0))
        self.arrays = [v for v in (self.a, self.b) if isinstance(v, ArrayValue)]

    def _scalar(self, operands, name: str, default: float) -> ir.Value:
        if name in operands:
            return cast(*operands[name], self.common)
        return const(self.common, default)

    def values(self, indices: list) -> tuple[ir.Value, ir.Value]:
        return tuple(cast(broadcast_element(v, indices), t, self.common)
                     for v, t in zip((self.a, self.b), self.types))

    def within(self, x: ir.Value, y: ir.Value) -> ir.Value:
        """|x - y| <= atol + rtol * |y| (false when either is NaN)."""
        diff = math.AbsFOp(arith.SubFOp(x, y).result).result
        bound = arith.AddFOp(self.atol, arith.MulFOp(self.rtol, math.AbsFOp(y).result).result)
        return cmpf("OLE", diff, bound.result)


def _is_inf(v: ir.Value, ty) -> ir.Value:
    return cmpf("OEQ", math.AbsFOp(v).result, const(ty, float("inf")))


def _isclose_item(c: _Closeness, x: ir.Value, y: ir.Value) -> ir.Value:
    ty = c.common
    both_nan = arith.AndIOp(cmpf("UNO", x, x), cmpf("UNO", y, y)).result
    x_inf, y_inf = _is_inf(x, ty), _is_inf(y, ty)
    zero = const(ty, 0.0)
    same_sign = arith.XOrIOp(cmpf("OGT", x, zero), cmpf("OGT", y, zero)).result
    same_sign = logical_not(same_sign)
    result = c.within(x, y)
    result = select(arith.OrIOp(x_inf, y_inf).result, const(types.boolean, 0), result)
    result = select(arith.AndIOp(x_inf, y_inf).result, same_sign, result)
    return select(both_nan, c.equal_nan, result)


def _allclose_item(c: _Closeness, x: ir.Value, y: ir.Value) -> ir.Value:
    x_nan, y_nan = cmpf("UNO", x, x), cmpf("UNO", y, y)
    any_inf = arith.OrIOp(_is_inf(x, c.common), _is_inf(y, c.common)).result
    numbers = select(any_inf, cmpf("OEQ", x, y), c.within(x, y))
    both_nan = arith.AndIOp(x_nan, y_nan).result
    one_nan = arith.XOrIOp(x_nan, y_nan).result
    return select(one_nan, const(types.boolean, 0), select(both_nan, c.equal_nan, numbers))


def _scalars_only(args) -> bool:
    return not any(isinstance(a, ArrayValue) for a in args[:2])


def _numbas(lw, args, sig, expr):
    """Numba's own implementation: plain scalar code for two scalars."""
    return call_jitted(lw, *jitted_implementation(lw, expr, sig), args, expr, sig.return_type)


@call_rules.register(np.isclose)
def numpy_isclose(lw, args, sig, expr):
    if _scalars_only(args):
        return _numbas(lw, args, sig, expr)
    c = _Closeness(lw, args, sig, expr, "np.isclose")
    result_ty = types.unliteral(sig.return_type)
    result_ty = types.Array(types.boolean, result_ty.ndim, "C")
    extents = broadcast_shape(lw, c.arrays, result_ty.ndim, SHAPE_MISMATCH)
    out = allocate(lw, result_ty, extents)

    def body(indices):
        store_element(_isclose_item(c, *c.values(indices)), out, indices)
    parallel_for(lw, extents, body)
    return out


@call_rules.register(np.allclose)
def numpy_allclose(lw, args, sig, expr):
    if _scalars_only(args):
        return _numbas(lw, args, sig, expr)
    c = _Closeness(lw, args, sig, expr, "np.allclose")
    ndim = max(a.type.ndim for a in c.arrays)
    extents = broadcast_shape(lw, c.arrays, ndim, SHAPE_MISMATCH)
    # truth values folded as bytes: partials live in memory, which has no i1
    every = Reduction("all", types.uint8, min, 1)
    i8 = ir.IntegerType.get_signless(8)

    def body(indices, accs):
        close = arith.ExtUIOp(i8, _allclose_item(c, *c.values(indices))).result
        return [every.combine(accs[0], close)]
    (result,) = fold_box(lw, extents, [every], body)
    return arith.CmpIOp(arith.CmpIPredicate.ne, result, const(types.uint8, 0)).result
