"""fp64="truncate": float64 arithmetic in GPU kernels as float32, float64
storage kept. Code generation is checked here (compile-only: the PTX's only
float64 instructions convert at loads, stores and the kernel's scalar
parameters); values, against NumPy with float32 tolerances, on the GPU."""
import collections
import math

import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu import UnsupportedConstructError


def black_scholes(s, k, t, r, v, call):
    total = 0.0
    for i in prange(s.shape[0]):
        d1 = (math.log(s[i] / k[i]) + (r + 0.5 * v * v) * t[i]) / (v * math.sqrt(t[i]))
        d2 = d1 - v * math.sqrt(t[i])
        n1 = 0.5 * (1.0 + math.erf(d1 / math.sqrt(2.0)))
        n2 = 0.5 * (1.0 + math.erf(d2 / math.sqrt(2.0)))
        call[i] = s[i] * n1 - k[i] * math.exp(-r * t[i]) * n2
        total += call[i]
    return total


def row_softmax(x, out):
    for i in prange(x.shape[0]):
        m = -np.inf
        for j in range(x.shape[1]):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(x.shape[1]):
            e = np.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        for j in range(x.shape[1]):
            out[i, j] /= s


def weighted_histogram(k, w, h):
    for i in prange(k.shape[0]):
        h[k[i]] += w[i] * 0.5


def escape_time(c_re, c_im, out):
    for i in prange(c_re.shape[0]):
        zr, zi, n = 0.0, 0.0, 0
        while n < 200 and zr * zr + zi * zi < 4.0:
            zr, zi = zr * zr - zi * zi + c_re[i], 2.0 * zr * zi + c_im[i]
            n += 1
        out[i] = n


def complex_scale(z, out):
    for i in prange(z.shape[0]):
        out[i] = z[i] * (1.0 + 2.0j)


CASES = {
    "black_scholes": (black_scholes, "f8(f8[::1], f8[::1], f8[::1], f8, f8, f8[::1])"),
    "row_softmax": (row_softmax, "void(f8[:, ::1], f8[:, ::1])"),
    "weighted_histogram": (weighted_histogram, "void(i8[::1], f8[::1], f8[::1])"),
    "escape_time": (escape_time, "void(f8[::1], f8[::1], i8[::1])"),
}
CONVERSIONS = {"cvt.rn.f32.f64", "cvt.f64.f32", ".param", "ld.param.f64", "ld.global.f64",
               "st.global.f64", "ld.global.nc.f64", "atom.global.add.f64", "ld.param.b64",
               "red.global.add.f64", "atom.add.f64", "ld.shared.f64", "st.shared.f64",
               "atom.shared.add.f64"}   # atomic updates add in the memory's type


def _f64_instructions(fn, sig, fp64):
    f = numba_mlir_gpu.njit(sig, target="compile-only", fp64=fp64)(fn)
    ptx = "\n".join(numba_mlir_gpu.compiled_function(f).ptx)
    return collections.Counter(line.split()[0] for line in ptx.splitlines()
                               if ".f64" in line and line.strip() and not line.startswith("//"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_truncated_kernels_compute_in_float32(case):
    fn, sig = CASES[case]
    native = _f64_instructions(fn, sig, None)
    truncated = _f64_instructions(fn, sig, "truncate")
    arithmetic = {op for op in native if op not in CONVERSIONS}
    assert arithmetic, native                   # the native kernel computes in float64
    assert not set(truncated) - CONVERSIONS, truncated


def test_complex128_is_refused():
    with pytest.raises(UnsupportedConstructError, match="complex128"):
        numba_mlir_gpu.njit("void(c16[::1], c16[::1])", target="compile-only", fallback=False,
                            fp64="truncate")(complex_scale)


def test_unknown_modes_are_refused():
    with pytest.raises(ValueError, match="fp64"):
        numba_mlir_gpu.njit(fp64="half")


@pytest.mark.gpu
def test_truncated_results_are_within_float32_tolerance():
    rng = np.random.default_rng(3)
    n = 10_007
    s, k, t = rng.uniform(50, 150, n), rng.uniform(50, 150, n), rng.uniform(0.1, 2.0, n)
    got_call, want_call = np.zeros(n), np.zeros(n)
    got = numba_mlir_gpu.njit(target="gpu", fp64="truncate")(black_scholes)(
        s, k, t, 0.02, 0.3, got_call)
    want = numba_mlir_gpu.njit(target="gpu")(black_scholes)(s, k, t, 0.02, 0.3, want_call)
    assert got_call.dtype == np.float64
    np.testing.assert_allclose(got_call, want_call, rtol=2e-4, atol=1e-4 * np.abs(want_call).max())
    assert abs(got - want) <= 1e-4 * abs(want)

    x = rng.normal(0, 3, (301, 257))
    out = np.zeros_like(x)
    numba_mlir_gpu.njit(target="gpu", fp64="truncate")(row_softmax)(x, out)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=2e-5, atol=1e-7)

    keys, w = rng.integers(0, 64, 100_003), rng.random(100_003)
    h = np.zeros(64)
    numba_mlir_gpu.njit(target="gpu", fp64="truncate")(weighted_histogram)(keys, w, h)
    np.testing.assert_allclose(h, np.bincount(keys, w * 0.5, minlength=64), rtol=1e-4)
