"""Numba's `fastmath=` option: without it, correctly rounded division and
sqrt (on the GPU, multiplications and additions in kernels fuse into FMAs
as CUDA's compilers do, unless $NUMBA_MLIR_GPU_FMA=0); Numba's flags on
every floating-point operation with it."""
import math

import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu import inspect_mlir, inspect_ptx

from .support import TARGETS, assert_same


def axpy_ratio(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i] / x[i]


def roots(x, out):
    for i in prange(x.shape[0]):
        out[i] = math.sqrt(x[i])


F32 = numba.float32[::1]


def ptx_of(fn, fastmath, sig) -> str:
    f = numba_mlir_gpu.njit(target="compile-only", fastmath=fastmath)(fn)
    f.compile(sig)
    return "\n".join(inspect_ptx(f, f.signatures[0]))


def instructions(ptx: str) -> set:
    return {line.split()[0] for line in ptx.splitlines()
            if line.strip() and line.split()[0][:3] in ("fma", "div", "mul", "add", "sqr")}


@pytest.mark.parametrize("fastmath, fma, expected, absent", [
    (False, "0", {"mul.rn.f32", "add.rn.f32", "div.rn.f32"}, {"fma.rn.f32", "div.approx.f32"}),
    (False, "", {"fma.rn.f32", "div.rn.f32"}, {"div.approx.f32"}),
    (True, "0", {"fma.rn.f32", "div.approx.f32"}, {"div.rn.f32"}),
    ({"contract"}, "0", {"fma.rn.f32", "div.rn.f32"}, {"div.approx.f32"}),
    ({"arcp"}, "", {"fma.rn.f32"}, set()),
])
def test_kernel_arithmetic_follows_the_flags(monkeypatch, fastmath, fma, expected, absent):
    monkeypatch.setenv("NUMBA_MLIR_GPU_FMA", fma)
    found = instructions(ptx_of(axpy_ratio, fastmath, (numba.float32, F32, F32, F32)))
    assert expected <= found and not absent & found, found


def complex_products(z, w, out):
    for i in prange(z.shape[0]):
        out[i] = z[i] * w[i] + z[i] / w[i]


@pytest.mark.parametrize("fastmath, fused", [(False, False), (True, True)])
def test_complex_arithmetic_is_not_contracted_unless_fastmath(fastmath, fused):
    """Numba computes ar*br - ai*bi with two roundings; an FMA there turns
    inf - inf into -inf instead of NaN and leaves z * conj(z) an imaginary
    part, so complex arithmetic keeps them apart unless fastmath asks."""
    c = numba.complex128[::1]
    found = instructions(ptx_of(complex_products, fastmath, (c, c, c)))
    assert ("fma.rn.f64" in found) == fused, found
    assert "mul.rn.f64" in found or fused


@pytest.mark.parametrize("fastmath, sqrt", [(False, "sqrt.rn.f32"), (True, "sqrt.approx.f32"),
                                            ({"contract"}, "sqrt.rn.f32")])
def test_kernel_sqrt_is_ieee_unless_approximate_functions_are_allowed(fastmath, sqrt):
    found = instructions(ptx_of(roots, fastmath, (F32, F32)))
    assert {op for op in found if op.startswith("sqrt")} == {sqrt}


def test_flags_reach_the_mlir():
    f = numba_mlir_gpu.njit(target="cpu", fastmath={"nnan", "contract"})(axpy_ratio)
    x = np.linspace(1, 2, 64)
    f(2.0, x, x, np.empty_like(x))
    text = inspect_mlir(f)
    assert "fastmath<nnan,contract>" in text or "fastmath<contract,nnan>" in text
    plain = numba_mlir_gpu.njit(target="cpu")(axpy_ratio)
    plain(2.0, x, x, np.empty_like(x))
    assert "fastmath<" not in inspect_mlir(plain).replace("fastmath<none>", "")


def dot_like(x, y):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i] * y[i] + math.sqrt(x[i]) / y[i]
    return s


@pytest.mark.parametrize("target", TARGETS)
def test_fastmath_results_close_to_numba_fastmath(target):
    rng = np.random.default_rng(0)
    x, y = rng.random(10_000) + 0.5, rng.random(10_000) + 0.5
    expected = numba.njit(fastmath=True)(dot_like)(x, y)
    got = numba_mlir_gpu.njit(target=target, fastmath=True)(dot_like)(x, y)
    assert_same(got, expected, rtol=1e-12)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    out, ref = np.empty_like(x32), np.empty_like(x32)
    numba.njit(fastmath=True)(axpy_ratio)(np.float32(2.5), x32, y32, ref)
    numba_mlir_gpu.njit(target=target, fastmath=True)(axpy_ratio)(np.float32(2.5), x32, y32, out)
    assert_same(out, ref, rtol=1e-6)


# A callee keeps its own fastmath option inside a caller's (stumpy's _mass,
# fastmath=True, calls a helper compiled without nnan/ninf so that its isinf
# tests survive).
@numba.njit(fastmath={"nsz", "arcp", "contract", "afn", "reassoc"})
def _distance_keeping_infinities(x, mu):
    if np.isinf(x) or np.isinf(mu):
        return np.inf
    return x - mu


def _fast_caller(a, mu):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = _distance_keeping_infinities(a[i], mu)
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_callees_keep_their_own_fastmath_flags(target):
    ours = numba_mlir_gpu.njit(target=target, fastmath=True)(_fast_caller)
    stock = numba.njit(fastmath=True)(_fast_caller)
    for a, mu in [(np.array([1.0, np.inf, -np.inf]), 0.5), (np.array([1.0, 2.0]), np.inf)]:
        np.testing.assert_array_equal(ours(a, mu), stock(a, mu))
    assert ours(np.array([-np.inf]), 0.5)[0] == np.inf
