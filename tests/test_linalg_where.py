"""np.dot / `@` (matrix products in host code through BLAS: SciPy's on the
CPU, cuBLAS on the GPU; the rest our own loops) and np.where(cond, x, y) with
broadcasting: differential tests against Numba, C, Fortran and strided inputs."""
import numba
import numpy as np
import pytest

from .support import TARGETS, check, ours, this_weeks_half
from .test_codegen import compile_only

pytest.importorskip("scipy")     # Numba types np.dot only with SciPy installed


def dot(a, b):
    return np.dot(a, b)


def matmul(a, b):
    return a @ b


def where(c, x, y):
    return np.where(c, x, y)


def where_expression(x):
    return np.where(x > 0.5, x, 0.0)


def _dot_operands():
    rng = np.random.default_rng(0)
    a, b, v, w = rng.random((5, 7)), rng.random((7, 3)), rng.random(7), rng.random(5)
    return {
        "vv": (v, v), "mv": (a, v), "vm": (w, a), "mm": (a, b),
        "fortran": (np.asfortranarray(a), np.asfortranarray(b)),
        "strided": (a[:, ::2], b[::2]), "reversed": (a[::-1], v[::-1]),
        "vv32": (v.astype(np.float32), v.astype(np.float32)),
        "mm32": (a.astype(np.float32), b.astype(np.float32)),
        "empty": (np.empty((3, 0)), np.empty((0, 2))),
    }


DOT = _dot_operands()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(DOT))
def test_dot(name, target):
    check(dot, *DOT[name], target=target, rtol=1e-6)
    check(matmul, *DOT[name], target=target, rtol=1e-6)


def _gemm_operands():
    """Matrix products BLAS takes: every element type, operands of either
    order, slices (a leading dimension above the row), strided, reversed and
    broadcast views (copied first), transposes, sizes that are no multiple of
    any tile, zero sizes."""
    rng = np.random.default_rng(3)
    cases = {}
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        a = (rng.random((37, 53)) + (1j * rng.random((37, 53)) if np.dtype(dtype).kind == "c"
                                     else 0)).astype(dtype)
        b = rng.random((53, 29)).astype(dtype)
        big = rng.random((80, 120)).astype(dtype)
        name = np.dtype(dtype).name
        cases.update({
            f"{name}-cc": (a, b), f"{name}-fc": (np.asfortranarray(a), b),
            f"{name}-cf": (a, np.asfortranarray(b)), f"{name}-transposed": (b.T, a.T),
            f"{name}-slice": (big[3:40, 5:58], b), f"{name}-strided": (big[:74:2, :106:2], b),
        })
    cases.update({"m0": (a[:0], b), "k0": (a[:, :0], b[:0]), "n0": (a, b[:, :0])})
    # negative and zero strides are no leading dimension: copied first
    x, y = rng.random((6, 5)), rng.random((5, 4))
    cases.update({"reversed-rows": (x[::-1], y), "reversed-columns": (x[:, ::-1], y[::-1]),
                  "reversed-column": (x[::-1, :1], y[:1]),
                  "broadcast-row": (np.broadcast_to(x[:1], (6, 5)), y),
                  "broadcast-column": (np.broadcast_to(x[:, :1], (6, 5)), y)})
    return cases


GEMM = _gemm_operands()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(GEMM))
def test_matrix_products_through_blas(name, target):
    check(matmul, *GEMM[name], target=target, rtol=1e-4 if "float32" in name or
          "complex64" in name else 1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_matrix_products_of_views_through_blas(target):
    """The operands as views, not copied (`check` compares on deep copies,
    which are contiguous): each stride case BLAS takes or has copied."""
    fn = ours(matmul, target)
    for name, (x, y) in GEMM.items():
        if x.base is None and y.base is None:
            continue
        rtol = 1e-4 if "float32" in name or "complex64" in name else 1e-12
        np.testing.assert_allclose(fn(x, y), x @ y, rtol=rtol, atol=1e-12, err_msg=name)


def gemm_in_a_loop(a, b):
    s = 0.0
    for _ in range(3):
        c = np.dot(a, b)
        s += c[1, 2]
    return s


def test_matrix_products_call_blas_on_the_cpu():
    """The CPU module calls Numba's BLAS helper; a product inside a host loop
    keeps its scalars in one stack slot (no growth per trip)."""
    from numba_mlir_gpu import inspect_mlir
    a, b = GEMM["float64-cc"]
    check(gemm_in_a_loop, a, b)
    fn = ours(matmul, "cpu")
    fn(a, b)
    assert "numba_xxgemm" in inspect_mlir(fn)


def test_matrix_products_call_cublas_in_gpu_code(monkeypatch):
    """Where cuBLAS is found, GPU host code calls its gemm (built without a GPU
    here, the library's presence stood in for)."""
    from numba_mlir_gpu.runtime import cublas
    monkeypatch.setattr(cublas, "enabled", lambda: True)
    from numba_mlir_gpu import inspect_mlir
    for name in ("float32-cc", "float64-strided", "complex128-fc"):
        fn = compile_only(matmul, *GEMM[name])
        text = inspect_mlir(fn)
        assert "cublas" in text and "gemm_v2" in text, name


def _gemv_operands():
    """Matrix-vector, vector-matrix and vector products BLAS takes on the CPU
    (Numba's gemv and dot helpers): every element type, matrices of either
    order, slices, strided and reversed matrices (copied first), strided
    vectors (copied: the helpers take no stride), empty contractions."""
    rng = np.random.default_rng(5)
    cases = {}
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        def make(*shape):
            x = rng.random(shape) + (1j * rng.random(shape) if np.dtype(dtype).kind == "c" else 0)
            return x.astype(dtype)
        a, v, w, big = make(37, 53), make(53), make(37), make(80, 120)
        name = np.dtype(dtype).name
        cases.update({
            f"{name}-mv": (a, v), f"{name}-mv-fortran": (np.asfortranarray(a), v),
            f"{name}-vm": (w, a), f"{name}-vm-fortran": (w, np.asfortranarray(a)),
            f"{name}-mv-slice": (big[3:40, 5:58], v), f"{name}-vm-slice": (w, big[3:40, 5:58]),
            f"{name}-mv-strided": (big[:74:2, :106:2], v[::-1]),
            f"{name}-vv": (v, v[::-1]), f"{name}-vv-strided": (big[0, ::2][:53], v),
        })
    a, v, w = rng.random((6, 5)), rng.random(5), rng.random(6)
    cases.update({"mv-k0": (a[:, :0], v[:0]), "vm-k0": (v[:0], a[:0]), "mv-m0": (a[:0], v),
                  "vm-n0": (w, a[:, :0]), "vv-0": (v[:0], v[:0]),
                  "mv-reversed": (a[::-1, ::-1], v), "vm-transposed": (v[::-1], a.T)})
    return cases


GEMV = _gemv_operands()


@pytest.mark.parametrize("name", this_weeks_half(sorted(GEMV)))
def test_vector_products_through_cpu_blas(name):
    x, y = GEMV[name]
    rtol = 1e-4 if "float32" in name or "complex64" in name else 1e-12
    check(dot, x, y, target="cpu", rtol=rtol)
    # the operands as the views they are (check compares on contiguous deep copies)
    got = ours(matmul, "cpu")(x, y)
    np.testing.assert_allclose(got, x @ y, rtol=rtol, atol=1e-12, err_msg=name)


def test_vector_products_call_numbas_blas_helpers_on_the_cpu():
    from numba_mlir_gpu import inspect_mlir
    for name, helper in (("float64-mv", "numba_xxgemv"), ("complex64-vm", "numba_xxgemv"),
                         ("float32-vv", "numba_xxdot")):
        fn = ours(dot, "cpu")
        fn(*GEMV[name])
        assert helper in inspect_mlir(fn), name


def test_large_vector_dot_is_deterministic():
    x = np.random.default_rng(1).random(1_000_003)
    fn = ours(dot, "cpu")
    first = fn(x, x)
    np.testing.assert_allclose(first, np.dot(x, x), rtol=1e-12)
    assert all(fn(x, x) == first for _ in range(3))


def test_dot_size_mismatch_raises():
    with pytest.raises(ValueError, match="incompatible array sizes"):
        ours(dot, "cpu")(np.ones(3), np.ones(4))


def _where_operands():
    rng = np.random.default_rng(2)
    a, b, v = rng.random((5, 7)), rng.random((5, 7)), rng.random(7)
    return {
        "same_shape": (a > .5, a, b), "broadcast_row": (a > .5, a, v),
        "scalar_y": (v > .5, a, 1), "scalar_x_float32": (a > .5, 2.0, b.astype(np.float32)),
        "fortran_strided": (np.asfortranarray(a) > .5, a[:, ::-1], np.asfortranarray(b)),
        "int_condition": (a.astype(np.int64), a, b),
        "column_condition": (a[:, :1] > .5, v.astype(np.int32), 3),
    }


WHERE = _where_operands()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(WHERE))
def test_where(name, target):
    check(where, *WHERE[name], target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_where_on_an_expression(target):
    x = np.random.default_rng(3).random((6, 4))
    check(where_expression, x, target=target)
    check(where_expression, x[::2, 1:], target=target)


def test_where_shape_mismatch_raises_as_numba():
    args = (np.ones((5, 7)) > .5, np.ones((5, 7)), np.ones(5))
    for fn in (numba.njit(where), ours(where, "cpu")):
        with pytest.raises(ValueError, match="shape mismatch"):
            fn(*args)


def test_compile_only():
    compile_only(dot, np.ones((4, 3)), np.ones((3, 2)))
    compile_only(dot, np.ones(3), np.ones(3))
    compile_only(where, np.ones(4) > 0, np.ones(4), 0.0)
