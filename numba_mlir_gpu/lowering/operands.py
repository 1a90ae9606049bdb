"""The operands of NumPy calls: by parameter name, the array, the axis, and
the lines of an array along a run-time axis."""
from __future__ import annotations

from numba.core import types
from numba.np.arraymath import axis_bound_err

from .._mlir import arith, ir
from .arrays import shape_of
from .build import cmpi, const_i64, const_index, select, to_i64, to_index
from .casts import cast
from .errors import UnsupportedConstructError
from .values import ArrayValue


def call_operands(lw, args: list, sig, expr, names: tuple) -> dict:
    """The lowered operands by parameter name: positional then keywords, each
    as (value, numba type); absent ones are missing from the dict."""
    found = {name: (value, types.unliteral(ty))
             for name, value, ty in zip(names, args, sig.args)}
    for name, var in expr.kws:
        found[name] = (lw.read(var), types.unliteral(lw.typeof(var.name)))
    return {name: item for name, item in found.items()
            if not isinstance(item[1], (types.NoneType, types.Omitted))}


def constant_operand(lw, expr, names: tuple, name: str):
    """The compile-time value of operand `name` (positional or keyword) when
    its type is a literal, else None."""
    variables = dict(zip(names, expr.args))
    variables.update(dict(expr.kws))
    var = variables.get(name)
    if var is None:
        return None
    return getattr(lw.typeof(var.name), "literal_value", None)


def array_operand(operands: dict, function: str, expr) -> ArrayValue:
    value, ty = operands.get("a", (None, None))
    if not isinstance(value, ArrayValue):
        raise UnsupportedConstructError(f"{function} of {ty}", expr.loc)
    return value


def flat_index(counters: list, extents: list) -> ir.Value:
    """Row-major position (i64) of the index values `counters` in `extents`."""
    flat = const_index(0)
    for counter, extent in zip(counters, extents):
        flat = arith.AddIOp(arith.MulIOp(flat, extent).result, counter).result
    return to_i64(flat)


def axis_value(lw, operand, array: ArrayValue, expr, error=None) -> ir.Value:
    """The axis as an i64 in [0, ndim), negative values counted from the end;
    an axis out of bounds raises `error` (class, message; by default NumPy's
    AxisError) after the statement (the loops meanwhile use axis 0, so they
    stay in bounds)."""
    value, ty = operand
    if not isinstance(ty, types.Integer):
        raise UnsupportedConstructError(f"an axis of type {ty}", expr.loc)
    ndim = const_i64(array.type.ndim)
    axis = cast(value, ty, types.int64)
    axis = select(cmpi("slt", axis, const_i64(0)), arith.AddIOp(axis, ndim).result, axis)
    bad = arith.OrIOp(cmpi("slt", axis, const_i64(0)), cmpi("sge", axis, ndim)).result
    error = error or (axis_bound_err,
                      f"axis is out of bounds for array of dimension {array.type.ndim}")
    lw.errors.raise_if(lw, bad, lw.errors.code(error[0], error[1:]))
    return select(bad, const_i64(0), axis)


class AxisLines:
    """The lines of `array` along a run-time `axis`: the output box (the shape
    without that axis), the line length and the element at (output index, k)."""

    def __init__(self, lw, array: ArrayValue, axis: ir.Value):
        self.array = array
        self.axis = to_index(axis)
        shape = shape_of(array)
        ndim = len(shape)
        self.length = shape[0]
        for d in range(1, ndim):
            self.length = select(self._is(d, "eq"), shape[d], self.length)
        # Output dimension j is input dimension j before the axis, j + 1 after it.
        self.out_extents = [select(self._is(j, "ugt"), shape[j], shape[j + 1])
                            for j in range(ndim - 1)]

    def _is(self, d: int, pred: str) -> ir.Value:
        """`axis <pred> d`, e.g. "ugt": the axis comes after dimension d."""
        return cmpi(pred, self.axis, const_index(d))

    def count(self) -> ir.Value:
        total = const_i64(1)
        for extent in self.out_extents:
            total = arith.MulIOp(total, to_i64(extent)).result
        return total

    def element(self, out_indices: list, k: ir.Value) -> list[ir.Value]:
        ndim = len(out_indices) + 1
        indices = []
        for d in range(ndim):
            before = out_indices[d] if d < ndim - 1 else k      # d < axis
            after = out_indices[d - 1] if d > 0 else k           # d > axis
            chosen = select(self._is(d, "ugt"), before, after)
            indices.append(select(self._is(d, "eq"), k, chosen))
        return indices
