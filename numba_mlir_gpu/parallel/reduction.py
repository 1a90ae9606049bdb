"""A scalar reduction: its type, its combining operator and its start."""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
from numba.core import types

from .._mlir import arith, ir
from ..lowering.build import cmpf, cmpi, const, select
from ..lowering.types import scalar_type

# Combining operators of np.max / np.min: NaN-propagating extremes (as NumPy).
NAN_MAX, NAN_MIN = np.maximum, np.minimum


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
