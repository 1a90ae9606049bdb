"""Conversions between Numba scalar types, with Numba's semantics."""
from __future__ import annotations

from numba.core import types

from .._mlir import arith, ir
from . import complexes, datetimes
from .build import cmpf, cmpi, const
from .errors import UnsupportedConstructError
from .types import is_datetime, is_scalar, scalar_type
from .values import TupleValue


def _unliteral(ty: types.Type) -> types.Type:
    return types.unliteral(ty)


def truth(value: ir.Value, ty: types.Type) -> ir.Value:
    """`bool(value)` as an i1."""
    ty = _unliteral(ty)
    if isinstance(ty, types.Boolean):
        return value
    if isinstance(ty, types.Float):
        return cmpf("UNE", value, const(ty, 0.0))
    if isinstance(ty, types.Complex):
        zero = const(complexes.part_type(ty), 0.0)
        real, imag = complexes.parts(value)
        return arith.OrIOp(cmpf("UNE", real, zero), cmpf("UNE", imag, zero)).result
    return cmpi("ne", value, const(ty, 0))


def cast(value, fromty: types.Type, toty: types.Type):
    """`value` of `fromty` as a value of `toty`: scalars converted as Numba's
    `context.cast` does, tuples item by item, other values as they are."""
    fromty, toty = _unliteral(fromty), _unliteral(toty)
    if isinstance(value, TupleValue):
        return _cast_tuple(value, toty)
    if fromty == toty:
        return value
    if not (is_scalar(fromty) and is_scalar(toty)):
        return value          # arrays and compile-time values keep their representation
    if isinstance(toty, types.Boolean):
        return truth(value, fromty)
    if is_datetime(fromty) or is_datetime(toty):
        return datetimes.cast(value, fromty, toty)
    if isinstance(toty, types.Complex) or isinstance(fromty, types.Complex):
        return _cast_complex(value, fromty, toty)
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


def _cast_complex(value, fromty: types.Type, toty: types.Type):
    """Numba's casts to complex: a real number becomes the real part (the
    imaginary part +0.0); complex to complex converts both parts. Numba has
    no implicit cast from complex to a real type."""
    if not isinstance(toty, types.Complex):
        raise UnsupportedConstructError(f"converting {fromty} to {toty}")
    part = complexes.part_type(toty)
    if isinstance(fromty, types.Complex):
        real, imag = (cast(p, complexes.part_type(fromty), part)
                      for p in complexes.parts(value))
    else:
        real, imag = cast(value, fromty, part), const(part, 0.0)
    return complexes.make(real, imag, toty)


def _cast_tuple(value: TupleValue, toty: types.Type):
    """A tuple's items converted one by one. The tuple's own type, not the
    variable's, says what its items are: a tuple returned by a function
    whose signature declares another tuple type (`UniTuple(i4, 2)` of a body
    computing int64s) holds the items the body computed."""
    if not isinstance(toty, types.BaseTuple) or len(toty) != len(value.items) \
            or value.type == toty:
        return value
    items = [cast(item, ity, rty)
             for item, ity, rty in zip(value.items, value.type.types, toty.types)]
    return TupleValue(items, toty)


def float_operands(args, sig, expr) -> list:
    """The arguments as the (float) result type, as NumPy's ufunc loops do."""
    resty = types.unliteral(sig.return_type)
    if not isinstance(resty, types.Float):
        raise UnsupportedConstructError(
            f"{getattr(expr.func, 'name', 'this function')} returning {resty}", expr.loc)
    return [cast(a, t, resty) for a, t in zip(args, sig.args)]
