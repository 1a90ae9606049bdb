"""A prange loop that is exactly a matrix product runs as one, through the
target's BLAS (parallel/contractions.py); any other loop, or one whose
arrays do not allow it when the code runs, runs as written. Results are
compared with Numba's serial njit within a summation-order tolerance."""
import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from benchmarks.cases import matmul as flat_matmul     # one prange over n * m
from benchmarks.cases import matmul_loops_f32 as matmul_f32
# a Python-float (float64) accumulator: over float32 arrays, a widened gemm
from benchmarks.cases import matmul_loops_f64 as matmul_f32_wide_sum
from numba_mlir_gpu.lowering.blas import CUBLAS_GEMM_SYMBOLS, GEMM_SYMBOL

from .support import TARGETS


def matmul_f64(A, B, C):
    for i in prange(A.shape[0]):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc = acc + B[k, j] * A[i, k]
            C[i, j] = acc


def nested_matmul(A, B, C):
    for i in prange(A.shape[0]):
        for j in prange(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def flat_matmul_with_a_copy(A, B, C):
    m = B.shape[1]
    for t in prange(A.shape[0] * m):
        i, j = t // m, t % m
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


def flat_matmul_of_a_given_length(A, B, C, length):
    m = B.shape[1]
    for t in prange(length):
        i = t // m
        j = t % m
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


def matmul_plus_one(A, B, C):          # not only the contraction: runs as written
    for i in prange(A.shape[0]):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc + 1.0


def _calls_blas(f) -> bool:
    text = numba_mlir_gpu.compiled_function(f).input_mlir
    return any(s in text for s in [GEMM_SYMBOL, *CUBLAS_GEMM_SYMBOLS.values()])


def _run(fn, target, A, B, C):
    ours, reference = C.copy(), C.copy()
    f = numba_mlir_gpu.njit(target=target)(fn)
    f(A, B, ours)
    numba.njit(fn)(A, B, reference)
    return f, ours, reference


def _operands(rng, n, p, m, dtype):
    return (rng.standard_normal((n, p)).astype(dtype), rng.standard_normal((p, m)).astype(dtype),
            np.full((n, m), np.nan, dtype))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, dtype, shape", [
    (matmul_f64, np.float64, (37, 19, 23)), (matmul_f64, np.float64, (128, 64, 96)),
    (matmul_f32, np.float32, (33, 65, 17)), (matmul_f32, np.float32, (1, 5, 1)),
    (matmul_f32_wide_sum, np.float32, (29, 41, 13)), (nested_matmul, np.float64, (21, 34, 9)),
    (nested_matmul, np.float32, (21, 34, 9)), (flat_matmul, np.float32, (19, 23, 31)),
    (flat_matmul_with_a_copy, np.float64, (7, 130, 5))])
def test_products_run_through_blas_and_agree(fn, dtype, shape, target):
    rng = np.random.default_rng(sum(shape))
    f, ours, reference = _run(fn, target, *_operands(rng, *shape, dtype))
    assert _calls_blas(f)
    rtol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(ours, reference, rtol=rtol, atol=rtol * shape[1])


@pytest.mark.parametrize("target", TARGETS)
def test_layouts_views_and_an_output_inside_a_larger_array(target):
    rng = np.random.default_rng(5)
    A = np.asfortranarray(rng.standard_normal((40, 30)))
    B = rng.standard_normal((50, 30)).T                 # a transposed view
    big = np.full((45, 70), -7.0)
    C = big[2:42, 5:55]                                  # rows 70 elements apart
    f = numba_mlir_gpu.njit(target=target)(matmul_f64)
    expected = big.copy()
    numba.njit(matmul_f64)(A, B, expected[2:42, 5:55])
    f(A, B, C)
    assert _calls_blas(f)
    np.testing.assert_allclose(big, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_views_of_one_array_that_do_not_overlap(target):
    """A and C are halves of one array: disjoint, so the product runs
    through BLAS and agrees with Numba's loop."""
    rng = np.random.default_rng(6)
    ours, reference = rng.standard_normal((32, 16)), None
    reference = ours.copy()
    B = rng.standard_normal((16, 16))
    numba_mlir_gpu.njit(target=target)(matmul_f64)(ours[:16], B, ours[16:])
    numba.njit(matmul_f64)(reference[:16], B, reference[16:])
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_bounds_beyond_the_output_run_as_written(target):
    """C has fewer rows than the loop: not a product BLAS may compute; the
    loop as written raises Numba's IndexError under boundscheck."""
    rng = np.random.default_rng(9)
    A, B, _ = _operands(rng, 8, 4, 3, np.float64)
    f = numba_mlir_gpu.njit(target=target, boundscheck=True)(matmul_f64)
    with pytest.raises(IndexError):
        f(A, B, np.zeros((5, 3)))


@pytest.mark.parametrize("target", TARGETS)
def test_an_output_that_is_an_input_runs_as_written(target):
    """C is A (prange assumes distinct arguments do not overlap, as Numba
    does, so only an order-free case is compared): B is zero, every order
    gives zeros."""
    A = np.random.default_rng(6).standard_normal((16, 16))
    numba_mlir_gpu.njit(target=target)(matmul_f64)(A, np.zeros((16, 16)), A)
    assert not A.any()


@pytest.mark.parametrize("target", TARGETS)
def test_a_column_major_output_runs_as_written(target):
    rng = np.random.default_rng(7)
    A, B, _ = _operands(rng, 9, 7, 5, np.float64)
    C = np.asfortranarray(np.zeros((9, 5)))
    ours, reference = C.copy(order="F"), C.copy(order="F")
    numba_mlir_gpu.njit(target=target)(matmul_f64)(A, B, ours)
    numba.njit(matmul_f64)(A, B, reference)
    np.testing.assert_allclose(ours, reference, rtol=1e-12)


def test_other_loops_are_not_products():
    rng = np.random.default_rng(8)
    f, ours, reference = _run(matmul_plus_one, "cpu", *_operands(rng, 12, 8, 6, np.float64))
    assert not _calls_blas(f)
    np.testing.assert_allclose(ours, reference, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_a_flat_loop_of_partial_rows_runs_as_written(target):
    """A flat loop whose length is no whole number of rows is no product of
    whole matrices: the loop as written (its last row partly filled)."""
    rng = np.random.default_rng(10)
    A, B, C = _operands(rng, 6, 5, 4, np.float64)
    for length in (4 * 6, 4 * 5 + 3):
        ours, reference = C.copy(), C.copy()
        numba_mlir_gpu.njit(target=target)(flat_matmul_of_a_given_length)(A, B, ours, length)
        numba.njit(flat_matmul_of_a_given_length)(A, B, reference, length)
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-12)
