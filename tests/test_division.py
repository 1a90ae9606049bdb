"""compiler/division.py: divisions by a loop-invariant divisor through one
reciprocal and two FMAs give the bits of IEEE division.

The rewrite is JIT-ed on the CPU (MLIR's ExecutionEngine; llvm.fma is a
fused multiply-add there too) and compared bit for bit with NumPy's
division over dividends and divisors of every kind: random significands
over the whole exponent range, significands of all ones, the range limits
of the fast path, zeros, infinities, NaN and subnormals. On the GPU, a
row kernel that divides by its row's sum is compared the same way.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from numba import prange

from numba_mlir_gpu import inspect_ptx, njit
from numba_mlir_gpu._mlir import ExecutionEngine, ir, passmanager
from numba_mlir_gpu.compiler.division import reciprocal_division_in_kernels
from numba_mlir_gpu.frontend.wrapper import CompileOnlyError

LOOP = """
func.func @divide(%a: memref<?x{t}>, %d: memref<?x{t}>, %out: memref<?x{t}>)
    attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?x{t}>
  %m = memref.dim %d, %c0 : memref<?x{t}>
  %slot = memref.alloca() : memref<{t}>
  scf.for %j = %c0 to %m step %c1 {{
    %divisor = memref.load %d[%j] : memref<?x{t}>
    memref.store %divisor, %slot[] : memref<{t}>
    scf.for %i = %c0 to %n step %c1 {{
      %x = memref.load %a[%i] : memref<?x{t}>
      %b = memref.load %slot[] : memref<{t}>
      %q = arith.divf %x, %b : {t}
      %k = arith.muli %j, %n : index
      %at = arith.addi %k, %i : index
      memref.store %q, %out[%at] : memref<?x{t}>
    }}
  }}
  return
}}
"""
TO_LLVM = ("builtin.module(convert-scf-to-cf,convert-math-to-llvm,finalize-memref-to-llvm,"
           "convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,"
           "reconcile-unrealized-casts)")


def _divide_all(a: np.ndarray, d: np.ndarray, rewrite: bool = True) -> np.ndarray:
    """out[j, i] = a[i] / d[j] through the loop above, rewritten."""
    from mlir.runtime import get_ranked_memref_descriptor
    t = "f64" if a.dtype == np.float64 else "f32"
    out = np.empty(len(a) * len(d), a.dtype)
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(LOOP.format(t=t))
        if rewrite:
            reciprocal_division_in_kernels(module, in_kernels_only=False)
            assert str(module).count("arith.divf") == 2    # the reciprocal and the slow path
        passmanager.PassManager.parse(TO_LLVM).run(module.operation)
        engine = ExecutionEngine(module, opt_level=2)
        engine.invoke("divide", *[ctypes.pointer(ctypes.pointer(get_ranked_memref_descriptor(x)))
                                  for x in (a, d, out)])
    return out.reshape(len(d), len(a))


def _bits_equal(got: np.ndarray, expected: np.ndarray) -> None:
    both_nan = np.isnan(got) & np.isnan(expected)
    same = (got.view(f"u{got.itemsize}") == expected.view(f"u{got.itemsize}")) | both_nan
    if not same.all():
        j, i = np.argwhere(~same)[0]
        raise AssertionError(f"{(~same).sum()} quotients differ, first at [{j}, {i}]: "
                             f"{got[j, i]!r} != {expected[j, i]!r}")


def _values(dtype, count: int, seed: int) -> np.ndarray:
    """Random values of every exponent and sign, and the special ones."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(seed)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    raw = rng.integers(0, np.iinfo(bits).max, count, dtype=bits, endpoint=True).view(dtype)
    ones = np.frombuffer(np.array([(1 << info.nmant) - 1], dtype=bits).tobytes(), dtype)[0]
    limit = 400 if dtype == np.float64 else 40
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, info.tiny, info.tiny / 4, -info.smallest_subnormal,
               info.max, -info.max, 1.0, -1.0, 3.0, 1 / 3, 0.1, 1 - info.eps / 2, 1 + info.eps,
               2.0 ** -limit, 2.0 ** limit, np.nextafter(dtype(2.0 ** -limit), dtype(0)),
               np.nextafter(dtype(2.0 ** limit), dtype(np.inf)), 1.0 + ones, 2.0 - info.eps]
    scaled = rng.uniform(1, 2, count).astype(dtype) * np.exp2(
        rng.integers(-limit - 4, limit + 4, count)).astype(dtype)
    return np.concatenate([np.array(special, dtype), raw, scaled, -scaled]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reciprocal_division_gives_the_bits_of_ieee_division(dtype):
    a = _values(dtype, 20000, 1)
    d = _values(dtype, 40, 2)
    with np.errstate(all="ignore"):
        expected = a[None, :] / d[:, None]
    _bits_equal(_divide_all(a, d), expected)


def test_float32_dividends_in_float64():
    """The row softmax's case: float32 values divided in float64."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(50000).astype(np.float32).astype(np.float64)
    d = np.concatenate([rng.uniform(1, 3000, 30), [1024.0, 1000.0 / 3]])
    _bits_equal(_divide_all(a, d), a[None, :] / d[:, None])


def test_divisions_that_stay():
    """A divisor that changes in the loop, and one with fast-math flags."""
    text = LOOP.format(t="f64")
    changing = text.replace("%b = memref.load %slot[] : memref<f64>",
                            "%b = memref.load %a[%i] : memref<?xf64>")
    fast = text.replace("arith.divf %x, %b : f64", "arith.divf %x, %b fastmath<arcp> : f64")
    stored_inside = text.replace("%q = arith.divf %x, %b : f64",
                                 "%q = arith.divf %x, %b : f64\n"
                                 "      memref.store %q, %slot[] : memref<f64>")
    for source in (changing, fast, stored_inside):
        with ir.Context(), ir.Location.unknown():
            module = ir.Module.parse(source)
            reciprocal_division_in_kernels(module, in_kernels_only=False)
            assert str(module).count("arith.divf") == 1 and "math.fma" not in str(module)


def row_divide(x, d, out):
    for i in prange(x.shape[0]):
        t = d[i]
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] / t


def _rows(dtype):
    x = _values(dtype, 2000, 4)[:4096]
    rows = len(x) // 64
    return x[:rows * 64].reshape(rows, 64).copy(), _values(dtype, 40, 5)[:rows]


def test_kernels_divide_through_the_reciprocal():
    """The PTX of a row kernel dividing by its row's value: FMAs, and the
    IEEE division only for the reciprocal and the slow path."""
    x, d = _rows(np.float64)
    f = njit(target="compile-only")(row_divide)
    with pytest.raises(CompileOnlyError):
        f(x, d, np.empty_like(x))
    ptx = "\n".join(inspect_ptx(f, f.signatures[0]))
    assert "fma.rn.f64" in ptx and "div.rn.f64" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_division_on_the_gpu_gives_numpys_bits(dtype):
    x, d = _rows(dtype)
    out = np.empty_like(x)
    njit(target="gpu")(row_divide)(x, d, out)
    with np.errstate(all="ignore"):
        _bits_equal(out, x / d[:, None])
