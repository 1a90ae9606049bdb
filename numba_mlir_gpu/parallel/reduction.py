"""Reductions: the variables a loop accumulates, how two partial results
combine, and where they start.

A reduction covers one variable (`Reduction`: `+`, `*`, min, max) or several
updated together (`SelectReduction`: "best value and its index";
last_values.LastValue: a variable read after the loop). All expose the same
few members, so the loop builders treat them alike: `names` and `types` of
the accumulated variables, `identity_values()` to start a partial from,
`values_before()` (the variables' values before the loop) and
`combine_values(a, b)` to merge two partials (lists in the order of
`names`); `combine_values` is associative, and partials started from the
identity merge to what the serial loop computes.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
from numba.core import types

from .._mlir import arith, ir
from ..lowering import complexes, datetimes
from ..lowering.build import cmpf, cmpi, const, select
from ..lowering.types import is_datetime, scalar_type

# Combining operators of np.max / np.min: NaN-propagating extremes (as NumPy).
NAN_MAX, NAN_MIN = np.maximum, np.minimum


def extreme_identity(dtype: types.Type, largest: bool):
    """The start of a max (largest) or min fold: -inf/+inf or the integer limits."""
    if isinstance(dtype, types.Float):
        return float("-inf") if largest else float("inf")
    if is_datetime(dtype):
        return datetimes.extreme_identity(largest)
    info = np.iinfo(np.dtype(str(dtype)))
    return info.min if largest else info.max


_DATETIME_COMBINE = {operator.add: "add", max: "max", min: "min", NAN_MAX: "nat_max",
                     NAN_MIN: "nat_min"}


@dataclass
class Reduction:
    name: str
    type: types.Type
    combine_op: object       # operator.add / operator.mul / min / max, or NAN_MAX / NAN_MIN
    identity: object         # a Python number, or None: start from `initial`
    initial: ir.Value = None     # the variable's value before the loop

    def identity_value(self) -> ir.Value:
        # min and max are idempotent: the value before the loop serves.
        return self.initial if self.identity is None else const(self.type, self.identity)

    def combine(self, a: ir.Value, b: ir.Value) -> ir.Value:
        if isinstance(self.type, types.Complex):    # + and * only (Numba types no other)
            if self.combine_op is operator.add:
                return complexes.add(a, b)
            return complexes.mul(a, b, self.type)
        if is_datetime(self.type):      # NaT-aware (lowering/datetimes.py)
            return datetimes.combine(_DATETIME_COMBINE.get(self.combine_op, "other"), a, b)
        float_ = isinstance(self.type, types.Float)
        signed = getattr(self.type, "signed", False)
        if self.combine_op is operator.add:
            return (arith.AddFOp if float_ else arith.AddIOp)(a, b).result
        if self.combine_op is operator.mul:
            return (arith.MulFOp if float_ else arith.MulIOp)(a, b).result
        if float_ and self.combine_op in (NAN_MAX, NAN_MIN):
            # a NaN on either side wins; ties keep `a`, as NumPy's max/min
            better = cmpf("OGT" if self.combine_op is NAN_MAX else "OLT", b, a)
            return select(arith.OrIOp(cmpf("UNO", b, b), better).result, b, a)
        if float_:
            less = cmpf("OLT", b, a) if self.combine_op in (min, NAN_MIN) else cmpf("OGT", b, a)
        else:
            pred = ("s" if signed else "u") + ("lt" if self.combine_op in (min, NAN_MIN) else "gt")
            less = cmpi(pred, b, a)
        return select(less, b, a)

    @property
    def mlir_type(self) -> ir.Type:
        return scalar_type(self.type)

    # the protocol shared with SelectReduction
    @property
    def names(self) -> list:
        return [self.name]

    @property
    def types(self) -> list:
        return [self.type]

    def identity_values(self) -> list:
        return [self.identity_value()]

    def values_before(self) -> list:
        return [self.initial]

    def combine_values(self, a: list, b: list) -> list:
        return [self.combine(a[0], b[0])]


# `candidate <op> key` -> whether the candidate replaces the current best
_STRICT = {"lt": "lt", "le": "lt", "gt": "gt", "ge": "gt"}
_PREDICATES = {"lt": ("OLT", "slt", "ult"), "le": ("OLE", "sle", "ule"),
               "gt": ("OGT", "sgt", "ugt"), "ge": ("OGE", "sge", "uge")}


def compare(op: str, a: ir.Value, b: ir.Value, ty: types.Type) -> ir.Value:
    """`a <op> b` ("lt", "le", "gt", "ge") in the order of the scalar type `ty`
    (false when a float operand is NaN)."""
    fp, signed, unsigned = _PREDICATES[op]
    if isinstance(ty, types.Float):
        return cmpf(fp, a, b)
    return cmpi(signed if getattr(ty, "signed", False) else unsigned, a, b)


@dataclass
class SelectReduction:
    """`if candidate <op> key: key = candidate; payload = ...` in a loop: the
    key and its payload (the index of the best element, say) are replaced
    together when a candidate beats the key. A hidden position variable
    (the iteration that last replaced them; -1 for the values before the
    loop) breaks ties as the serial loop does: with a strict comparison the
    earliest candidate wins, with <= or >= the latest."""
    names: list           # the key, the payload variables, then the position
    types: list
    op: str               # "lt", "le", "gt", "ge": how a candidate beats the key
    initial: list = None  # the values before the loop (the position: -1)

    def identity_values(self) -> list:
        return list(self.initial)

    def values_before(self) -> list:
        return list(self.initial)

    def combine_values(self, a: list, b: list) -> list:
        """b's values when b's key beats a's, or ties it from a position the
        serial loop keeps: the earlier one (strict) or the later (<=, >=)."""
        key_type, position = self.types[0], len(self.names) - 1
        beats = compare(_STRICT[self.op], b[0], a[0], key_type)
        ties = (cmpf("OEQ", b[0], a[0]) if isinstance(key_type, types.Float)
                else cmpi("eq", b[0], a[0]))
        # ties: b wins when the serial loop would have kept b's element
        b_kept = cmpi("slt" if self.op in ("lt", "gt") else "sgt", b[position], a[position])
        take = arith.OrIOp(beats, arith.AndIOp(ties, b_kept).result).result
        return [select(take, y, x) for x, y in zip(a, b)]
