"""Complex numbers: building blocks shared by the rules (rules/complexes.py)
and the reductions (parallel/reduction.py).

A complex value is one SSA value of MLIR's `complex<f32>`/`complex<f64>`;
in memory (slots, array elements) it is the same type, which the LLVM
lowering makes a struct {float, float}: NumPy's and Numba's layout. Where
the `complex` dialect's lowering (convert-complex-to-standard) computes
otherwise than Numba, the operation is written here on the two parts in
arith, as Numba's own implementation (numba/cpython/numbers.py) does.
"""
from __future__ import annotations

from numba.core import types

from .._mlir import arith, complex_dialect, ir
from .types import scalar_type


def part_type(ty: types.Complex) -> types.Float:
    """float32 for complex64, float64 for complex128."""
    return ty.underlying_float


def parts(z: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(real, imaginary) of a complex value."""
    return complex_dialect.ReOp(z).result, complex_dialect.ImOp(z).result


def make(real: ir.Value, imag: ir.Value, ty: types.Complex) -> ir.Value:
    return complex_dialect.CreateOp(scalar_type(ty), real, imag).result


def add(a: ir.Value, b: ir.Value) -> ir.Value:
    return complex_dialect.AddOp(a, b).result


def mul(a: ir.Value, b: ir.Value, ty: types.Complex) -> ir.Value:
    """(ar*br - ai*bi) + (ar*bi + ai*br)j, as Numba's complex_mul_impl.
    Not complex.mul: its standard lowering recovers infinities from NaN
    results (C99 Annex G), which Numba and NumPy do not."""
    (ar, ai), (br, bi) = parts(a), parts(b)
    real = arith.SubFOp(arith.MulFOp(ar, br).result, arith.MulFOp(ai, bi).result).result
    imag = arith.AddFOp(arith.MulFOp(ar, bi).result, arith.MulFOp(ai, br).result).result
    return make(real, imag, ty)
