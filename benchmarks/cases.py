"""The benchmark cases: one Python function per case, compiled unchanged by
numba-mlir-gpu and by Numba's CPU `parallel=True`, with the CuPy and NumPy
code a user would write for the same job.

Loops over 2-d index spaces are written as one flat prange (`k -> i, j`),
the form that is fast everywhere: Numba's CPU backend runs a nested prange's
inner loop serially. `stencil5_nested` is the same stencil as two nested
pranges, which this package collapses into one 2-d parallel loop.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
from numba import prange


# ---------------------------------------------------------------- kernels

def saxpy(a, x, y, out):
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]


def fused_expression(a, b, c, d):
    return a * b + c * d                      # one parfor: four operations, one pass


def fused_prange(a, b, c, d, out):
    for i in prange(a.shape[0]):
        out[i] = a[i] * b[i] + c[i] * d[i]


def array_sum(x):
    return np.sum(x)


def array_max(x):
    return np.max(x)


def stencil5(x, out):
    n, m = x.shape
    w = m - 2
    for k in prange((n - 2) * w):
        i = k // w + 1
        j = k % w + 1
        out[i, j] = 0.25 * (x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1])


def stencil5_nested(x, out):
    n, m = x.shape
    for i in prange(1, n - 1):                # a perfect nest: one 2-d parallel loop
        for j in prange(1, m - 1):
            out[i, j] = 0.25 * (x[i - 1, j] + x[i + 1, j] + x[i, j - 1] + x[i, j + 1])


def black_scholes(S, K, T, r, v, call):
    for i in prange(S.shape[0]):
        sq = v * math.sqrt(T[i])
        d1 = (math.log(S[i] / K[i]) + (r + 0.5 * v * v) * T[i]) / sq
        d2 = d1 - sq
        n1 = 0.5 * (1.0 + math.erf(d1 * 0.7071067811865476))
        n2 = 0.5 * (1.0 + math.erf(d2 * 0.7071067811865476))
        call[i] = S[i] * n1 - K[i] * math.exp(-r * T[i]) * n2


def mandelbrot(height, width, max_iter, out):
    for k in prange(height * width):
        i = k // width
        j = k % width
        cr = -2.0 + 2.5 * j / width
        ci = -1.25 + 2.5 * i / height
        zr = 0.0
        zi = 0.0
        n = 0
        while n < max_iter and zr * zr + zi * zi <= 4.0:
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            n += 1
        out[i, j] = n


def matmul_loops_f32(A, B, C):
    """The product as a user writes it with prange over rows, the
    accumulator of the arrays' type (parallel/contractions.py runs it as one)."""
    for i in prange(A.shape[0]):
        for j in range(B.shape[1]):
            acc = np.float32(0.0)
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def matmul_loops_f64(A, B, C):
    for i in prange(A.shape[0]):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def matmul_nested(A, B, C):
    """The product with nested pranges over i and j."""
    for i in prange(A.shape[0]):
        for j in prange(B.shape[1]):
            acc = np.float32(0.0)
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def matmul(A, B, C):
    """The product as one flat prange, a float64 accumulator over float32."""
    n, p = A.shape
    m = B.shape[1]
    for k in prange(n * m):
        i = k // m
        j = k % m
        acc = 0.0
        for l in range(p):
            acc += A[i, l] * B[l, j]
        C[i, j] = acc


# Structured kernels: a prange over rows (or points) whose body has loops.

def row_softmax(x, out):
    n, m = x.shape
    for i in prange(n):
        top = x[i, 0]
        for j in range(1, m):
            top = max(top, x[i, j])
        total = 0.0
        for j in range(m):
            e = math.exp(x[i, j] - top)
            out[i, j] = e
            total += e
        for j in range(m):
            out[i, j] /= total


def layer_norm(x, out):
    n, m = x.shape
    for i in prange(n):
        mean = 0.0
        for j in range(m):
            mean += x[i, j]
        mean /= m
        var = 0.0
        for j in range(m):
            d = x[i, j] - mean
            var += d * d
        scale = 1.0 / math.sqrt(var / m + 1e-5)
        for j in range(m):
            out[i, j] = (x[i, j] - mean) * scale


def row_norms(x):
    return np.sqrt(np.sum(x * x, axis=1))


def column_sums(x):
    return np.sum(x, axis=0)


def kmeans_assign(points, centroids, labels, dists):
    n, d = points.shape
    k = centroids.shape[0]
    for i in prange(n):
        best = np.inf
        best_c = 0
        for c in range(k):
            dist = 0.0
            for t in range(d):
                diff = points[i, t] - centroids[c, t]
                dist += diff * diff
            if dist < best:
                best = dist
                best_c = c
        labels[i] = best_c
        dists[i] = best


def pairwise_distances(x, out):
    n = x.shape[0]
    for i in prange(n):
        for j in range(n):
            acc = 0.0
            for t in range(x.shape[1]):
                diff = x[i, t] - x[j, t]
                acc += diff * diff
            out[i, j] = math.sqrt(acc)


def histogram(keys, counts):
    for i in prange(keys.shape[0]):
        counts[keys[i]] += 1


def tiny(x, out):
    for i in prange(x.shape[0]):
        out[i] = x[i] + 1.0


# ---------------------------------------------------------------- NumPy versions

def np_saxpy(a, x, y, out):
    np.multiply(a, x, out=out)
    out += y


def np_stencil5(x, out):
    out[1:-1, 1:-1] = 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])


def _erf():
    try:
        from scipy.special import erf
    except ImportError:             # slow, but only the tiny smoke size runs without SciPy
        erf = np.vectorize(math.erf, otypes=[np.float64])
    return erf


def np_black_scholes(S, K, T, r, v, call):
    verf = _erf()
    sq = v * np.sqrt(T)
    d1 = (np.log(S / K) + (r + 0.5 * v * v) * T) / sq
    d2 = d1 - sq
    call[:] = S * 0.5 * (1 + verf(d1 / math.sqrt(2))) - K * np.exp(-r * T) * 0.5 * (
        1 + verf(d2 / math.sqrt(2)))


def np_matmul(A, B, C):
    np.dot(A, B, out=C)


def matrix_product(A, B):
    return A @ B


def np_row_softmax(x, out):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    out[:] = e / e.sum(axis=1, keepdims=True)


def np_layer_norm(x, out):
    mean = x.mean(axis=1, keepdims=True)
    out[:] = (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)


def np_kmeans_assign(points, centroids, labels, dists):
    d = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(-1)
    labels[:] = d.argmin(axis=1)
    dists[:] = d.min(axis=1)


def np_pairwise_distances(x, out):
    out[:] = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))


def np_histogram(keys, counts):
    counts[:] = np.bincount(keys, minlength=counts.shape[0])


# ---------------------------------------------------------------- ufuncs (vectorize, guvectorize)

BS_SIGNATURES = ["float64(float64, float64, float64, float64, float64)"]


def bs_element(S, K, T, r, v):
    """Black-Scholes call price of one option: the scalar kernel of a ufunc."""
    sq = v * math.sqrt(T)
    d1 = (math.log(S / K) + (r + 0.5 * v * v) * T) / sq
    d2 = d1 - sq
    n1 = 0.5 * (1.0 + math.erf(d1 * 0.7071067811865476))
    n2 = 0.5 * (1.0 + math.erf(d2 * 0.7071067811865476))
    return S * n1 - K * math.exp(-r * T) * n2


def l2_normalise_row(row, out):
    """One row divided by its L2 norm: the kernel of a (n)->(n) gufunc."""
    s = np.float32(0.0)
    for j in range(row.shape[0]):
        s += row[j] * row[j]
    scale = np.float32(1.0) / np.sqrt(s)
    for j in range(row.shape[0]):
        out[j] = row[j] * scale


NORMALISE_SIGNATURES = ["void(float32[:], float32[:])"]


def ufunc_black_scholes(vectorize) -> Callable:
    """(S, K, T, r, v, call) through a ufunc made by `vectorize` (ours or Numba's)."""
    bs = vectorize(BS_SIGNATURES)(bs_element)

    def run(S, K, T, r, v, call):
        bs(S, K, T, r, v, out=call)
    return run


def gufunc_row_normalise(guvectorize) -> Callable:
    """(x, out) through a (n)->(n) gufunc made by `guvectorize`."""
    g = guvectorize(NORMALISE_SIGNATURES, "(n)->(n)")(l2_normalise_row)

    def run(x, out):
        g(x, out)
    return run


def ours_ufunc(wrap: Callable, decorator: str) -> Callable:
    """target -> our function for a ufunc case."""
    def make(target):
        import numba_mlir_gpu
        made = getattr(numba_mlir_gpu, decorator)
        return wrap(lambda *a: made(*a, target=target))
    return make


def numba_ufunc(wrap: Callable, decorator: str) -> Callable:
    """() -> the same through Numba's own decorator, target="parallel"."""
    def make():
        import numba
        made = getattr(numba, decorator)
        return wrap(lambda *a: made(*a, target="parallel"))
    return make


def np_row_normalise(x, out):
    out[:] = x / np.sqrt((x * x).sum(axis=1, keepdims=True))


# ---------------------------------------------------------------- CuPy versions

def cupy_kernels(cp) -> dict:
    """CuPy's ElementwiseKernels (one pass, like ours) for the loop cases,
    and the RawKernels of the kernel API's cases."""
    from .kernel_cases import cupy_raw_kernels
    return {**_loop_kernels(cp), **cupy_raw_kernels(cp)}


def _loop_kernels(cp) -> dict:
    ek = cp.ElementwiseKernel
    return {
        "saxpy": ek("T a, T x, T y", "T out", "out = a * x + y", "bench_saxpy"),
        "black_scholes": ek(
            "float64 S, float64 K, float64 tm, float64 r, float64 v", "float64 call",
            """double sq = v * sqrt(tm);
               double d1 = (log(S / K) + (r + 0.5 * v * v) * tm) / sq;
               double d2 = d1 - sq;
               double n1 = 0.5 * (1.0 + erf(d1 * 0.7071067811865476));
               double n2 = 0.5 * (1.0 + erf(d2 * 0.7071067811865476));
               call = S * n1 - K * exp(-r * tm) * n2;""", "bench_black_scholes"),
        "mandelbrot": ek(
            "int32 height, int32 width, int32 max_iter", "int64 out",
            """int r = i / width, c = i % width;
               double cr = -2.0 + 2.5 * c / width, ci = -1.25 + 2.5 * r / height;
               double zr = 0.0, zi = 0.0; long long n = 0;
               while (n < max_iter && zr * zr + zi * zi <= 4.0) {
                   double t = zr * zr - zi * zi + cr; zi = 2.0 * zr * zi + ci; zr = t; n++;
               }
               out = n;""", "bench_mandelbrot"),
        "stencil": cp.RawKernel(r"""
            extern "C" __global__ void bench_stencil(const float *x, float *out, long long n,
                                                     long long m) {
                long long w = m - 2;
                long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
                if (k >= (n - 2) * w) return;
                long long i = k / w + 1, j = k % w + 1;
                out[i * m + j] = 0.25f * (x[(i - 1) * m + j] + x[(i + 1) * m + j]
                                          + x[i * m + j - 1] + x[i * m + j + 1]);
            }""", "bench_stencil"),
    }


# ---------------------------------------------------------------- the cases

@dataclass
class Case:
    name: str
    fn: Callable                       # ours and Numba parallel=True
    make: Callable                     # (rng, size) -> host arguments
    outputs: tuple = ()                # argument indices written (empty: the return value)
    work: tuple = ("bytes", 0)         # ("bytes", n) or ("flops", n), from the host arguments
    numpy: Optional[Callable] = None
    cupy: Optional[Callable] = None    # (cp, kernels, device arguments) -> None or result
    cupy_label: str = ""
    # reductions: CuPy giving the same host scalar our function returns (`.item()`)
    cupy_to_host: Optional[Callable] = None
    tol: float = 1e-5                  # relative L2 error against the NumPy/float64 reference
    gpu_size: int = 0
    tiny_size: int = 0
    notes: str = ""
    # cases that are not one function: ours(target) and numba() make the callables
    ours: Optional[Callable] = None
    numba: Optional[Callable] = None


def _f(rng, n, dtype, lo=0.0, hi=1.0):
    return (lo + (hi - lo) * rng.random(n)).astype(dtype)


def _saxpy_case(dtype, name):
    def make(rng, n):
        return (dtype(2.5), _f(rng, n, dtype), _f(rng, n, dtype), np.full(n, np.nan, dtype))
    return Case(name, saxpy, make, outputs=(3,),
                work=("bytes", lambda args: 3 * args[1].nbytes), numpy=np_saxpy,
                cupy=lambda cp, k, args: k["saxpy"](*args[:3], args[3]),
                cupy_label="ElementwiseKernel", gpu_size=1 << 26, tiny_size=1000)


def _black_scholes_operands(rng, n):
    return (_f(rng, n, np.float64, 5, 30), _f(rng, n, np.float64, 1, 100),
            _f(rng, n, np.float64, 0.25, 10), 0.02, 0.30, np.full(n, np.nan, np.float64))


def _stencil_case(name, fn, notes=""):
    return Case(name, fn,
                lambda rng, n: (_f(rng, (n, n), np.float32), np.zeros((n, n), np.float32)),
                outputs=(1,), work=("bytes", lambda args: 2 * args[0].nbytes),
                numpy=np_stencil5,
                cupy=lambda cp, k, args: k["stencil"](
                    (((args[0].shape[0] - 2) * (args[0].shape[1] - 2) + 255) // 256,), (256,),
                    (args[0], args[1], np.int64(args[0].shape[0]), np.int64(args[0].shape[1]))),
                cupy_label="RawKernel", gpu_size=8192, tiny_size=40, notes=notes)


def _product_case(name, dtype, m, k, n):
    """`A @ B` returning a new array: cuBLAS through our host code, against
    cupy.matmul (cuBLAS) allocating its result too. `size` scales m, k, n."""
    def make(rng, size):
        scale = size / m
        return (_f(rng, (int(m * scale), int(k * scale)), dtype),
                _f(rng, (int(k * scale), int(n * scale)), dtype))
    return Case(name, matrix_product, make,
                work=("flops", lambda args: 2 * args[0].shape[0] * args[0].shape[1]
                      * args[1].shape[1]),
                numpy=lambda a, b: a @ b, cupy=lambda cp, k, args: cp.matmul(args[0], args[1]),
                cupy_label="cupy.matmul (cuBLAS)", gpu_size=m, tiny_size=16,
                tol=1e-5 if dtype == np.float32 else 1e-12,
                notes="np.dot/@ in host code: cuBLAS gemm (SciPy's BLAS on the CPU)")


def _batched_product_case(name, dtype, batch, n):
    """`A @ B` of two batches of n x n matrices (Numba compiles no batches:
    its column is an error), against cupy.matmul (a strided-batched gemm)."""
    def make(rng, size):
        return _f(rng, (batch, size, size), dtype), _f(rng, (batch, size, size), dtype)
    return Case(name, matrix_product, make,
                work=("flops", lambda args: 2 * args[0].shape[0] * args[0].shape[1] ** 3),
                numpy=lambda a, b: a @ b, cupy=lambda cp, k, args: cp.matmul(args[0], args[1]),
                cupy_label="cupy.matmul (cuBLAS)", gpu_size=n, tiny_size=8,
                tol=1e-5 if dtype == np.float32 else 1e-12,
                notes=f"{batch} products: one strided-batched cuBLAS gemm (a BLAS gemm each "
                      "on the CPU)")


def _loop_product_case(name, dtype, n, fn=None):
    def make(rng, size):
        return (_f(rng, (size, size), dtype), _f(rng, (size, size), dtype),
                np.full((size, size), np.nan, dtype))
    fn = fn or (matmul_loops_f32 if dtype == np.float32 else matmul_loops_f64)
    return Case(name, fn, make, outputs=(2,),
                work=("flops", lambda args: 2 * args[0].shape[0] ** 3), numpy=np_matmul,
                cupy=lambda cp, k, args: cp.matmul(args[0], args[1], out=args[2]),
                cupy_label="cupy.matmul (cuBLAS)", gpu_size=n, tiny_size=16,
                tol=1e-5 if dtype == np.float32 else 1e-12,
                notes=("prange over i and j" if fn is matmul_nested else
                       "prange over i, range over j")
                + ", acc over k: a matrix product (cuBLAS)")


def cases() -> list[Case]:
    return [
        _saxpy_case(np.float32, "elementwise_f32"),
        _saxpy_case(np.float64, "elementwise_f64"),
        Case("fused_expr", fused_expression,
             lambda rng, n: tuple(_f(rng, n, np.float32) for _ in range(4)),
             work=("bytes", lambda args: 5 * args[0].nbytes),
             numpy=lambda a, b, c, d: a * b + c * d,
             cupy=lambda cp, k, args: args[0] * args[1] + args[2] * args[3],
             cupy_label="unfused operators", gpu_size=1 << 26, tiny_size=1000,
             notes="returns a new array (allocated by the function)"),
        Case("fused_prange", fused_prange,
             lambda rng, n: tuple(_f(rng, n, np.float32) for _ in range(4))
             + (np.full(n, np.nan, np.float32),), outputs=(4,),
             work=("bytes", lambda args: 5 * args[0].nbytes),
             numpy=lambda a, b, c, d, out: np.add(a * b, c * d, out=out),
             cupy=lambda cp, k, args: cp.add(args[0] * args[1], args[2] * args[3], out=args[4]),
             cupy_label="unfused operators", gpu_size=1 << 26, tiny_size=1000,
             notes="same expression written into a preallocated output"),
        Case("sum_f32", array_sum, lambda rng, n: (_f(rng, n, np.float32),),
             work=("bytes", lambda args: args[0].nbytes), numpy=np.sum,
             cupy=lambda cp, k, args: cp.sum(args[0]), cupy_label="cupy.sum",
             cupy_to_host=lambda cp, k, args: cp.sum(args[0]).item(),
             gpu_size=1 << 26, tiny_size=1000, tol=1e-4),
        Case("max_f32", array_max, lambda rng, n: (_f(rng, n, np.float32),),
             work=("bytes", lambda args: args[0].nbytes), numpy=np.max,
             cupy=lambda cp, k, args: cp.max(args[0]), cupy_label="cupy.max",
             cupy_to_host=lambda cp, k, args: cp.max(args[0]).item(),
             gpu_size=1 << 26, tiny_size=1000, tol=0.0),
        _stencil_case("stencil5_2d", stencil5),
        _stencil_case("stencil5_nested", stencil5_nested, "the stencil as two nested pranges"),
        Case("black_scholes", black_scholes,
             _black_scholes_operands,
             outputs=(5,), work=("bytes", lambda args: 4 * args[0].nbytes),
             numpy=np_black_scholes,
             cupy=lambda cp, k, args: k["black_scholes"](*args[:5], args[5]),
             cupy_label="ElementwiseKernel", gpu_size=1 << 24, tiny_size=1000, tol=1e-10),
        Case("ufunc_black_scholes", np_black_scholes,
             _black_scholes_operands,
             outputs=(5,), work=("bytes", lambda args: 4 * args[0].nbytes),
             numpy=np_black_scholes,
             cupy=lambda cp, k, args: k["black_scholes"](*args[:5], args[5]),
             cupy_label="ElementwiseKernel", gpu_size=1 << 24, tiny_size=1000, tol=1e-10,
             ours=ours_ufunc(ufunc_black_scholes, "vectorize"),
             numba=numba_ufunc(ufunc_black_scholes, "vectorize"),
             notes="numba_mlir_gpu.vectorize(...)(S, K, T, r, v, out=call); Numba: "
                   "numba.vectorize(target='parallel')"),
        Case("gufunc_row_normalise", np_row_normalise,
             lambda rng, n: (_f(rng, (n, n // 8), np.float32), np.zeros((n, n // 8), np.float32)),
             outputs=(1,), work=("bytes", lambda args: 2 * args[0].nbytes),
             numpy=np_row_normalise, cupy=lambda cp, k, args: np_row_normalise(*args),
             cupy_label="CuPy expression", gpu_size=8192, tiny_size=64, tol=1e-5,
             ours=ours_ufunc(gufunc_row_normalise, "guvectorize"),
             numba=numba_ufunc(gufunc_row_normalise, "guvectorize"),
             notes="numba_mlir_gpu.guvectorize (n)->(n): each row divided by its L2 norm"),
        Case("mandelbrot", mandelbrot,
             lambda rng, n: (n, n, 256, np.full((n, n), -1, np.int64)),
             outputs=(3,), work=("flops", lambda args: None),   # from the iteration counts
             cupy=lambda cp, k, args: k["mandelbrot"](
                 np.int32(args[0]), np.int32(args[1]), np.int32(args[2]), args[3]),
             cupy_label="ElementwiseKernel", gpu_size=2048, tiny_size=24, tol=1e-4,
             notes="8 flop per iteration; numpy: none (reference: Numba CPU); with FMAs in "
                   "kernels (as CuPy's) a few pixels on the set's boundary escape one "
                   "iteration sooner or later: relative L2 error below 1e-4"),
        Case("matmul", matmul,
             lambda rng, n: (_f(rng, (n, n), np.float32), _f(rng, (n, n), np.float32),
                             np.full((n, n), np.nan, np.float32)),
             outputs=(2,), work=("flops", lambda args: 2 * args[0].shape[0] ** 3),
             numpy=np_matmul, cupy=lambda cp, k, args: cp.matmul(args[0], args[1], out=args[2]),
             cupy_label="cupy.matmul (cuBLAS)", gpu_size=1024, tiny_size=16, tol=1e-5),
        _product_case("dot_f32_2048", np.float32, 2048, 2048, 2048),
        _product_case("dot_f32_4096", np.float32, 4096, 4096, 4096),
        _product_case("dot_f64_2048", np.float64, 2048, 2048, 2048),
        _product_case("dot_f64_4096", np.float64, 4096, 4096, 4096),
        _product_case("dot_f32_4096x1024x2048", np.float32, 4096, 1024, 2048),
        _loop_product_case("loops_matmul_f32_2048", np.float32, 2048),
        _loop_product_case("loops_matmul_f32_4096", np.float32, 4096),
        _loop_product_case("loops_matmul_f64_2048", np.float64, 2048),
        _loop_product_case("loops_matmul_f64_4096", np.float64, 4096),
        _loop_product_case("nested_matmul_f32_2048", np.float32, 2048, matmul_nested),
        _batched_product_case("batched_matmul_f32", np.float32, 64, 256),
        _batched_product_case("batched_matmul_f64", np.float64, 64, 256),
        Case("row_softmax", row_softmax,
             lambda rng, n: (_f(rng, (n, n // 8), np.float32), np.zeros((n, n // 8), np.float32)),
             outputs=(1,), work=("bytes", lambda args: 2 * args[0].nbytes),
             numpy=np_row_softmax, cupy=lambda cp, k, args: np_row_softmax(*args),
             cupy_label="CuPy expression", gpu_size=8192, tiny_size=64, tol=1e-5,
             notes="prange over rows; inner loops: max, exp-and-sum, divide"),
        Case("layer_norm", layer_norm,
             lambda rng, n: (_f(rng, (n, n // 8), np.float32), np.zeros((n, n // 8), np.float32)),
             outputs=(1,), work=("bytes", lambda args: 2 * args[0].nbytes),
             numpy=np_layer_norm, cupy=lambda cp, k, args: np_layer_norm(*args),
             cupy_label="CuPy expression", gpu_size=8192, tiny_size=64, tol=1e-4,
             notes="prange over rows; inner loops: mean, variance, normalise"),
        Case("row_l2_norms", row_norms, lambda rng, n: (_f(rng, (n, n // 8), np.float32),),
             work=("bytes", lambda args: args[0].nbytes),
             numpy=row_norms, cupy=lambda cp, k, args: cp.sqrt(cp.sum(args[0] * args[0], axis=1)),
             cupy_label="CuPy expression", gpu_size=8192, tiny_size=64, tol=1e-5,
             notes="np.sqrt(np.sum(x * x, axis=1))"),
        Case("column_sums", column_sums, lambda rng, n: (_f(rng, (n, n // 8), np.float32),),
             work=("bytes", lambda args: args[0].nbytes),
             numpy=column_sums, cupy=lambda cp, k, args: cp.sum(args[0], axis=0),
             cupy_label="cupy.sum(axis=0)", gpu_size=8192, tiny_size=64, tol=1e-5,
             notes="np.sum(x, axis=0)"),
        Case("kmeans_assign", kmeans_assign,
             lambda rng, n: (_f(rng, (n, 4), np.float32), _f(rng, (16, 4), np.float32),
                             np.full(n, -1, np.int64), np.full(n, np.nan, np.float32)),
             outputs=(2, 3), work=("bytes", lambda args: args[0].nbytes + 12 * args[0].shape[0]),
             numpy=np_kmeans_assign, cupy=lambda cp, k, args: np_kmeans_assign(*args),
             cupy_label="CuPy expression (broadcast, argmin)", gpu_size=1 << 20, tiny_size=100,
             tol=1e-5, notes="1M points x 16 centroids x 4 dims: nearest centroid, its distance"),
        Case("pairwise_dist", pairwise_distances,
             lambda rng, n: (_f(rng, (n, 3), np.float32), np.zeros((n, n), np.float32)),
             outputs=(1,), work=("bytes", lambda args: args[1].nbytes),
             numpy=np_pairwise_distances, cupy=lambda cp, k, args: np_pairwise_distances(*args),
             cupy_label="CuPy expression (broadcast)", gpu_size=8192, tiny_size=40, tol=1e-5,
             notes="N x 3 points -> N x N distances"),
        Case("histogram", histogram,
             lambda rng, n: (rng.integers(0, 256, n).astype(np.int64), np.zeros(256, np.int64)),
             outputs=(1,), work=("bytes", lambda args: args[0].nbytes),
             numpy=np_histogram,
             cupy=lambda cp, k, args: cp.bincount(args[0], minlength=args[1].shape[0]),
             cupy_label="cupy.bincount", gpu_size=1 << 26, tiny_size=1000, tol=0.0,
             notes="counts[keys[i]] += 1 in a prange (256 bins); Numba parallel=True races"),
        *kernel_api_cases(),
    ]


def kernel_api_cases() -> list[Case]:
    """The kernel API (@kernel) against the same kernel as a CuPy RawKernel
    (kernel_cases.py)."""
    from . import kernel_cases as kc
    return [
        Case("kernel_transpose", kc.kernel_transpose,
             lambda rng, n: (_f(rng, (n, n), np.float32), np.zeros((n, n), np.float32)),
             outputs=(1,), work=("bytes", lambda args: 2 * args[0].nbytes),
             numpy=kc.np_transpose, cupy=kc.cupy_transpose, cupy_label="RawKernel",
             gpu_size=8192, tiny_size=40, tol=0.0, ours=kc.ours_transpose,
             numba=kc._numba_transpose,
             notes="@kernel: 32x32 tiles through a local array, barrier; same as RawKernel"),
        Case("kernel_histogram", kc.kernel_histogram,
             lambda rng, n: (rng.integers(0, kc.BINS, n).astype(np.int64),
                             np.zeros(kc.BINS, np.int64)),
             outputs=(1,), work=("bytes", lambda args: args[0].nbytes),
             numpy=kc.np_histogram, cupy=kc.cupy_histogram, cupy_label="RawKernel",
             gpu_size=1 << 26, tiny_size=1000, tol=0.0, ours=kc.ours_histogram,
             numba=kc._numba_histogram,
             notes="@kernel: per-block local histogram with atomics (256 bins); "
                   "same as RawKernel"),
    ]
