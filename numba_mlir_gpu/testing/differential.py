"""Differential sweep of the NumPy surface of docs/supported.md (issue 18, item 1).

Every entry (a ufunc, an operator, an array expression, a reduction with or without
`axis`, a NumPy function or method, a `prange` form of the elementwise ones, a
builtin on scalars) is compiled by our `njit` for one target (fallback off, so the
MLIR lowering itself is tested) and run over a grid of

* dtypes: bool, int8 ... int64, uint8 ... uint64, float32, float64 (and, for a few
  binary entries, every pair of them);
* layouts, one compiled signature each: 1-d C, 1-d non-contiguous (steps, negative
  strides), 2-d C, 2-d Fortran, 2-d `A` (slices with negative steps, transposed
  slices, zero-stride broadcast views), 2-d readonly broadcast views
  (`np.broadcast_to`), 3-d C; NumPy and Python scalar arguments;
* shapes: 0-size, 1, odd primes, powers of two, more than a GPU block (1031, 4099)
  and, in the full grid, more than one pass of the GPU grids (2**20 + 3);
* values: float specials (+-0, +-inf, nan, subnormals, max, halves for rounding),
  integer extremes (min, max, -1, 0), random values; several value sets per shape;
* arrays on the host, and on the GPU target also CuPy device arrays (when importable).

A *case* is one call of a compiled function on one set of inputs, compared with its
oracle (ORACLES below): NumPy, or stock `numba.njit` where Numba's typing or
semantics deliberately differ from NumPy's (the project's standard is Numba's CPU
compilation). Compilation happens once per signature; each signature then runs
many shapes and values.

Outcomes of a case: `pass`; `documented` (a difference listed in docs/supported.md,
DOCUMENTED below); `mismatch` and `error` (failures); per signature: `n/a` (stock Numba
refuses it too) and `unsupported` (we raise UnsupportedConstructError where stock Numba
compiles; must match KNOWN_UNSUPPORTED, else it is a failure).

Run the sweep from the command line (counts, failures, timings):

    python -m numba_mlir_gpu.testing.differential --target cpu --jobs 2 [--full]

or through pytest, tests/test_differential_numpy.py (NUMBA_MLIR_GPU_SWEEP=full for the
full grid; the default is a fixed, seeded sample). See docs/testing.md.
"""
from __future__ import annotations

import argparse
import datetime
import zlib
import itertools
import linecache
import math
import os
import re
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .isolated import run_isolated

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64")
INTS = DTYPES[1:9]
SIGNED = DTYPES[1:5]
FLOATS = ("float32", "float64")
COMPLEX = ("complex64", "complex128")       # swept for the entries of COMPLEX_ENTRIES
NUMERIC = DTYPES[1:]
ENV_SWEEP = "NUMBA_MLIR_GPU_SWEEP"
SEED = 20261125
LARGE = 2 ** 20 + 3       # more than one pass of any GPU grid the schedules use


def kind_of(dtype: str) -> str:
    return np.dtype(dtype).kind       # 'b', 'i', 'u', 'f', 'c'


# --------------------------------------------------------------------------------------
# Tolerances: one table. Integers and booleans are always exact.
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tolerance:
    kind: str            # "exact", "ulp", "cnorm", "clog", "sum", "prod", "var"
    f32: float = 0
    f64: float = 0
    reason: str = ""

    def bound(self, dtype) -> float:
        return self.f32 if np.dtype(dtype) in (np.float32, np.complex64) else self.f64


TOLERANCES = {
    "exact": Tolerance("exact", reason="correctly rounded IEEE operations (+ - * / sqrt, "
                       "rounding, min/max, copysign, fmod, comparisons, casts, ldexp), "
                       "selections and copies: bit for bit (NaN equal to NaN, the sign of "
                       "zero checked)"),
    "libm": Tolerance("ulp", 4, 4, "transcendental functions: neither NumPy (its own SIMD "
                      "float32 kernels, glibc) nor MLIR's math lowering, glibc or "
                      "libdevice (GPU kernels) is correctly rounded; each is documented "
                      "within 1-4 ulp, so two of them differ by at most their sum"),
    "pow": Tolerance("ulp", 4, 4, "pow, arctan2, hypot, cbrt: as libm"),
    "fma": Tolerance("fma", 1, 1, "a * b + c in GPU kernels, contracted to one FMA as CUDA's "
                     "compilers do (docs/design.md): one rounding fewer, so the result "
                     "differs from the IEEE sequence by at most the product's rounding "
                     "error plus the sum's: |ours - oracle| <= eps*|a*b| + ulp(oracle)"),
    "fma_sqrt": Tolerance("ulp", 2, 2, "np.sqrt(a*a + b*b) in GPU kernels, contracted: the "
                          "radicand's extra error eps*a*a is at most half an ulp of the "
                          "root after the square root"),
    "libm2": Tolerance("ulp", 8, 8, "a product of two libm results (np.exp(-a) * "
                       "np.sin(b)): each factor within 4 ulp, so their relative errors "
                       "add"),
    "operands": Tolerance("operands", 8, 8, "logaddexp, logaddexp2: max(x, y) + "
                          "log1p(exp(-|x - y|)) cancels near 0, so libm's ulps (and in GPU "
                          "kernels the contraction of y + LOG2E * log1p(...) to an FMA) are "
                          "ulps of the larger operand: |ours - oracle| <= 8 eps max(|x|, |y|) "
                          "+ ulp(oracle)"),
    "scaled": Tolerance("ulp", 2, 2, "deg2rad, rad2deg: one multiplication by a constant "
                        "rounded to the argument's type (Numba's 180/pi, NumPy's float32 "
                        "180.0f/NPY_PIf): constants 1 ulp apart, each product rounded once"),
    "sum": Tolerance("sum", 1, 1, "sums, means, cumulative sums, dot products: the order "
                     "of the additions differs (NumPy pairwise, ours chunked or a tree, "
                     "libdevice FMA contraction in kernels); both results are within "
                     "n*eps*sum(|x|) of the exact sum, so "
                     "|ours - oracle| <= 2*n*eps*sum(|x|) (times the factor in the table)"),
    "prod": Tolerance("prod", 1, 1, "products: order differs; each product is within "
                      "n*eps relative, so |ours - oracle| <= 2*n*eps*|oracle| "
                      "(plus the smallest normal, for underflow)"),
    "var": Tolerance("var", 1, 1, "var: two passes (mean, then squares) whose "
                     "sums are ordered differently: |ours - oracle| <= 8*n*eps*mean(x^2)"),
    "std": Tolerance("std", 1, 1, "std: the var bound B through the square root: "
                     "|ours - oracle| <= max(B / (2*std), sqrt(B))"),
    # complex64/complex128 (COMPLEX_ENTRIES): parts compared one by one
    "c_exact": Tolerance("exact", reason="complex + - neg conj == != isnan ...: computed part "
                         "by part with IEEE operations, Numba's formulas: bit for bit"),
    "c_norm": Tolerance("cnorm", 4, 4, "complex * / abs square: each part within 4 ulp of "
                        "|oracle| (normwise: a part that cancels has no relative bound; "
                        "abs is our hypot, within an ulp of libm's)"),
    "c_libm": Tolerance("cnorm", 8, 8, "complex exp log sqrt sin cos tan log10 log2 power, "
                        "sinh cosh tanh and the inverse functions: "
                        "Numba's formulas over libm (or libdevice) functions, each within 4 "
                        "ulp: each part within 8 ulp of |oracle|"),
    "c_log": Tolerance("clog", 8, 8, "complex log log10 log2 arccosh: as c_libm, and the real part "
                       "log|z| within 8 eps absolute: an ulp of |z| (a hypot within an ulp "
                       "of libm's) is a relative error eps, an absolute eps/ln(base) in the "
                       "logarithm, however small it is near |z| = 1"),
}


# --------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------

COMPLEX_PART_SPECIALS = (0.0, -0.0, 1.0, -1.5, 0.1, np.inf, -np.inf, np.nan, "tiny", "max",
                         "subnormal")


def specials(dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "c":          # every pair of a few float specials
        fi = np.finfo(dt)
        named = {"tiny": float(fi.tiny), "max": float(fi.max),
                 "subnormal": float(fi.smallest_subnormal)}
        parts = [named.get(v, v) if isinstance(v, str) else v for v in COMPLEX_PART_SPECIALS]
        return np.array([complex(r, i) for r in parts for i in parts], dt)
    if dt.kind == "b":
        return np.array([False, True, True, False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = [0, 1, 2, 3, 5, 7, 12, 64, 100, info.max, info.max - 1, info.max // 2]
        if info.min < 0:
            v += [-1, -2, -3, -7, -100, info.min, info.min + 1, info.min // 2]
        return np.array(sorted(set(v)), dt)
    fi = np.finfo(dt)
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 0.1, -0.3, 3.0, 1e-3, 100.0,
         np.pi, -np.pi, 20.0, np.inf, -np.inf, np.nan,
         float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
         float(fi.tiny), float(fi.max), -float(fi.max), 1e30 if dt == np.float32 else 1e200]
    return np.array(v, dt)


def moderate(dtype: str, n: int, rng) -> np.ndarray:
    """Random values with no overflow in a sum of n of them."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if rng.random() < 0.5:
            return rng.integers(info.min, int(info.max) + 1, n, dtype=dt)
        lo = -50 if info.min < 0 else 0
        return rng.integers(lo, 51, n).astype(dt)
    scale = 10.0 ** rng.integers(-3, 4)
    if dt.kind == "c":
        return ((rng.standard_normal(n) + 1j * rng.standard_normal(n)) * scale).astype(dt)
    return (rng.standard_normal(n) * scale).astype(dt)


def mixed(dtype: str, n: int, rng) -> np.ndarray:
    """Specials and random values, shuffled (a random subset of the specials when n is
    smaller than their number)."""
    s = specials(dtype)
    out = np.concatenate([s, moderate(dtype, max(n - len(s), 0), rng)])
    return out[rng.permutation(len(out))][:n].astype(np.dtype(dtype))


# Value sets: name -> function(dtype, n, rng) for each array argument.
def _with(x, rng, value):
    """x with one element set to value (floats only; other dtypes unchanged)."""
    if x.dtype.kind != "f" or not x.size:
        return x
    x = x.copy()
    x[rng.integers(0, x.size)] = value
    return x


def _ties(dt, n, rng):
    """Few distinct values: ties for argmin/argmax, zeros for nonzero, -0.0 and 0.0."""
    if kind_of(dt) == "f":
        return np.where(rng.random(n) < 0.3, -0.0, rng.integers(-1, 2, n)).astype(dt)
    return (rng.integers(0, 3, n) - (1 if kind_of(dt) == "i" else 0)).astype(dt)


VALUE_SETS = {
    # elementwise: everything
    "mixed": lambda dt, n, rng: mixed(dt, n, rng),
    "random": lambda dt, n, rng: moderate(dt, n, rng),
    # reductions: no huge finite values (their overflow depends on the order)
    "plain": lambda dt, n, rng: moderate(dt, n, rng),
    "nan": lambda dt, n, rng: _with(moderate(dt, n, rng), rng, np.nan),
    "inf": lambda dt, n, rng: _with(_with(moderate(dt, n, rng), rng, np.inf), rng, -np.inf),
    "pinf": lambda dt, n, rng: _with(moderate(dt, n, rng), rng, np.inf),
    "ties": _ties,
}


# --------------------------------------------------------------------------------------
# Layouts: a shape list and a view maker each; the view maker works on NumPy and CuPy.
# --------------------------------------------------------------------------------------

SHAPES_1D = [0, 1, 2, 3, 7, 31, 32, 64, 127, 256, 1031, 4099]
SHAPES_2D = [(0, 3), (3, 0), (1, 1), (1, 7), (7, 1), (3, 5), (32, 33), (64, 64), (129, 17),
             (5, 1031)]
SHAPES_3D = [(0, 2, 3), (1, 1, 1), (2, 3, 5), (7, 4, 33), (3, 64, 2)]


def _strided(xp, x, shape, strides):
    return xp.lib.stride_tricks.as_strided(x, shape, strides)


@dataclass(frozen=True)
class Layout:
    name: str
    ndim: int
    # (shape) -> (base shape, view function(xp, base) -> array of `shape`)
    views: Callable


def _views_c(shape):
    return [(shape, lambda xp, b: b)]


def _views_f(shape):
    return [(shape, lambda xp, b: xp.asfortranarray(b))]


def _views_a1(n):
    return [((2 * n + 1,), lambda xp, b: b[1::2]),
            ((n,), lambda xp, b: b[::-1]),
            ((3 * n,), lambda xp, b: b[3 * n - 1::-3] if n else b[:0])]


def _views_a2(shape):
    r, c = shape
    out = [((2 * r + 1, c + 1), lambda xp, b: b[1::2, c - 1::-1] if c else b[1::2, :0]),
           ((c + 1, r), lambda xp, b: b[1:, :].T)]
    if r * c:
        out.append(((c,), lambda xp, b: _zero_stride(xp, b, (r, c), row=True)))
        out.append(((r,), lambda xp, b: _zero_stride(xp, b, (r, c), row=False)))
    return out


def _zero_stride(xp, b, shape, row):
    s = b.strides[0]
    return _strided(xp, b, shape, (0, s) if row else (s, 0))


def _views_ro(shape):
    r, c = shape
    return [((c,), lambda xp, b: np.broadcast_to(b, (r, c)) if xp is np
             else xp.broadcast_to(b, (r, c)))]


LAYOUTS = {
    "c1": Layout("c1", 1, lambda n: _views_c((n,))),
    "a1": Layout("a1", 1, _views_a1),
    "c2": Layout("c2", 2, _views_c),
    "f2": Layout("f2", 2, _views_f),
    "a2": Layout("a2", 2, _views_a2),
    "ro2": Layout("ro2", 2, _views_ro),
    "c3": Layout("c3", 3, _views_c),
}


SAMPLE_LAYOUTS = ("c1", "a2", "f2", "c3", "bcast")


def shapes_for(layout: str, full: bool):
    nd = LAYOUTS[layout].ndim
    if nd == 1:
        return SHAPES_1D + ([LARGE] if full and layout == "c1" else [])
    if nd == 2:
        return SHAPES_2D + ([(1024, 1027)] if full and layout == "c2" else [])
    return SHAPES_3D


# --------------------------------------------------------------------------------------
# Entries
# --------------------------------------------------------------------------------------

@dataclass
class Entry:
    name: str                    # unique id
    expr: str                    # with {a}, {b}, {c} placeholders (and {v} for variants)
    arity: int = 1
    group: str = "elementwise"   # elementwise, reduction, axis, function, scalar, preduce
    dtypes: tuple = DTYPES
    forms: tuple = ("array", "prange", "scalar")
    layouts: tuple = ()          # default per group
    tol: str = "exact"
    gpu_tol: str = ""            # on the gpu target, where kernels contract a * b + c
    oracle: object = "numpy"     # "numpy", "numba" or {kind: oracle}
    oracle_reason: str = ""
    values: tuple = ("mixed", "random")
    guard: Optional[Callable] = None   # (dtype, form, [arrays]) -> [arrays]: excluded inputs
    variants: tuple = ({},)      # substitutions for {v}... in expr
    mixed_dtypes: bool = False   # also every pair of dtypes (full grid)
    note: str = ""

    def oracle_for(self, dtype: str) -> str:
        if kind_of(dtype) == "c":
            return "numba"          # COMPLEX_REASON
        if isinstance(self.oracle, dict):
            return self.oracle.get(kind_of(dtype), self.oracle.get("*", "numpy"))
        return self.oracle


def _float_math_oracle():
    # NumPy computes math ufuncs of small integers and booleans in float16 (a dtype we
    # do not have); Numba picks float32/float64 loops: its result is the oracle there.
    return {"f": "numpy", "*": "numba"}


NONFLOAT_REASON = ("NumPy's float16 loop for bool/int8/uint8 (and float32 for 16-bit) "
                   "versus Numba's loop selection: Numba's result is the oracle for "
                   "non-float inputs")


MIXED_REASON = ("mixed dtypes and integer true division: Numba's loop selection picks the "
                "first NumPy loop its types cast to safely (int64 + float32 and int16 / int16 "
                "are float32), NumPy 2 promotes to float64: ours must equal NumPy's or "
                "Numba's result")
FLOOR_DIVIDE_REASON = ("Numba's ufunc kernel for floats is floor(a / b) (np_real_floor_div_impl, "
                       "docs/supported.md), NumPy's an fmod-based floor division: they differ "
                       "for infinite, zero or subnormal divisors and where a / b rounds to an "
                       "integer (3.5 // -inf: -0.0 against -1.0)")
POWER_REASON = ("NumPy's power takes fast paths for some scalar exponents (x ** 0.5 is sqrt, "
                "so (-inf) ** 0.5 is NaN where C's pow gives inf) and computes integer powers "
                "exactly; Numba follows C's pow and, with a Python int exponent, computes in "
                "float64: ours must equal one of them")
MAXMIN_ORACLE = {"f": "numba", "*": "numpy"}
MAXMIN_REASON = ("float ties of -0.0 and 0.0: NumPy returns the second argument, Numba the "
                 "first; Numba is the oracle for floats")
FMAXMIN_REASON = ("float ties of -0.0 and 0.0: NumPy's np.fmin/np.fmax return either zero "
                  "depending on its loop (SIMD for contiguous operands, scalar otherwise); "
                  "Numba's is the oracle for floats")
# Array expressions whose Numba result differs from NumPy's (docs/supported.md, "Known
# Numba differences"): (oracle, reason)
NUMBA_EXPRESSIONS = {
    "np.where(a > 0, a, 0.5)": ("numba", "a Python float scalar is float64 in Numba's typing: "
                                "the result of a float32 array is float64 (NumPy 2, NEP 50: "
                                "float32)"),
    "np.clip(a, b, c)": ("numba", "NaN bounds: Numba's np.clip compares with them (a NaN "
                         "bound is no bound), NumPy's gives NaN; the integer literal rule of "
                         "the other expressions does not arise"),
}
UNSIGNED_SUMS = {"u": "either", "*": "numpy"}
UNSIGNED_SUMS_REASON = ("unsigned sums, products and cumulative ones: Numba 0.68.1 types them "
                        "uint64 as NumPy does, Numba 0.68.0 (the GPU machine's) int64 (a "
                        "uint32 cumprod: uint32); ours follows the installed Numba's typing")
MATH_REASON = ("math.* on NumPy scalars in Python (the value oracle) raises ValueError or "
               "OverflowError on domain errors where Numba returns NaN or inf, and Numba's "
               "math.pow with integer arguments raises OverflowError for huge negative "
               "exponents: ours must equal Python's or Numba's result")


# -------- input guards (documented exclusions) --------

def no_min_by_minus_one(dtype, form, arrays):
    """Integer MIN // -1 and MIN % -1: Numba's np.remainder/np.divmod trap (SIGFPE);
    excluded (supported.md documents our 0)."""
    if kind_of(dtype) != "i" or len(arrays) < 2:
        return arrays
    a, b = arrays[0], arrays[1]
    if np.ndim(b) == 0:
        if b == -1:
            b = type(b)(1) if not isinstance(b, np.ndarray) else b
        return [a, b] + list(arrays[2:])
    info = np.iinfo(np.dtype(dtype))
    a_min = np.asarray(a) == info.min
    if np.shape(a) == np.shape(b):
        bad = a_min & (b == -1)
    else:                       # broadcast operands: no -1 divisor where a holds MIN
        bad = (b == -1) & bool(np.any(a_min))
    if bad.any():
        b = b.copy()
        b[bad] = 1
    return [a, b] + list(arrays[2:])


def fmod_guard(dtype, form, arrays):
    """Signed integer np.fmod: non-negative operands only. Numba's loop takes the
    unsigned remainder (np.fmod(7, -3) is 7), ours NumPy's truncated one (1); where
    the operands' types differ from NumPy's (a Python scalar) the sweep falls back
    to Numba's result. tests/test_ufunc_rules.py checks negative operands against
    NumPy."""
    if kind_of(dtype) != "i":
        return arrays
    top = np.iinfo(np.dtype(dtype)).max

    def magnitude(x):
        if np.ndim(x) == 0:
            return type(x)(min(abs(int(x)), top))
        wide = x.astype(np.int64)
        return np.where(wide < -top, top, np.abs(wide)).astype(x.dtype)
    return [magnitude(x) for x in arrays[:2]] + list(arrays[2:])


def no_zero_divisor(dtype, form, arrays):
    """Scalar and prange forms of / // %: Numba's error model raises ZeroDivisionError
    for a zero divisor (ints and floats), ours gives NumPy's value (user-guide.md,
    Semantics): excluded there. Array forms keep zeros (NumPy, Numba and ours agree)."""
    arrays = no_min_by_minus_one(dtype, form, arrays)
    if form in ("array", "array-scalar", "scalar-array"):
        return arrays
    a, b = arrays[0], arrays[1]
    if np.ndim(b) == 0:
        return [a, b if b != 0 else type(b)(1)] + list(arrays[2:])
    b = np.where(b == 0, np.ones((), b.dtype), b).astype(b.dtype)
    return [a, b] + list(arrays[2:])


def shift_counts(dtype, form, arrays):
    """Shift counts in [0, width): larger or negative counts are undefined in C (and
    differ between NumPy, which defines them, and Numba/LLVM): excluded."""
    a, b = arrays[0], arrays[1]
    width = np.dtype(dtype).itemsize * 8 if kind_of(dtype) != "b" else 1
    if np.ndim(b) == 0:
        return [a, type(b)(abs(int(b)) % width)]
    bb = (np.abs(b.astype(np.int64)) % width).astype(b.dtype)
    return [a, bb]


def int_power(dtype, form, arrays):
    """Integer powers with a negative exponent: NumPy raises ValueError, Numba's result
    is undefined: excluded (exponents taken modulo 70, non-negative)."""
    if kind_of(dtype) not in "iu" or len(arrays) < 2:
        return arrays
    a, b = _small_unsigned_bases(arrays[0]), arrays[1]
    if np.ndim(b) == 0:
        return [a, type(b)(abs(int(b)) % 70)]
    return [a, (np.abs(b.astype(np.int64)) % 70).astype(b.dtype)]


def _small_unsigned_bases(a):
    """uint64 bases of 2**63 or more: their powers wrap to values near 2**64, which
    Numba's integer np.power (Python 3.11) rounds through float64 out of the range
    (undefined); excluded (taken modulo 2**32)."""
    if np.asarray(a).dtype != np.uint64:
        return a
    if np.ndim(a) == 0:
        return type(a)(int(a) % 2 ** 32) if int(a) >= 2 ** 63 else a
    return np.where(a >= np.uint64(2 ** 63), a % np.uint64(2 ** 32), a).astype(a.dtype)


def pow_raising_in_loops(dtype, form, arrays):
    """math.pow raising inside a prange (0.0 to a negative integer power:
    ZeroDivisionError in the serial oracle; the most negative int64 exponent:
    OverflowError): which iteration's exception comes first is not defined for
    a parallel loop, so the prange form takes inputs for which none raises."""
    if not form.startswith("prange") or kind_of(dtype) not in "iu" or len(arrays) < 2:
        return arrays
    a, b = np.array(arrays[0], copy=True), np.array(arrays[1], copy=True)
    if kind_of(dtype) == "i":
        info = np.iinfo(b.dtype)
        b[b == info.min] = info.min + 1
        a[(a == 0) & (b < 0)] = 1
    return [a, b] + list(arrays[2:])


def reciprocal_guard(dtype, form, arrays):
    """np.reciprocal of integer 0: undefined in Numba (supported.md): excluded."""
    if kind_of(dtype) not in "iu":
        return arrays
    a = arrays[0]
    if np.ndim(a) == 0:
        return [a if a != 0 else type(a)(1)]
    return [np.where(a == 0, np.ones((), a.dtype), a).astype(a.dtype)]


def float_to_int_safe(target: str):
    def guard(dtype, form, arrays):
        """float -> int of NaN, inf or out-of-range values: undefined in C, Numba and
        NumPy: excluded (replaced by in-range values)."""
        if kind_of(dtype) != "f" or np.dtype(target).kind not in "iub" or \
                np.dtype(target).kind == "b":
            return arrays
        info = np.iinfo(np.dtype(target))
        lo, hi = float(info.min), float(info.max)
        hi = min(hi, 2.0 ** 62) if info.bits == 64 else hi
        out = []
        for a in arrays:
            a = np.asarray(a)
            x = np.where(np.isfinite(a), a, 0).astype(np.float64)
            x = np.where((x > lo) & (x < hi), x, np.fmod(x, 100.0))
            if info.min == 0:
                x = np.abs(x)
            out.append(x.astype(a.dtype))
        return out
    return guard


def astype_safe(dtype, form, arrays, variant):
    """a.astype(int type) of NaN, inf or out-of-range floats: undefined (LLVM's
    fptosi is poison; x86 gives the 'integer indefinite', the GPU saturates)."""
    return float_to_int_safe(variant["v"])(dtype, form, arrays)


astype_safe.per_variant = True


def rounding_to_int_safe(dtype, form, arrays):
    """math.floor/ceil/trunc return int64 (uint64 for uint64) in Numba, through
    float64: a float input out of range, or a 64-bit integer whose float64
    rounding is 2**63 (2**64) or more, converts out of range (undefined)."""
    if kind_of(dtype) == "f":
        return float_to_int_safe("int64")(dtype, form, arrays)
    if dtype not in ("int64", "uint64"):
        return arrays
    limit = 2.0 ** 63 if dtype == "int64" else 2.0 ** 64
    out = []
    for a in arrays:
        a = np.asarray(a)
        big = np.abs(a.astype(np.float64)) >= limit
        out.append(np.where(big, a // 2, a).astype(a.dtype))
    return out


def ldexp_guard(dtype, form, arrays):
    """ldexp exponents within [-1200, 1200] (NumPy's int loop takes C ints; Numba
    truncates an int64 exponent to a C int, supported.md)."""
    a, b = arrays
    if np.ndim(b) == 0:
        return [a, type(b)(int(b) % 1200)]
    return [a, (b.astype(np.int64) % 2401 - 1200).astype(b.dtype)]


# -------- the entries --------

UNARY_MATH = ["sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "exp2", "log", "log10",
              "log2", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "expm1",
              "log1p", "cbrt"]
UNARY_EXACT_FLOAT = ["sqrt", "fabs", "floor", "ceil", "trunc", "rint"]


def build_entries() -> list[Entry]:
    E = []
    fo = _float_math_oracle()
    for f in UNARY_MATH:
        E.append(Entry(f"np.{f}", f"np.{f}({{a}})", tol="pow" if f == "cbrt" else "libm",
                       oracle=fo, oracle_reason=NONFLOAT_REASON))
    for f in UNARY_EXACT_FLOAT:
        E.append(Entry(f"np.{f}", f"np.{f}({{a}})", oracle=fo, oracle_reason=NONFLOAT_REASON))
    for f in ["deg2rad", "rad2deg"]:
        E.append(Entry(f"np.{f}", f"np.{f}({{a}})", tol="scaled", oracle=fo,
                       oracle_reason=NONFLOAT_REASON))
    for f in ["isnan", "isinf", "isfinite", "logical_not"]:
        E.append(Entry(f"np.{f}", f"np.{f}({{a}})"))
    E.append(Entry("np.abs", "np.abs({a})"))
    E.append(Entry("np.negative", "np.negative({a})", dtypes=NUMERIC))
    E.append(Entry("np.square", "np.square({a})",
                   oracle={"b": "numba", "*": "numpy"},
                   oracle_reason="bool: NumPy squares in int8, Numba in int64"))
    E.append(Entry("np.sign", "np.sign({a})", dtypes=NUMERIC))
    E.append(Entry("np.reciprocal", "np.reciprocal({a})", dtypes=NUMERIC, guard=reciprocal_guard,
                   oracle={"f": "numpy", "*": "numba"},
                   oracle_reason="integers go through float64 and back in Numba; NumPy "
                   "divides in the integer type"))
    E.append(Entry("np.invert", "np.invert({a})", dtypes=("bool",) + INTS))
    E.append(Entry("np.signbit", "np.signbit({a})", dtypes=FLOATS))
    E.append(Entry("np.spacing", "np.spacing({a})", dtypes=FLOATS, oracle="numba",
                   oracle_reason="np.spacing(-0.0): Numba's nextafter(x, -inf) - x gives "
                   "-5e-324, NumPy 5e-324; ours is Numba's"))
    # unary operators
    E.append(Entry("-a", "-{a}", dtypes=NUMERIC))
    E.append(Entry("+a", "+{a}", oracle={"b": "numba", "*": "numpy"},
                   oracle_reason="+ of a bool array: Numba gives int8, NumPy raises "
                   "(no bool loop of np.positive); ours as Numba (supported.md)"))
    E.append(Entry("~a", "~{a}", dtypes=("bool",) + INTS))
    E.append(Entry("abs(a)", "abs({a})"))

    # binary ufuncs
    binary = [
        ("np.add", "np.add({a}, {b})", {}, True),
        ("np.subtract", "np.subtract({a}, {b})", {"dtypes": NUMERIC}, True),
        ("np.multiply", "np.multiply({a}, {b})", {}, True),
        ("np.divide", "np.divide({a}, {b})", {"oracle": {"f": "numpy", "*": "numba"},
                                              "oracle_reason": MIXED_REASON}, True),
        ("np.floor_divide", "np.floor_divide({a}, {b})",
         {"dtypes": NUMERIC, "guard": no_min_by_minus_one,
          "oracle": {"f": "numba", "*": "numpy"}, "oracle_reason": FLOOR_DIVIDE_REASON}, False),
        ("np.remainder", "np.remainder({a}, {b})",
         {"dtypes": NUMERIC, "guard": no_min_by_minus_one}, False),
        ("np.fmod", "np.fmod({a}, {b})", {"dtypes": NUMERIC, "guard": fmod_guard}, False),
        ("np.logaddexp", "np.logaddexp({a}, {b})", {"dtypes": FLOATS, "tol": "operands"},
         False),
        ("np.logaddexp2", "np.logaddexp2({a}, {b})", {"dtypes": FLOATS, "tol": "operands"},
         False),
        ("np.nextafter", "np.nextafter({a}, {b})", {"dtypes": FLOATS}, False),
        ("np.float_power", "np.float_power({a}, {b})", {"dtypes": FLOATS, "tol": "pow"},
         False),
        ("np.power", "np.power({a}, {b})", {"dtypes": NUMERIC, "guard": int_power, "tol": "pow",
                                            "oracle": "either", "oracle_reason": POWER_REASON},
         False),
        ("np.maximum", "np.maximum({a}, {b})", {"oracle": MAXMIN_ORACLE,
                                                "oracle_reason": MAXMIN_REASON}, True),
        ("np.minimum", "np.minimum({a}, {b})", {"oracle": MAXMIN_ORACLE,
                                                "oracle_reason": MAXMIN_REASON}, False),
        ("np.fmax", "np.fmax({a}, {b})", {"oracle": MAXMIN_ORACLE,
                                          "oracle_reason": FMAXMIN_REASON}, False),
        ("np.fmin", "np.fmin({a}, {b})", {"oracle": MAXMIN_ORACLE,
                                          "oracle_reason": FMAXMIN_REASON}, False),
        ("np.arctan2", "np.arctan2({a}, {b})", {"tol": "pow", "oracle": fo}, False),
        ("np.copysign", "np.copysign({a}, {b})", {"oracle": fo}, False),
        ("np.hypot", "np.hypot({a}, {b})", {"tol": "pow", "oracle": fo}, False),
        ("np.logical_and", "np.logical_and({a}, {b})", {}, False),
        ("np.logical_or", "np.logical_or({a}, {b})", {}, False),
        ("np.logical_xor", "np.logical_xor({a}, {b})", {}, False),
        ("np.gcd", "np.gcd({a}, {b})", {"dtypes": INTS}, False),
        ("np.lcm", "np.lcm({a}, {b})", {"dtypes": INTS, "oracle": "numba",
                                        "oracle_reason": "Numba's lcm types (supported.md): "
                                        "int64 products for narrow types, uint64 through "
                                        "float64"}, False),
        ("np.bitwise_and", "np.bitwise_and({a}, {b})", {"dtypes": ("bool",) + INTS}, False),
        ("np.bitwise_or", "np.bitwise_or({a}, {b})", {"dtypes": ("bool",) + INTS}, False),
        ("np.bitwise_xor", "np.bitwise_xor({a}, {b})", {"dtypes": ("bool",) + INTS}, False),
        ("np.left_shift", "np.left_shift({a}, {b})", {"dtypes": INTS, "guard": shift_counts},
         False),
        ("np.right_shift", "np.right_shift({a}, {b})", {"dtypes": INTS, "guard": shift_counts},
         False),
        ("np.equal", "np.equal({a}, {b})", {}, False),
        ("np.not_equal", "np.not_equal({a}, {b})", {}, False),
        ("np.less", "np.less({a}, {b})", {}, True),
        ("np.less_equal", "np.less_equal({a}, {b})", {}, False),
        ("np.greater", "np.greater({a}, {b})", {}, False),
        ("np.greater_equal", "np.greater_equal({a}, {b})", {}, False),
    ]
    for name, expr, kw, mixd in binary:
        kw = dict(kw)
        kw.setdefault("forms", ("array", "array-scalar", "scalar-array", "prange", "scalar"))
        E.append(Entry(name, expr, arity=2, mixed_dtypes=mixd, **kw))
    # operators on arrays (array expressions, parfors) and scalars
    ops = [("+", {}), ("-", {"dtypes": NUMERIC}), ("*", {}), ("/", {"guard": no_zero_divisor}),
           ("//", {"dtypes": NUMERIC, "guard": no_zero_divisor}),
           ("%", {"dtypes": NUMERIC, "guard": no_zero_divisor}),
           ("**", {"dtypes": NUMERIC, "guard": int_power, "tol": "pow", "oracle": "either",
                   "oracle_reason": POWER_REASON}),
           ("&", {"dtypes": ("bool",) + INTS}), ("|", {"dtypes": ("bool",) + INTS}),
           ("^", {"dtypes": ("bool",) + INTS}), ("<<", {"dtypes": INTS, "guard": shift_counts}),
           (">>", {"dtypes": INTS, "guard": shift_counts}),
           ("==", {}), ("!=", {}), ("<", {}), ("<=", {}), (">", {}), (">=", {})]
    for op, kw in ops:
        kw = dict(kw)
        kw.setdefault("forms", ("array", "array-scalar", "prange", "scalar"))
        # scalar operators follow Python/Numba typing (int8 + int8 is an int64 there)
        kw.setdefault("oracle", {"f": "numpy", "*": "numba"} if op not in (
            "==", "!=", "<", "<=", ">", ">=") else "numpy")
        kw.setdefault("oracle_reason", "scalar integer operators: Numba widens to int64 "
                      "(Python semantics), NumPy scalars wrap in their type")
        E.append(Entry(f"a {op} b", f"{{a}} {op} {{b}}", arity=2, **kw))
    # array expressions
    exprs = [
        ("a * b + c", "{a} * {b} + {c}", 3, NUMERIC, "exact", "fma"),
        ("(a - b) * (a + b)", "({a} - {b}) * ({a} + {b})", 2, NUMERIC, "exact"),
        ("np.sqrt(a*a + b*b)", "np.sqrt({a} * {a} + {b} * {b})", 2, FLOATS, "exact",
         "fma_sqrt"),
        ("np.exp(-a) * np.sin(b)", "np.exp(-{a}) * np.sin({b})", 2, FLOATS, "libm2"),
        ("np.where(a > b, a, b)", "np.where({a} > {b}, {a}, {b})", 2, DTYPES, "exact"),
        ("np.where(a > 0, a, 0.5)", "np.where({a} > 0, {a}, 0.5)", 1, NUMERIC, "exact"),
        ("np.clip(a, 2, 50)", "np.clip({a}, 2, 50)", 1, NUMERIC, "exact"),
        ("np.clip(a, b, c)", "np.clip({a}, {b}, {c})", 3, NUMERIC, "exact"),
        ("np.clip(a, None, 7)", "np.clip({a}, None, 7)", 1, NUMERIC, "exact"),
        ("2 * a - 1", "2 * {a} - 1", 1, NUMERIC, "exact"),
        ("(a > 1) & (b < 3)", "({a} > 1) & ({b} < 3)", 2, NUMERIC, "exact"),
        ("np.maximum(a, 0) + np.minimum(b, 0)", "np.maximum({a}, 0) + np.minimum({b}, 0)", 2,
         NUMERIC, "exact"),
    ]
    for name, expr, ar, dts, tol, *gpu_tol in exprs:
        oracle, reason = NUMBA_EXPRESSIONS.get(name, (
            {"f": "numpy", "*": "numba"},
            "Python int literals: Numba types them int64, NumPy 2 (NEP 50) keeps the array's "
            "type"))
        E.append(Entry(name, expr, arity=ar, dtypes=dts, tol=tol, gpu_tol="".join(gpu_tol),
                       forms=("array", "prange") if "clip" not in name else ("array",),
                       oracle=oracle, oracle_reason=reason))
    E.append(Entry("a.astype({v})", "{a}.astype(np.{v})", variants=tuple({"v": d} for d in
                                                                          DTYPES),
                   forms=("array",), guard=astype_safe))
    # reductions, whole array
    red = dict(group="reduction", forms=("array",),
               layouts=("c1", "a1", "c2", "f2", "a2", "ro2"))
    fvals = ("plain", "nan", "inf", "pinf", "ties")
    us = UNSIGNED_SUMS
    for f, tol, orc, vs in [
            ("np.sum({a})", "sum", us, fvals),
            ("{a}.sum()", "sum", us, fvals),
            ("np.prod({a})", "prod", us, fvals),
            ("np.mean({a})", "sum", {"f": "numpy", "*": "either"}, fvals),
            ("np.min({a})", "exact", "numpy", fvals), ("np.max({a})", "exact", "numpy", fvals),
            ("{a}.min()", "exact", "numpy", fvals), ("{a}.max()", "exact", "numpy", fvals),
            ("np.argmin({a})", "exact", "numpy", fvals),
            ("np.argmax({a})", "exact", "numpy", fvals),
            ("{a}.argmax()", "exact", "numpy", fvals),
            ("np.any({a})", "exact", "numpy", fvals), ("np.all({a})", "exact", "numpy", fvals),
            ("np.var({a})", "var", {"f": "numpy", "*": "either"}, fvals),
            ("np.std({a})", "std", {"f": "numpy", "*": "either"}, fvals),
            ("np.count_nonzero({a})", "exact", "numpy", fvals),
            ("np.cumsum({a})", "sum", us, fvals),
            ("np.cumprod({a})", "prod", us, ("plain", "ties")),
    ]:
        name = f.format(a="a")
        E.append(Entry(name, f, tol=tol, oracle=orc, values=vs,
                       oracle_reason=UNSIGNED_SUMS_REASON if orc is us else
                       "integer mean/var/std: Numba sums in the integer type "
                       "(wrapping) and raises ZeroDivisionError on an empty array; NumPy sums "
                       "in float64 and returns NaN: ours must equal one of them"
                       if isinstance(orc, dict) else "", **red))
    ax = dict(group="axis", forms=("array",), layouts=("c2", "f2", "a2", "ro2", "c3"))
    usr = dict(oracle=us, oracle_reason=UNSIGNED_SUMS_REASON)
    E.append(Entry("np.sum(a, axis={v})", "np.sum({a}, axis={v})", tol="sum",
                   variants=({"v": 0}, {"v": 1}, {"v": -1}), values=fvals, **usr, **ax))
    E.append(Entry("a.sum(axis={v})", "{a}.sum(axis={v})", tol="sum",
                   variants=({"v": 0}, {"v": -1}), values=fvals, **usr, **ax))
    E.append(Entry("np.sum(a, axis=0, dtype=np.float64)", "np.sum({a}, axis=0, dtype=np.float64)",
                   tol="sum", values=fvals, **ax))
    E.append(Entry("np.argmin(a, axis={v})", "np.argmin({a}, axis={v})",
                   variants=({"v": 0}, {"v": 1}), values=fvals, **ax))
    E.append(Entry("np.argmax(a, axis={v})", "np.argmax({a}, axis={v})",
                   variants=({"v": 0}, {"v": -1}), values=fvals, **ax))
    E.append(Entry("np.cumsum(a, axis={v})", "np.cumsum({a}, axis={v})", tol="sum", **usr,
                   variants=({"v": 0}, {"v": 1}), values=fvals, **ax))
    # functions and methods
    fn = dict(group="function", forms=("array",))
    E.append(Entry("np.nonzero(a)", "np.nonzero({a})", layouts=("c1", "a1", "c2", "f2", "a2"),
                   values=("ties", "mixed"), **fn))
    E.append(Entry("np.where(a)", "np.where({a})", layouts=("c1", "a1"), values=("ties",), **fn))
    E.append(Entry("a[a > 0]", "{a}[{a} > 0]", layouts=("c1", "a1"), dtypes=NUMERIC,
                   values=("ties", "mixed"), **fn))
    E.append(Entry("np.copy(a)", "np.copy({a})", layouts=("c1", "a1", "c2", "f2", "a2"), **fn))
    E.append(Entry("a.copy()", "{a}.copy()", layouts=("c1", "a2"), **fn))
    E.append(Entry("np.ascontiguousarray(a)", "np.ascontiguousarray({a})",
                   layouts=("c2", "f2", "a2"), **fn))
    E.append(Entry("np.asfortranarray(a)", "np.asfortranarray({a})",
                   layouts=("c2", "f2", "a2"), **fn))
    E.append(Entry("a.T + 0", "{a}.T + 0", layouts=("c2", "f2", "a2"), dtypes=NUMERIC,
                   oracle="numba", oracle_reason="int literal typing (NEP 50)", **fn))
    E.append(Entry("np.transpose(a)", "np.transpose({a})", layouts=("c2", "f2", "a2"), **fn))
    E.append(Entry("a.ravel()", "{a}.ravel()", layouts=("c1", "c2", "f2", "a2"), **fn))
    E.append(Entry("a.flatten()", "{a}.flatten()", layouts=("c2", "f2", "a2"), **fn))
    E.append(Entry("a.reshape(-1)", "{a}.reshape(-1)", layouts=("c2", "c3"), **fn))
    E.append(Entry("a[::-1] (copy)", "{a}[::-1].copy()", layouts=("c1", "a1"), **fn))
    E.append(Entry("a[1:-1:2] * 2", "{a}[1:-1:2] * 2", layouts=("c1", "a1"), dtypes=NUMERIC,
                   oracle="numba", oracle_reason="int literal typing (NEP 50)", **fn))
    E.append(Entry("np.dot(a, b)", "np.dot({a}, {b})", arity=2, dtypes=FLOATS, tol="sum",
                   group="dot", forms=("array",), values=("plain", "ties")))
    E.append(Entry("a @ b", "{a} @ {b}", arity=2, dtypes=FLOATS, tol="sum",
                   group="dot", forms=("array",), values=("plain", "ties")))
    # prange reductions (scalar accumulators)
    pr = dict(group="preduce", forms=("prange",), layouts=("c1", "a1"))
    E.append(Entry("prange s += a[i]", "s += {a}", tol="sum", oracle="numba", values=fvals,
                   variants=({"init": "0"},), oracle_reason="Numba's types: the accumulator "
                   "starts as an int64 0", **pr))
    E.append(Entry("prange s *= a[i]", "s *= {a}", tol="prod", oracle="numba",
                   values=("plain", "ties"), variants=({"init": "1"},), **pr))
    E.append(Entry("prange s = max(s, a[i])", "s = max(s, {a})", oracle="numba", values=fvals,
                   variants=({"init": "a[0]"},), **pr))
    E.append(Entry("prange s = min(s, a[i])", "s = min(s, {a})", oracle="numba", values=fvals,
                   variants=({"init": "a[0]"},), **pr))
    # builtins and casts on scalars
    sc = dict(group="elementwise", forms=("scalar",))
    E.append(Entry("min(a, b)", "min({a}, {b})", arity=2, oracle="numba", **sc))
    E.append(Entry("max(a, b)", "max({a}, {b})", arity=2, oracle="numba", **sc))
    E.append(Entry("bool(a)", "bool({a})", oracle="numba", **sc))
    E.append(Entry("float(a)", "float({a})", oracle="numba", **sc))
    E.append(Entry("int(a)", "int({a})", oracle="numba", guard=float_to_int_safe("int64"), **sc))
    E.append(Entry("np.{v}(a)", "np.{v}({a})", oracle="numba", forms=("scalar", "prange"),
                   variants=tuple({"v": d if d != "bool" else "bool_"} for d in DTYPES),
                   guard=astype_safe))
    for f in ["erf", "erfc", "sin", "exp", "log", "sqrt", "atan2", "hypot", "copysign", "pow",
              "floor", "ceil", "trunc", "expm1", "log1p"]:
        if f in ("atan2", "hypot", "copysign", "pow"):
            E.append(Entry(f"math.{f}", f"math.{f}({{a}}, {{b}})", arity=2, oracle="either",
                           oracle_reason=MATH_REASON,
                           guard=pow_raising_in_loops if f == "pow" else None,
                           tol="pow", dtypes=NUMERIC, forms=("scalar", "prange")))
        else:
            E.append(Entry(f"math.{f}", f"math.{f}({{a}})", oracle="either",
                           oracle_reason=MATH_REASON,
                           guard=rounding_to_int_safe if f in ("floor", "ceil", "trunc")
                           else None,
                           tol="libm" if f not in ("sqrt", "floor", "ceil", "trunc") else "exact",
                           dtypes=NUMERIC, forms=("scalar", "prange")))
    names = [e.name for e in E]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    return E


ENTRIES = build_entries()
BY_NAME = {e.name: e for e in ENTRIES}
_ENTRY_INDEX = {e.name: i for i, e in enumerate(ENTRIES)}


COMPLEX_REASON = ("complex dtypes: Numba's results are the reference (CPython's division "
                  "for `/`, its cmath functions); NumPy's complex loops follow C99 Annex G "
                  "on infinities and NaNs, and NumPy sums in pairs")
# The entries swept with complex64 and complex128 as well: name -> (tolerance, guard for
# complex inputs)
def normal_parts(dtype, form, arrays):
    """Complex functions through cmath.sqrt (CPython's algorithm, b / (2 * t)): where
    t underflows to 0 (a subnormal part, 1+5e-324j), Numba's serial njit raises
    ZeroDivisionError from its array loop, ours gives NumPy's inf inside the loop as
    Numba's parallel code does (user-guide.md, Semantics). Subnormal parts become 0."""
    def flushed(x):
        if not np.iscomplexobj(x):
            return x
        out = np.array(x, copy=True)
        tiny = np.finfo(out.real.dtype).tiny
        for part in (out.real, out.imag):        # views: zeroed in place, signs kept
            part[np.abs(part) < tiny] *= 0.0
        return out if np.ndim(x) else type(x)(out[()])
    return [flushed(x) for x in arrays]


COMPLEX_ENTRIES = {
    "np.exp": ("c_libm", None), "np.log": ("c_log", None), "np.sqrt": ("c_libm", None),
    "np.sin": ("c_libm", None), "np.cos": ("c_libm", None), "np.tan": ("c_libm", None),
    "np.log10": ("c_log", None), "np.log2": ("c_log", None),
    "np.sinh": ("c_libm", None), "np.cosh": ("c_libm", None), "np.tanh": ("c_libm", None),
    "np.arcsin": ("c_libm", normal_parts), "np.arccos": ("c_libm", normal_parts),
    "np.arctan": ("c_libm", None), "np.arcsinh": ("c_libm", normal_parts),
    "np.arccosh": ("c_log", normal_parts), "np.arctanh": ("c_libm", None),
    "np.isnan": ("c_exact", None), "np.isinf": ("c_exact", None),
    "np.isfinite": ("c_exact", None), "np.abs": ("c_norm", None), "abs(a)": ("c_norm", None),
    "np.negative": ("c_exact", None), "-a": ("c_exact", None), "np.square": ("c_norm", None),
    "np.add": ("c_exact", None), "np.subtract": ("c_exact", None),
    "np.multiply": ("c_norm", None), "np.divide": ("c_norm", None),
    "np.equal": ("c_exact", None), "np.not_equal": ("c_exact", None),
    "np.less": ("c_exact", None), "np.less_equal": ("c_exact", None),
    "np.greater": ("c_exact", None), "np.greater_equal": ("c_exact", None),
    "np.maximum": ("c_exact", None), "np.minimum": ("c_exact", None),
    "np.fmax": ("c_exact", None), "np.fmin": ("c_exact", None),
    "np.reciprocal": ("c_norm", None),
    "a + b": ("c_exact", None), "a - b": ("c_exact", None), "a * b": ("c_norm", None),
    # not `a / b`: its array form is NumPy's division in ours (as in Numba's parallel=True),
    # CPython's in Numba's serial njit, the oracle; they differ on infinities and NaNs
    # (tests/test_complex.py checks both forms against their Numba counterparts)
    "a == b": ("c_exact", None),
    "a != b": ("c_exact", None),
    "np.sum(a)": ("sum", None), "a.sum()": ("sum", None), "np.mean(a)": ("sum", None),
    "np.prod(a)": ("prod", None), "prange s += a[i]": ("sum", None),
    "prange s *= a[i]": ("prod", None),
}
assert set(COMPLEX_ENTRIES) <= set(BY_NAME), set(COMPLEX_ENTRIES) - set(BY_NAME)


def complex_grid(mode: Optional[str] = None) -> list[tuple[str, str]]:
    """The complex entries: with both dtypes in the full grid; in the sample, each
    entry once, complex64 and complex128 alternating; by default this week's
    half of the sample (`week_half`)."""
    mode = mode if mode is not None else os.environ.get(ENV_SWEEP, "half")
    if mode == "full":
        return [(name, d) for name in COMPLEX_ENTRIES for d in COMPLEX]
    return this_weeks_half([(name, COMPLEX[i % 2]) for i, name in enumerate(COMPLEX_ENTRIES)],
                           mode)


# --------------------------------------------------------------------------------------
# Known unsupported constructs and documented differences
# --------------------------------------------------------------------------------------

# (entry-name regex, dtype regex, form regex, why, where documented or "gap")
KNOWN_UNSUPPORTED: list[tuple[str, str, str, str, str]] = [
    (r"prange s = (max|min)\(s, a\[i\]\)", r".*", r"prange \w+\+cupy",
     "s = a[0] before the loop reads an element of a device (CuPy) array in host code",
     "docs/supported.md, GPU arrays: host code cannot dereference device memory"),
]

# Known bugs, each with an xfail(strict=True) regression test in
# tests/test_differential_numpy.py: (entry regex, dtype regex, form regex, message regex
# or predicate, description, regression test). Matching cases count as `known-bug`.
_PAIRS = re.compile(r"ours ([^\s;]+) expected ([^\s;]+)")     # pairs end at "; "


def _pairs_all(msg, value: str) -> bool:
    """Are all (ours, expected) pairs of a mismatch message values matching `value`?"""
    pairs = _PAIRS.findall(msg)
    pattern = re.compile(r"(np\.float\d+\()?" + value + r"\)?$")
    return bool(pairs) and all(pattern.match(a) and pattern.match(b) for a, b in pairs)


def _only_signed_zeros(msg):
    return _pairs_all(msg, r"-?0\.0")


KNOWN_BUGS: list = [
    (r"-a", r"int16", r"prange", r"ours np\.int64\(32768\) expected np\.int64\(-32768\)",
     "GPU kernels: -x of the int16 -32768 stored into an int64 array gives 32768 (PTX "
     "neg.s16 then cvt.s64.s16; the CPU and Numba give -32768); not reproduced off the GPU",
     "test_bug_negated_int16_minimum_in_a_kernel"),
]

def _only_signed_zeros_doc(msg):
    return _only_signed_zeros(msg)


def _only_non_finite(msg):
    return _pairs_all(msg, r"-?(nan|inf)")


def _one_side_non_finite(msg):
    """Every pair has a NaN or an infinity on at least one side."""
    pairs = _PAIRS.findall(msg)
    return bool(pairs) and all(re.search(r"nan|inf", a + b) for a, b in pairs)


def _only_infinity_signs(msg):
    """Every pair is the same infinities (and NaNs) but for their signs."""
    pairs = _PAIRS.findall(msg)
    unsigned = re.compile(r"[+-]")
    return bool(pairs) and all("inf" in a and unsigned.sub("", a) == unsigned.sub("", b)
                               for a, b in pairs)


def _numba_sign_of_unsigned(msg):
    pairs = _PAIRS.findall(msg)
    ones = re.compile(r"np\.uint(8\(255|16\(65535|32\(4294967295|64\(18446744073709551615)\)$")
    return bool(pairs) and all(re.match(r"np\.uint\d+\(1\)$", a) and ones.match(b)
                               for a, b in pairs)


# Documented differences: (entry regex, dtype regex, form regex, message regex (searched
# in the mismatch text), description, reference). A mismatch matching one counts as
# `documented`, not as a failure.
DOCUMENTED: list[tuple[str, str, str, str, str, str]] = [
    (r".*", r".*", r"array", r"AssertionError\('Sizes of .* do not match.* vs ValueError",
     "operands of incompatible shapes: Numba's array analysis checks the shapes first and "
     "raises AssertionError where NumPy raises ValueError",
     "supported.md, NumPy functions, 'Array expressions' row; np.dot row"),
    (r"np\.sign", r"float(32|64)", r".*", _only_signed_zeros_doc,
     "np.sign(-0.0) is -0.0 as in Numba (NumPy gives 0.0)",
     "supported.md, NumPy functions, np.square/np.sign row"),
    (r"np\.(min|max)\(a\)|a\.(min|max)\(\)", r"float(32|64)", r".*", _only_signed_zeros_doc,
     "the min or max of an array holding both -0.0 and 0.0 is either zero: our parallel "
     "reductions (CPU chunks, GPU trees) meet the tie in another order than NumPy's scan",
     "supported.md, NumPy functions, reductions row"),
    (r"np\.maximum\(a, 0\) \+ np\.minimum\(b, 0\)", r"float(32|64)", r".*",
     _only_signed_zeros_doc,
     "np.maximum(a, 0) + np.minimum(b, 0) on signed zeros: each tie as Numba's (the first "
     "argument), NumPy the second, so the sum's zero sign differs",
     "supported.md, Known Numba differences, signed zeros"),
    (r"np\.prod\(a\)|a\.prod\(\)", r"float(32|64)", r".*", _only_non_finite,
     "float products whose partial products overflow to inf and underflow to 0: inf * 0 is "
     "NaN, so the result is NaN or +-inf depending on the order (ours: chunks or a tree)",
     "supported.md, NumPy functions, reductions row"),
    (r"np\.prod\(a\)|a\.prod\(\)|prange s \*= a\[i\]", r"complex(64|128)", r".*",
     _one_side_non_finite,
     "complex products whose partial products overflow: each step mixes the parts (inf - inf, "
     "inf * 0), so one order ends in NaN where another stays finite or reaches 0 (ours: a GPU "
     "tree)", "supported.md, Complex numbers"),
    (r"np\.(cos|sin|tan|exp|sinh|cosh|tanh|arcsin|arccos|arctan|arcsinh|arccosh|arctanh)",
     r"complex(64|128)", r".*", _only_infinity_signs,
     "complex functions of infinite or NaN parts: Numba's formulas copy the sign of a NaN "
     "(cos(inf), a NaN part) onto an infinity (math.copysign); x86 makes NaNs negative, "
     "GPUs positive, so the infinity's sign differs between the CPU and GPU kernels",
     "supported.md, Complex numbers"),
    (r"np\.(remainder|mod)|a % b", r"float(32|64)", r".*", _only_signed_zeros_doc,
     "a zero float remainder is +0.0 as in Numba's np_real_mod_impl (NumPy gives the "
     "divisor's sign)", "supported.md, NumPy functions, np.remainder row"),
    (r"np\.sign", r"uint\d+", r"prange", _numba_sign_of_unsigned,
     "np.sign of unsigned values at or above 2**(w-1) inside a loop: Numba gives the "
     "all-ones value (-1 wrapped), ours 1 as NumPy", "supported.md, Known Numba differences"),
    (r"a (//|%) b", r"float(32|64).*", r"array", r".",
     "float arrays with // and %: Python's semantics element by element (x // 0.0 is NaN, "
     "NumPy/Numba's ufunc gives +-inf)",
     "supported.md, Not yet supported, 'Float arrays with //, %'"),
]


def _match(rules, entry, dtype, form, msg=None):
    for r in rules:
        if re.fullmatch(r[0], entry) and re.fullmatch(r[1], dtype) and re.fullmatch(r[2], form):
            if msg is None or len(r) < 6:
                return r
            if r[3](msg) if callable(r[3]) else re.search(r[3], msg):
                return r
    return None


# --------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------

def _ulps(g, e):
    """ULP distance of float arrays of e's dtype (finite values)."""
    spacing = np.spacing(np.abs(e).astype(e.dtype))
    with np.errstate(all="ignore"):
        return np.abs(g.astype(np.float64) - e.astype(np.float64)) / spacing.astype(np.float64)


def compare(got, exp, tol: Tolerance, inputs=(), scalar=False) -> tuple[Optional[str], float]:
    """None when equal within tol, else a message; and the worst error seen in ulps
    (or in units of the bound, for reductions)."""
    if isinstance(exp, tuple):
        if not isinstance(got, tuple) or len(got) != len(exp):
            return f"tuple {got!r} vs {exp!r}", 0.0
        worst = 0.0
        for i, (g, e) in enumerate(zip(got, exp)):
            msg, w = compare(g, e, tol, inputs, scalar)
            worst = max(worst, w)
            if msg:
                return f"[{i}] {msg}", worst
        return None, worst
    if hasattr(got, "get") and not isinstance(got, np.ndarray):
        got = got.get()
    g, e = np.asarray(got), np.asarray(exp)
    if g.shape != e.shape:
        return f"shape {g.shape} != {e.shape}", 0.0
    if not scalar and g.dtype != e.dtype:
        return f"dtype {g.dtype} != {e.dtype}", 0.0
    if e.dtype.kind == "c":
        return _compare_complex(g.astype(e.dtype), e, tol, inputs)
    if e.dtype.kind != "f":
        if g.dtype.kind == "f" and scalar:
            return (None, 0.0) if np.array_equal(g, e) else (f"{g} != {e}", 0.0)
        if not np.array_equal(g, e):
            bad = np.flatnonzero(g.ravel() != e.ravel())
            return _diff_message(g, e, bad), 0.0
        return None, 0.0
    g = g.astype(e.dtype)
    gn, en = np.isnan(g), np.isnan(e)
    bad = gn != en
    if tol.kind == "exact":
        with np.errstate(all="ignore"):
            neq = ~((g == e) & (np.signbit(g) == np.signbit(e))) & ~(gn & en)
        bad |= neq
        worst = 0.0
    elif tol.kind in ("ulp", "cnorm", "clog"):      # cnorm: a real result of complex inputs (abs)
        fin = ~gn & ~en
        with np.errstate(all="ignore"):
            same = (g == e) | (gn & en)
            u = np.where(fin & ~same, _ulps(g, e), 0.0)
        u = np.nan_to_num(u, nan=np.inf)
        worst = float(u.max()) if u.size else 0.0
        bad |= ~same & (~fin | (u > tol.bound(e.dtype)))
    else:
        bound = _reduction_bound(tol, e, inputs)
        with np.errstate(all="ignore"):
            same = (g == e) | (gn & en)
            err = np.abs(g.astype(np.float64) - e.astype(np.float64))
            fin = np.isfinite(g) & np.isfinite(e)
            ratio = np.where(fin & ~same, err / np.maximum(bound, 1e-300), 0.0)
        worst = float(ratio.max()) if ratio.size else 0.0
        bad |= ~same & (~fin | (ratio > tol.bound(e.dtype)))
    if bad.any():
        return _diff_message(g, e, np.flatnonzero(bad.ravel())), worst
    return None, worst


def _compare_complex(g, e, tol: Tolerance, inputs) -> tuple[Optional[str], float]:
    """Complex results part by part: NaNs where the oracle has them, infinities and
    (with "exact") zeros with their signs; finite parts within the bound, in units of
    |oracle| ("cnorm": ulps of the modulus; sums and products: their bounds with the
    moduli of the inputs)."""
    part = np.float32 if e.dtype == np.complex64 else np.float64
    # bounds in the precision of the inputs (Numba sums complex64 in complex64, also
    # where the result is complex128)
    single = part is np.float32 or any(np.asarray(x).dtype in (np.complex64, np.float32)
                                       for x in inputs)
    worst = 0.0
    for name, get in (("real", np.real), ("imag", np.imag)):
        gp, ep = get(g).astype(part), get(e).astype(part)
        if tol.kind == "exact":
            msg, w = compare(gp, ep, tol)
        else:
            modulus = np.abs(e.astype(np.complex128))
            gn, en = np.isnan(gp), np.isnan(ep)
            with np.errstate(all="ignore"):
                same = (gp == ep) | (gn & en)
                fin = np.isfinite(gp) & np.isfinite(ep) & np.isfinite(modulus)
                if tol.kind == "cnorm":
                    unit = np.spacing(modulus.astype(part)).astype(np.float64)
                elif tol.kind == "clog":
                    unit = np.maximum(np.spacing(modulus.astype(part)).astype(np.float64),
                                      float(np.finfo(part).eps))
                else:
                    moduli = [np.abs(np.asarray(x)) for x in inputs if np.ndim(x) > 0]
                    unit = _reduction_bound(
                        tol, modulus.astype(np.float32 if single else np.float64), moduli)
                err = np.abs(gp.astype(np.float64) - ep.astype(np.float64))
                ratio = np.where(fin & ~same, err / np.maximum(unit, 1e-300), 0.0)
            w = float(np.max(ratio)) if ratio.size else 0.0
            bad = (gn != en) | (~same & (~fin | (ratio > tol.bound(e.dtype))))
            msg = _diff_message(g, e, np.flatnonzero(np.ravel(bad))) if bad.any() else None
        worst = max(worst, w)
        if msg:
            return f"{name} part: {msg}", worst
    return None, worst


def _reduction_bound(tol, e, inputs):
    eps = float(np.finfo(e.dtype).eps)
    xs = [np.asarray(x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else x)
          for x in inputs if np.ndim(x) > 0]
    x = xs[0].astype(np.float64) if xs else np.zeros(1)
    n = max(x.size, 1)
    with np.errstate(all="ignore"):
        if tol.kind == "operands":
            host = [np.asarray(v.get() if hasattr(v, "get") and not isinstance(v, np.ndarray)
                               else v) for v in inputs]
            operands = [np.abs(v.astype(np.float64)) for v in host if v.dtype.kind == "f"]
            largest = np.maximum.reduce([np.broadcast_to(v, e.shape) for v in operands]) \
                if operands else 0.0
            return eps * largest + np.spacing(np.abs(e)).astype(np.float64)
        if tol.kind == "fma":
            product = np.abs(x * xs[1].astype(np.float64))
            return eps * np.broadcast_to(product, e.shape) + np.spacing(np.abs(e)).astype(
                np.float64)
        if len(xs) == 2:          # dot: products
            y = xs[1].astype(np.float64)
            n = max(x.shape[-1] if x.ndim else 1, 1)
            s = float(np.abs(x).max(initial=0) * np.abs(y).max(initial=0) * n)
            return 2 * n * eps * s + float(np.finfo(e.dtype).tiny)
        if tol.kind == "sum":
            fx = x[np.isfinite(x)]
            return 2 * n * eps * float(np.abs(fx).sum()) + float(np.finfo(e.dtype).tiny)
        if tol.kind == "prod":
            return 2 * n * eps * np.abs(e.astype(np.float64)) + float(np.finfo(e.dtype).tiny)
        fx = x[np.isfinite(x)]
        m = float(np.mean(fx ** 2)) if fx.size else 0.0
        b = 4 * n * eps * 2 * m + float(np.finfo(e.dtype).tiny)
        if tol.kind == "var":
            return b
        ev = np.abs(e.astype(np.float64))
        return np.where(ev > 0, np.maximum(b / np.maximum(2 * ev, 1e-300), np.sqrt(b)) , np.sqrt(b))


def _diff_message(g, e, bad):
    k = bad[:5]
    gf, ef = g.ravel(), e.ravel()
    parts = [f"[{i}] ours {gf[i]!r} expected {ef[i]!r}" for i in k]
    return f"{len(bad)} of {e.size} elements differ: " + "; ".join(parts)


# --------------------------------------------------------------------------------------
# Building functions
# --------------------------------------------------------------------------------------

_counter = itertools.count()
_GLOBALS = {"np": np, "math": math}


def make_function(src: str, name: str):
    from numba import prange
    filename = f"<differential {next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    g = dict(_GLOBALS, prange=prange)
    exec(compile(src, filename, "exec"), g)
    fn = g["f"]
    fn.__qualname__ = fn.__name__ = "f_" + re.sub(r"\W+", "_", name)[:40]
    return fn


PARAMS = "abc"


def function_source(entry: Entry, form: str, variant: dict) -> str:
    args = PARAMS[:entry.arity]
    sub = dict(variant)
    if entry.group == "preduce":
        body = entry.expr.format(a="a[i]", **sub)
        return (f"def f(a):\n    s = {variant['init']}\n    for i in prange(a.shape[0]):\n"
                f"        {body}\n    return s\n")
    if form == "prange":
        idx = {p: f"{p}[i]" for p in args}
        expr = entry.expr.format(**idx, **sub)
        return (f"def f({', '.join(args)}, out):\n    for i in prange(out.shape[0]):\n"
                f"        out[i] = {expr}\n")
    expr = entry.expr.format(**{p: p for p in args}, **sub)
    return f"def f({', '.join(args)}):\n    return {expr}\n"


# --------------------------------------------------------------------------------------
# Running one (entry, dtype, target)
# --------------------------------------------------------------------------------------

@dataclass
class Result:
    entry: str
    dtype: str
    target: str
    counts: dict = field(default_factory=lambda: {k: 0 for k in (
        "pass", "documented", "known-bug", "mismatch", "error", "n/a", "unsupported",
        "unknown-unsupported")})
    signatures: int = 0
    failures: list = field(default_factory=list)
    unsupported: list = field(default_factory=list)
    documented: list = field(default_factory=list)
    known: list = field(default_factory=list)
    worst: float = 0.0
    seconds: float = 0.0

    @property
    def cases(self):
        c = self.counts
        return c["pass"] + c["documented"] + c["known-bug"] + c["mismatch"] + c["error"]

    @property
    def ok(self):
        return not self.failures

    def report(self, limit=30) -> str:
        lines = [f"{self.entry} [{self.dtype}] on {self.target}: {self.counts}"]
        lines += self.failures[:limit]
        if len(self.failures) > limit:
            lines.append(f"... {len(self.failures) - limit} more")
        return "\n".join(lines)


def _is_compile_error(e):
    from numba.core import errors
    return isinstance(e, errors.NumbaError)


def _err_type(e):
    from numba_mlir_gpu.lowering.errors import UnsupportedConstructError
    from numba.core import errors
    if isinstance(e, UnsupportedConstructError):
        return "unsupported"
    if isinstance(e, errors.TypingError):
        return "typing"
    if isinstance(e, errors.NumbaError):
        return "compile"
    return "runtime"


def _signature(args):
    import numba
    return tuple(numba.typeof(a) for a in args)


def _scalar(dtype, v):
    return np.dtype(dtype).type(v)


# Device (CuPy) arrays: one contiguous, one Fortran-ordered and one strided layout per
# rank; a kernel reads every other layout's host copy the same way (the GPU grid's time
# is mostly compilation, and each device signature is a compilation of its own).
DEVICE_LAYOUTS = ("c1", "a1", "f2", "a2", "c3")


def _pyscalar(dtype, v):
    k = kind_of(dtype)
    return bool(v) if k == "b" else int(v) if k in "iu" else complex(v) if k == "c" else float(v)


class Runner:
    def __init__(self, entry: Entry, dtype, target: str, full: bool, seed: int = SEED,
                 device: bool = True):
        import numba
        import numba_mlir_gpu
        self.entry, self.target, self.full = entry, target, full
        self.dtypes = dtype if isinstance(dtype, tuple) else (dtype,) * max(entry.arity, 1)
        self.dtype = self.dtypes[0]
        self.label = "-".join(dict.fromkeys(self.dtypes)) if isinstance(dtype, tuple) else dtype
        self.result = Result(entry.name, self.label, target)
        self.rng = np.random.default_rng([seed, zlib.crc32(entry.name.encode()),
                                          (DTYPES + COMPLEX).index(self.dtype)])
        self.tol = TOLERANCES[entry.gpu_tol if target == "gpu" and entry.gpu_tol
                              else entry.tol]
        self.guard = entry.guard
        if kind_of(self.dtype) == "c":
            tol, self.guard = COMPLEX_ENTRIES[entry.name]
            self.tol = TOLERANCES[tol]
        self.oracle = entry.oracle_for(self.dtype)
        if len(set(self.dtypes)) > 1:
            self.oracle = "either"     # MIXED_REASON
        self.numba = numba
        self.ours_njit = lambda fn: numba_mlir_gpu.njit(target=target, fallback=False)(fn)
        self.cupy = None
        if target == "gpu" and device:
            try:
                import cupy
                self.cupy = cupy
            except Exception:
                self.cupy = None

    # ---- oracle calls
    def _numpy(self, fn, args):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return fn(*args), None
            except Exception as e:       # NumPy raising is an expected outcome too
                return None, e

    def run(self):
        t0 = time.perf_counter()
        e = self.entry
        for variant in e.variants:
            for form in e.forms:
                if form in ("array-scalar", "scalar-array") and e.arity != 2:
                    continue
                try:
                    self.run_form(form, variant)
                except Exception:
                    self.result.counts["error"] += 1
                    self.result.failures.append(
                        f"{self._id(form, variant)}: harness error\n{traceback.format_exc()}")
        self.result.seconds = time.perf_counter() - t0
        return self.result

    def _id(self, form, variant, layout=""):
        v = ",".join(f"{k}={x}" for k, x in variant.items())
        return f"{self.entry.name}{'{' + v + '}' if v else ''} [{self.label}] {form}" + \
            (f" {layout}" if layout else "")

    # ---- inputs
    def _values(self, vs, dtype, n):
        return VALUE_SETS[vs](dtype, n, self.rng)

    def _arrays(self, layout, shape, vs, xp=np):
        """One list of argument arrays per view of the layout."""
        lay = LAYOUTS[layout]
        out = []
        for base_shape, view in lay.views(shape):
            size = int(np.prod(base_shape))
            views = []
            for k, dt in enumerate(self.dtypes[:self.entry.arity]):
                base = self._values(vs, dt, size).reshape(base_shape)
                views.append((base, view))
            out.append(views)
        return out

    def _guard(self, form, arrays):
        g = self.guard
        if g is None:
            return arrays
        if getattr(g, "per_variant", False):
            return g(self.dtype, form, list(arrays), self._state["variant"])
        return g(self.dtype, form, list(arrays))

    # ---- forms
    def run_form(self, form, variant):
        e = self.entry
        src = function_source(e, form, variant)
        fn = make_function(src, e.name)
        ours = self.ours_njit(fn)
        ref = self.numba.njit(fn)
        state = {"sig_outcome": {}, "ours": ours, "ref": ref, "fn": fn, "src": src,
                 "form": form, "variant": variant}
        self._state = state
        if e.group == "preduce":
            return self._run_layouts(state, self._sampled(e.layouts or ("c1", "a1")))
        if form == "scalar-array" and not self.full:
            return
        if form == "scalar":
            if self.target == "gpu":
                return      # no kernel: the host code is the CPU target's, swept there
            return self._run_scalars(state)
        if form == "prange":
            return self._run_prange(state)
        if form in ("array-scalar", "scalar-array"):
            return self._run_array_scalar(state)
        if e.group == "dot":
            return self._run_dot(state)
        layouts = e.layouts
        if not layouts:
            if e.arity == 1:
                layouts = ("c1", "a1", "c2", "f2", "a2", "ro2")
            else:
                layouts = ("c1", "a1", "c2", "f2", "a2") + (("bcast",) if e.arity == 2 else ())
        if len(set(self.dtypes)) > 1:           # mixed dtypes: fewer layouts
            layouts = ("c1", "a2")
        return self._run_layouts(state, self._sampled(layouts))

    def _sampled(self, layouts):
        """The CI sample compiles fewer signatures: of SAMPLE_LAYOUTS, the first
        one the entry has (1-d C where it has it) and one more, rotating over the
        entries, so that the sample as a whole still runs every layout."""
        if self.full:
            return layouts
        kept = tuple(x for x in layouts if x in SAMPLE_LAYOUTS)
        if len(kept) <= 2:
            return kept or layouts[:1]
        others = kept[1:]
        return (kept[0], others[_ENTRY_INDEX[self.entry.name] % len(others)])

    def _run_layouts(self, state, layouts):
        for layout in layouts:
            if layout == "bcast":
                self._run_broadcast(state)
                continue
            for shape in shapes_for(layout, self.full):
                if self.entry.group == "preduce" and "a[0]" in state["variant"].get("init", "") \
                        and not shape:
                    continue        # a[0] of an empty array: undefined (no bounds check)
                for vs in self.entry.values:
                    for views in self._arrays(layout, shape, vs):
                        bases = [b for b, _ in views]
                        arrays = [v(np, b) for b, v in views]
                        arrays = self._guard(state["form"], arrays)
                        self.case(state, layout, arrays, shape)
                        if self.cupy is not None:
                            self._device_case(state, layout, arrays, views, shape)

    def _device_case(self, state, layout, host_arrays, views, shape):
        cp = self.cupy
        if layout not in DEVICE_LAYOUTS:
            return
        dev = []
        for (base, view), host in zip(views, host_arrays):
            # guards may have replaced values: rebuild the view from the host view's values
            b = cp.asarray(base)
            d = view(cp, b)
            if d.shape == host.shape and d.size and not d.strides.count(0):
                d[...] = cp.asarray(host)
            elif d.size and d.strides.count(0):
                d = view(cp, cp.asarray(base))
                if not np.array_equal(cp.asnumpy(d), host, equal_nan=kind_of(host.dtype.name) == "f"):
                    return          # a guard changed a broadcast view's values: host only
            dev.append(d)
        self.case(state, layout + "+cupy", dev, shape, host_equiv=host_arrays)

    def _run_broadcast(self, state):
        # 2-d (r, c) with 1-d (c,): NumPy broadcasting between arguments
        for shape in SHAPES_2D:
            for vs in self.entry.values[:1]:
                a = self._values(vs, self.dtypes[0], int(np.prod(shape))).reshape(shape)
                b = self._values(vs, self.dtypes[1], shape[1])
                arrays = self._guard(state["form"], [a, b])
                self.case(state, "c2 with c1", arrays, shape)
        # incompatible shapes: NumPy raises ValueError
        a = self._values("random", self.dtypes[0], 6).reshape(2, 3)
        b = self._values("random", self.dtypes[1], 4)
        self.case(state, "c2 with c1 (incompatible)", [a, b], (2, 3))

    def _run_array_scalar(self, state):
        form = state["form"]
        for shape in [0, 1, 7, 64, 1031]:
            for vs in self.entry.values:
                arr = self._values(vs, self.dtypes[0], shape)
                sv = specials(self.dtypes[1])
                for s in sv[:: max(len(sv) // 6, 1)]:
                    for box in ("numpy", "python") if self.full else ("numpy",):
                        sc = _scalar(self.dtypes[1], s) if box == "numpy" else \
                            _pyscalar(self.dtypes[1], s)
                        args = [arr, sc] if form == "array-scalar" else [sc, arr]
                        if form == "scalar-array":
                            args = self._guard(form, [sc, arr])
                        else:
                            args = self._guard(form, args)
                        self.case(state, f"c1,{box} scalar", args, shape,
                                  oracle="either" if box == "python" else None)

    def _run_scalars(self, state):
        e = self.entry
        vals = [specials(dt) for dt in self.dtypes[:e.arity]]
        n = 40 if self.full else 16
        rnd = [mixed(dt, n, self.rng) for dt in self.dtypes[:e.arity]]
        if e.arity == 1:
            tuples = [(v,) for v in vals[0]] + [(v,) for v in rnd[0]]
        else:
            k = len(vals[0])
            pairs = [(vals[0][i], vals[1][j]) for i in range(k) for j in range(len(vals[1]))]
            if not self.full:
                idx = self.rng.choice(len(pairs), min(len(pairs), 40), replace=False)
                pairs = [pairs[i] for i in sorted(idx)]
            tuples = pairs + list(zip(*rnd))
        for t in tuples:
            args = [_scalar(dt, v) for dt, v in zip(self.dtypes, t)]
            args = self._guard("scalar", args)
            self.case(state, "scalar", args, (), scalar=True)

    def _run_prange(self, state):
        # out's dtype: the dtype of the scalar expression, as stock Numba types it
        e = self.entry
        probe_src = function_source(e, "scalar", state["variant"])
        probe = self.numba.njit(make_function(probe_src, e.name))
        try:
            args = [_scalar(dt, 1) for dt in self.dtypes[:e.arity]]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                probe(*args)
            odt = np.dtype(str(probe.nopython_signatures[0].return_type))
        except Exception:
            self.result.counts["n/a"] += 1
            return
        if odt.kind not in "biufc":
            self.result.counts["n/a"] += 1
            return
        state["array_fn"] = make_function(function_source(e, "array", state["variant"]), e.name)
        if e.name.startswith("math."):
            # math.* takes no arrays: Python's value element by element (exact
            # where Numba's is not: math.hypot of uint64 values above 2**63)
            scalar_fn = make_function(function_source(e, "scalar", state["variant"]), e.name)
            state["array_fn"] = np.vectorize(scalar_fn, otypes=[object])
        for layout in ("c1",):
            for shape in shapes_for(layout, self.full):
                for vs in e.values:
                    for views in self._arrays(layout, shape, vs):
                        arrays = [v(np, b) for b, v in views]
                        arrays = self._guard("prange", arrays)
                        out = np.zeros(shape, odt)
                        self.case(state, layout, arrays + [out], shape, out_index=len(arrays))
                        if self.cupy is not None and layout == "c1":
                            cp = self.cupy
                            dev = [cp.asarray(a) for a in arrays] + [cp.zeros(shape, odt)]
                            self.case(state, layout + "+cupy", dev, shape,
                                      out_index=len(arrays), host_equiv=arrays + [out])

    def _run_dot(self, state):
        dt = self.dtype
        shapes = [((n,), (n,)) for n in (0, 1, 3, 64, 1031, 4099)] + \
                 [((m, n), (n,)) for m, n in ((1, 1), (3, 5), (64, 33), (7, 1031))] + \
                 [((n,), (n, m)) for m, n in ((1, 1), (3, 5), (33, 64))] + \
                 [((m, n), (n, k)) for m, n, k in ((1, 1, 1), (3, 5, 7), (33, 17, 65),
                                                   (64, 64, 64))]
        for sa, sb in shapes:
            for vs in self.entry.values:
                for order in ("C", "F"):
                    a = self._values(vs, dt, int(np.prod(sa))).reshape(sa, order=order)
                    b = self._values(vs, dt, int(np.prod(sb))).reshape(sb, order=order)
                    self.case(state, f"{len(sa)}x{len(sb)} {order}", [a, b], sa)
        a = self._values("plain", dt, 6).reshape(2, 3)
        b = self._values("plain", dt, 4)
        self.case(state, "mismatched", [a, b], (2, 3))

    # ---- one case
    def case(self, state, layout, args, shape, scalar=False, out_index=None, oracle=None,
             host_equiv=None):
        res = self.result
        form = state["form"]
        oracle = oracle or self.oracle
        if oracle != "either" and (out_index is not None or self.entry.group == "preduce"):
            oracle = "numba"        # a prange body computes with Numba's scalar typing
        host = host_equiv if host_equiv is not None else args
        key = (form, _signature(args))
        outcome = state["sig_outcome"].get(key)
        if outcome is not None and outcome != "ok":
            res.counts[outcome] += 1 if outcome in ("n/a", "unsupported", "known-bug") else 0
            return
        # expected: one oracle, or both for "either"
        oracles = ("numpy", "numba") if oracle == "either" else (oracle,)
        expectations = []
        for o in oracles:
            if o == "numpy":
                if out_index is not None:
                    # NumPy's array result, stored into `out`'s dtype
                    inputs = [x for i, x in enumerate(host) if i != out_index]
                    r, x = self._numpy(state["array_fn"], inputs)
                    if x is None:
                        with np.errstate(all="ignore"):
                            r = np.asarray(r).astype(host[out_index].dtype)
                    expectations.append(("numpy", r, x))
                    continue
                expectations.append(("numpy",) + self._numpy(state["fn"], list(host)))
            else:
                r, x = self._ref(state, host, out_index)
                if x is not None and _is_compile_error(x):
                    if oracle == "either":
                        continue
                    state["sig_outcome"][key] = "n/a"
                    res.counts["n/a"] += 1
                    return
                expectations.append(("numba", r, x))
        # ours
        call_args = [a.copy() if isinstance(a, np.ndarray) and a.flags.writeable and
                     a.base is None else a for a in args]
        if out_index is not None:
            call_args[out_index] = args[out_index].copy() if isinstance(args[out_index],
                                                                         np.ndarray) \
                else args[out_index].copy()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = state["ours"](*call_args)
            got_exc = None
        except Exception as ex:
            got, got_exc = None, ex
        if out_index is not None and got_exc is None:
            got = call_args[out_index]
        desc = lambda: f"{self._id(form, state['variant'], layout)} shape {shape}: " \
            f"{_short_args(host)}"
        if got_exc is not None and not _is_compile_error(got_exc) and \
                key[1] not in [tuple(x) for x in state["ours"].signatures]:
            # a plain Python exception escaping the compiler (a lowering crash)
            msg = f"{type(got_exc).__name__}: {_first_line(got_exc)}"
            full = f"{type(got_exc).__name__}: {str(got_exc)[:3000]}"
            state["sig_outcome"][key] = "known-bug" if self._known_bug(form, full) else "error"
            if state["sig_outcome"][key] == "error":
                res.counts["error"] += 1
                res.failures.append(f"COMPILER CRASH {self._id(form, state['variant'], layout)} "
                                    f"{key[1]}: {msg}")
            return
        if got_exc is not None and _is_compile_error(got_exc):
            kind = _err_type(got_exc)
            # does stock Numba compile it?
            _, ref_exc = self._ref(state, host, out_index)
            if ref_exc is not None and _is_compile_error(ref_exc):
                state["sig_outcome"][key] = "n/a"
                res.counts["n/a"] += 1
                return
            if kind == "unsupported":
                rule = _match(KNOWN_UNSUPPORTED, self.entry.name, self.label,
                              f"{form} {layout}")
                msg = f"{self._id(form, state['variant'], layout)} {key[1]}: " \
                    f"{_first_line(got_exc)}"
                if rule:
                    state["sig_outcome"][key] = "unsupported"
                    res.counts["unsupported"] += 1
                    res.unsupported.append(msg)
                else:
                    state["sig_outcome"][key] = "unknown-unsupported"
                    res.counts["unknown-unsupported"] += 1
                    res.unsupported.append(msg)
                    res.failures.append("UNSUPPORTED (not in KNOWN_UNSUPPORTED): " + msg)
                return
            full = f"{type(got_exc).__name__}: {str(got_exc)[:3000]}"
            if self._known_bug(form, full):
                state["sig_outcome"][key] = "known-bug"
                return
            state["sig_outcome"][key] = "error"
            res.counts["error"] += 1
            res.failures.append(f"COMPILE ERROR {self._id(form, state['variant'], layout)} "
                                f"{key[1]}: {type(got_exc).__name__}: {_first_line(got_exc)}")
            return
        state["sig_outcome"].setdefault(key, "ok")
        scalar = scalar or (got_exc is None and not isinstance(got, tuple) and np.ndim(got) == 0)
        msgs = []
        for o, expected, exp_exc in expectations:
            msg = self._outcome(got, got_exc, expected, exp_exc, host, scalar, o)
            if msg is None:
                res.counts["pass"] += 1
                return
            msgs.append(f"{msg} (oracle {o})")
        msg = "; ".join(msgs)
        if self._documented(form, msg) or self._known_bug(form, msg):
            return
        kind = "error" if got_exc is not None else "mismatch"
        res.counts[kind] += 1
        res.failures.append(f"{kind.upper()} {desc()}: {msg}")

    def _outcome(self, got, got_exc, expected, exp_exc, host, scalar, oracle):
        """None when ours agrees with this oracle's result, else why not."""
        if exp_exc is not None or got_exc is not None:
            if exp_exc is not None and got_exc is not None and \
                    (isinstance(got_exc, type(exp_exc)) or isinstance(exp_exc, type(got_exc))):
                return None
            return f"ours {_exc(got_exc)} vs {_exc(exp_exc)}" + \
                (f" (ours returned {_short(got)})" if got_exc is None else "")
        if scalar and isinstance(got, float) and isinstance(expected, float):
            rt = self._return_type(host)
            if rt == "float32":      # boxed as Python floats: compare in float32
                got, expected = np.float32(got), np.float32(expected)
        msg, worst = compare(got, expected, self.tol, inputs=host, scalar=scalar)
        if msg is None and scalar and oracle == "numba" and type(got) is not type(expected):
            msg = f"type {type(got).__name__} != {type(expected).__name__}"
        if msg is None:
            self.result.worst = max(self.result.worst, worst)
        return msg

    def _return_type(self, host):
        try:
            ref = self._state["ref"]
            return str(ref.overloads[_signature(host)].signature.return_type)
        except Exception:
            return None

    def _known_bug(self, form, msg):
        return self._explained(KNOWN_BUGS, "known-bug", self.result.known, 2, 300, form, msg)

    def _documented(self, form, msg):
        return self._explained(DOCUMENTED, "documented", self.result.documented, 3, 200,
                               form, msg)

    def _explained(self, rules, count: str, examples: list, keep: int, width: int,
                   form, msg) -> bool:
        """Does a rule of `rules` explain the mismatch? Counted under `count`,
        the first `keep` kept as examples (message cut to `width`)."""
        rule = _match(rules, self.entry.name, self.label, form, msg)
        if rule is None:
            return False
        self.result.counts[count] += 1
        if len(examples) < keep:
            examples.append(f"{self.entry.name} [{self.label}] {form}: {msg[:width]}"
                            f" -- {rule[4]} ({rule[5]})")
        return True

    def _ref(self, state, host, out_index):
        args = list(host)        # the functions write only `out` (copied)
        if out_index is not None:
            args[out_index] = np.copy(args[out_index])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = state["ref"](*args)
        except Exception as ex:
            return None, ex
        if out_index is not None:
            r = args[out_index]
        return r, None


def _first_line(e):
    lines = [x for x in str(e).splitlines() if x.strip() and not x.startswith("Failed in ")]
    for x in lines:
        if "numba-mlir-gpu" in x or "error:" in x:
            return x.strip()[:300]
    return (lines[0] if lines else repr(e))[:300]


def _short(x):
    r = repr(x)
    return r if len(r) < 200 else r[:200] + "..."


def _exc(e):
    return "no exception" if e is None else f"{type(e).__name__}({str(e)[:80]!r})"


def _short_args(args):
    parts = []
    for a in args:
        if hasattr(a, "get") and not isinstance(a, np.ndarray):
            parts.append(f"cupy{a.shape} strides {a.strides}")
        elif isinstance(a, np.ndarray):
            flat = a.ravel()
            vals = np.array2string(flat[:6], separator=",", threshold=8)
            parts.append(f"{a.dtype}{a.shape} strides {a.strides}: {vals}"
                         f"{'...' if a.size > 6 else ''}")
        else:
            parts.append(repr(a))
    return "(" + "; ".join(parts) + ")"


# --------------------------------------------------------------------------------------
# The grid and the CI sample
# --------------------------------------------------------------------------------------

def full_grid() -> list[tuple[str, object]]:
    params = []
    for e in ENTRIES:
        for d in e.dtypes:
            params.append((e.name, d))
        params += [(e.name, d) for d in COMPLEX if e.name in COMPLEX_ENTRIES]
        if e.mixed_dtypes:
            for d1, d2 in itertools.product(DTYPES, DTYPES):
                if d1 != d2 and d1 in e.dtypes and d2 in e.dtypes:
                    params.append((e.name, (d1, d2)))
    return params


def sample_grid(seed: int = SEED) -> list[tuple[str, object]]:
    """A fixed sample: every entry once, with one dtype; the dtypes rotate over the
    entries (seeded) so that every dtype is covered many times."""
    rng = np.random.default_rng(seed)
    params = []
    for i, e in enumerate(ENTRIES):
        dts = list(e.dtypes)
        params.append((e.name, dts[int(rng.integers(0, len(dts)))]))
    return params


def grid(mode: Optional[str] = None):
    """`full`: every dtype of every entry; `sample`: every entry once; `half`
    (the default, CI's): the half of the sample this week runs (`week_half`)."""
    mode = mode if mode is not None else os.environ.get(ENV_SWEEP, "half")
    return full_grid() if mode == "full" else this_weeks_half(sample_grid(), mode)


def this_weeks_half(params, mode: Optional[str] = None) -> list:
    """`params` as the sweep mode runs a sample: all of them (`sample`, or
    `full`), or (`half`, the default, CI's) this week's half (`week_half`).
    The larger test grids use it too (tests/support.py)."""
    mode = mode if mode is not None else os.environ.get(ENV_SWEEP, "half")
    params = list(params)
    return params if mode in ("sample", "full") else week_half(params)


def week_half(params: list, today: Optional[datetime.date] = None) -> list:
    """Every other entry of `params`: the even ones in even ISO weeks, the odd
    ones in odd weeks, so that CI's time stays in bounds and each entry runs
    every second week (`NUMBA_MLIR_GPU_SWEEP=sample` runs all of them)."""
    week = (today or datetime.date.today()).isocalendar()[1]
    return [p for i, p in enumerate(params) if i % 2 == week % 2]


def compiles_kernels(name: str) -> bool:
    """Whether an entry has a form that makes GPU kernels (not only scalar forms,
    whose host code the gpu target compiles as the cpu target does)."""
    return any(f != "scalar" for f in BY_NAME[name].forms)


def param_id(p):
    name, d = p
    return f"{name}-{'-'.join(d) if isinstance(d, tuple) else d}"


def run_param(p, target="cpu", full=None):
    name, d = p
    if full is None:
        full = os.environ.get(ENV_SWEEP, "half") == "full"
    return Runner(BY_NAME[name], d, target, full).run()


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------

def _worker(args):
    p, target, full = args
    try:
        return run_param(p, target, full)
    except Exception:
        r = Result(p[0], str(p[1]), target)
        r.failures.append(traceback.format_exc())
        return r


def _isolated(work: list, jobs: int):
    """Results of `_worker(w)` for each w, each in a process of its own
    (testing/isolated.py): a test whose process dies is a failing Result
    naming its exit code."""
    def died(w, code):
        (p, target, _) = w
        result = Result(p[0], str(p[1]), target)
        result.failures.append(f"the test's process died (exit code {code}) without a "
                               "result: a crash, not a mismatch")
        return result
    # forked: the command line's process builds the grid and compiles nothing
    return run_isolated(_call_worker, work, jobs, died)


def _call_worker(w):
    return _worker(w)       # looked up at call time (the tests replace it)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--only", default=None, help="regex on entry names")
    ap.add_argument("--dtype", default=None, help="regex on dtypes")
    ap.add_argument("--out", default=None, help="write the report to this file")
    ap.add_argument("--ids", default=None, help="file of test ids (entry-dtype), one a line")
    ap.add_argument("--shard", default=None, help="K/N: run the K-th of N slices (0-based)")
    args = ap.parse_args(argv)
    params = full_grid() if args.full else sample_grid()
    if args.target == "gpu":
        params = [p for p in params if compiles_kernels(p[0])]
    if args.only:
        params = [p for p in params if re.search(args.only, p[0])]
    if args.dtype:
        params = [p for p in params if re.fullmatch(args.dtype, param_id(p).split("-", 1)[-1]
                                                    if False else str(p[1]))]
    if args.ids:
        wanted = set(open(args.ids).read().split("\n"))
        params = [p for p in params if param_id(p) in wanted]
    if args.shard:
        k, n = map(int, args.shard.split("/"))
        params = params[k::n]
    t0 = time.perf_counter()
    work = [(p, args.target, args.full) for p in params]
    results = []
    log = open(args.out + ".failures", "w") if args.out else None

    def record(r):
        results.append(r)
        _progress(r, len(results), len(work))
        if log and (not r.ok or r.unsupported or r.known):
            log.write(r.report(limit=6) + "\n" + "\n".join(r.unsupported[:3] + r.known[:2])
                      + "\n\n")
            log.flush()

    if args.jobs > 1:
        for r in _isolated(work, args.jobs):
            record(r)
    else:
        for w in work:
            record(_worker(w))
    elapsed = time.perf_counter() - t0
    text = summarize(results, elapsed, args)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0 if all(r.ok for r in results) else 1


def _progress(r, i, n):
    flag = "ok" if r.ok else "FAIL"
    c = r.counts
    print(f"[{i}/{n}] {r.entry} [{r.dtype}] {flag} {r.cases} cases {r.seconds:.1f}s "
          f"counts " + ",".join(f"{k}={v}" for k, v in c.items() if v),
          file=sys.stderr, flush=True)


def summarize(results, elapsed, args=None) -> str:
    total = {}
    for r in results:
        for k, v in r.counts.items():
            total[k] = total.get(k, 0) + v
    cases = sum(r.cases for r in results)
    lines = [f"sweep: {len(results)} (entry, dtype) tests, {cases} cases, {elapsed:.0f} s",
             f"counts: {total}"]
    worst = {}
    for r in results:
        tol = BY_NAME[r.entry].tol
        if r.worst:
            worst[(r.entry, r.dtype)] = r.worst
    lines.append("largest errors seen (ulps, or fraction of the reduction bound):")
    for (e, d), w in sorted(worst.items(), key=lambda kv: -kv[1])[:25]:
        lines.append(f"  {e} [{d}]: {w:.3g}")
    uns = [u for r in results for u in r.unsupported]
    lines.append(f"unsupported signatures: {len(uns)}")
    lines += ["  " + u for u in uns]
    known = [u for r in results for u in r.known]
    lines.append(f"known bugs (first per test): {len(known)}")
    lines += ["  " + u for u in known]
    docs = [u for r in results for u in r.documented]
    lines.append(f"documented differences (first per test): {len(docs)}")
    lines += ["  " + u for u in docs]
    fails = [r for r in results if not r.ok]
    lines.append(f"failing tests: {len(fails)}")
    for r in fails:
        lines.append(r.report(limit=8))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
