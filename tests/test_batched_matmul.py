"""np.matmul, and `@` on batches of matrices (3-D operands), which Numba
does not compile: compared with NumPy's np.matmul. Products of one BLAS
type in host code go to BLAS (a gemm per product on the CPU, one strided-
batched cuBLAS call on the GPU); the rest are our own loops."""
import functools
import warnings

import numba
import numpy as np
import pytest

from numba_mlir_gpu import inspect_mlir, inspect_path

from .support import TARGETS, ours
from .test_codegen import compile_only

pytest.importorskip("scipy")     # Numba's BLAS helpers (the CPU's gemm)


def at(a, b):
    return a @ b


def matmul(a, b):
    return np.matmul(a, b)


def _operands():
    """Batches of every BLAS type and of integers; a batch of one and 2-D
    operands serving every product; vectors on either side; empty batches
    and contractions; views: a strided batch, transposed matrices (BLAS
    reads them as they are) and strided matrices (copied first). Sizes are
    no multiple of any tile."""
    rng = np.random.default_rng(7)

    def make(shape, dtype):
        x = rng.random(shape) + (1j * rng.random(shape) if np.dtype(dtype).kind == "c" else 0)
        return (x * 10).astype(dtype) if np.dtype(dtype).kind == "i" else x.astype(dtype)
    cases = {}
    for dtype in (np.float32, np.float64, np.complex128, np.int64):
        name = np.dtype(dtype).name
        cases.update({
            f"{name}-batches": (make((5, 17, 23), dtype), make((5, 23, 9), dtype)),
            f"{name}-one-and-many": (make((1, 17, 23), dtype), make((5, 23, 9), dtype)),
            f"{name}-by-matrix": (make((5, 17, 23), dtype), make((23, 9), dtype)),
            f"{name}-matrix-by": (make((17, 23), dtype), make((5, 23, 9), dtype)),
        })
    a, b = make((6, 11, 13), np.float64), make((6, 13, 7), np.float64)
    cases.update({
        "by-vector": (a, make(13, np.float64)), "vector-by": (make(11, np.float64), a),
        "empty-batch": (a[:0], b[:0]), "empty-batch-and-one": (a[:0], b[:1]),
        "empty-contraction": (a[:, :, :0], b[:, :0]),
        "strided-batch": (a[::2], b[::2]), "transposed": (b.transpose(0, 2, 1), a.transpose(0, 2, 1)),
        "strided-matrices": (a[:, ::2, ::2], b[:, ::2, :]),
        "float32-transposed": (make((4, 9, 8), np.float32).transpose(0, 2, 1),
                               make((4, 9, 5), np.float32)),
    })
    return cases


CASES = _operands()


@functools.lru_cache(maxsize=None)
def compiled(fn, target):
    """One dispatcher per function and target: cases of the same types share
    their compilation."""
    return ours(fn, target)


def _rtol(name):
    return 1e-4 if "float32" in name else 1e-12


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_batched_products(name, target):
    a, b = CASES[name]
    expected = np.matmul(a, b)
    for fn in (at, matmul):
        got = compiled(fn, target)(a, b)
        assert got.shape == expected.shape and got.dtype == expected.dtype, (fn, name)
        if expected.dtype.kind == "i":
            np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=_rtol(name), atol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_np_matmul_of_matrices_and_vectors(target):
    """np.matmul on 1-D and 2-D operands: np.dot's products, and NumPy's
    result types for integers and mixed types (Numba's np.dot takes neither)."""
    rng = np.random.default_rng(8)
    m, v = rng.random((7, 5)), rng.random(5)
    fn = ours(matmul, target)
    for a, b in ((m, m.T), (m, v), (v, m.T), (v, v), (m.astype(np.int32), m.T.astype(np.int32)),
                 (m.astype(np.float32), v)):
        got, expected = fn(a, b), np.matmul(a, b)
        assert np.asarray(got).dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_mismatched_operands_raise():
    fn = ours(at, "cpu")
    with pytest.raises(ValueError, match="batch dimensions"):
        fn(np.ones((3, 2, 2)), np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="incompatible array sizes"):
        fn(np.ones((3, 2, 4)), np.ones((3, 3, 2)))


def test_batched_products_call_blas():
    """The CPU calls Numba's gemm once per product; GPU code (built without a
    GPU here, cuBLAS's presence stood in for) makes one strided-batched call."""
    a, b = CASES["float64-batches"]
    fn = ours(at, "cpu")
    fn(a, b)
    assert "numba_xxgemm" in inspect_mlir(fn)
    from numba_mlir_gpu.runtime import cublas
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cublas, "enabled", lambda: True)
        for name in ("float32-batches", "complex128-matrix-by"):
            assert "gemmStridedBatched" in inspect_mlir(compile_only(at, *CASES[name])), name


def with_host_code_numba_lowers(a, b):
    names = {"scale": 2.0}      # a dict: host code our lowering leaves to Numba
    return np.matmul(a, b) * names["scale"] + a @ b


def test_batched_products_in_host_code_numba_lowers():
    a, b = CASES["float64-by-matrix"]
    fn = ours(with_host_code_numba_lowers, "cpu", fallback=True)
    np.testing.assert_allclose(fn(a, b), 3 * np.matmul(a, b), rtol=1e-12)
    assert "lowered by Numba" in inspect_path(fn).summary()


def test_stock_numba_keeps_its_own_errors():
    """The typing is ours only inside our pipelines."""
    a = np.ones((2, 2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
        for fn in (at, matmul):
            with pytest.raises(numba.TypingError):
                numba.njit(fn)(a, a)
