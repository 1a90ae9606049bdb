"""Conversions between Numba scalar types, with Numba's semantics."""
from __future__ import annotations

from numba.core import types

from .._mlir import arith, ir
from .build import cmpf, cmpi, const
from .errors import UnsupportedConstructError
from .types import is_scalar, scalar_type


def _unliteral(ty: types.Type) -> types.Type:
    return types.unliteral(ty)


def truth(value: ir.Value, ty: types.Type) -> ir.Value:
    """`bool(value)` as an i1."""
    ty = _unliteral(ty)
    if isinstance(ty, types.Boolean):
        return value
    if isinstance(ty, types.Float):
        return cmpf("UNE", value, const(ty, 0.0))
    return cmpi("ne", value, const(ty, 0))


def cast(value: ir.Value, fromty: types.Type, toty: types.Type) -> ir.Value:
    fromty, toty = _unliteral(fromty), _unliteral(toty)
    if fromty == toty:
        return value
    if not (is_scalar(fromty) and is_scalar(toty)):
        return value          # compound values keep their representation
    if isinstance(toty, types.Boolean):
        return truth(value, fromty)
    target = scalar_type(toty)
    if isinstance(fromty, types.Boolean):
        if isinstance(toty, types.Float):
            return arith.UIToFPOp(target, value).result
        return arith.ExtUIOp(target, value).result
    if isinstance(fromty, types.Integer):
        if isinstance(toty, types.Float):
            op = arith.SIToFPOp if fromty.signed else arith.UIToFPOp
            return op(target, value).result
        if toty.bitwidth > fromty.bitwidth:
            op = arith.ExtSIOp if fromty.signed else arith.ExtUIOp
            return op(target, value).result
        if toty.bitwidth < fromty.bitwidth:
            return arith.TruncIOp(target, value).result
        return value
    # from float
    if isinstance(toty, types.Integer):
        op = arith.FPToSIOp if toty.signed else arith.FPToUIOp
        return op(target, value).result
    if toty.bitwidth > fromty.bitwidth:
        return arith.ExtFOp(target, value).result
    if toty.bitwidth < fromty.bitwidth:
        return arith.TruncFOp(target, value).result
    return value


def float_operands(args, sig, expr) -> list:
    """The arguments as the (float) result type, as NumPy's ufunc loops do."""
    resty = types.unliteral(sig.return_type)
    if not isinstance(resty, types.Float):
        raise UnsupportedConstructError(
            f"{getattr(expr.func, 'name', 'this function')} returning {resty}", expr.loc)
    return [cast(a, t, resty) for a, t in zip(args, sig.args)]
