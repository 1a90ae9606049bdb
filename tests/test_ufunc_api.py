"""numba_mlir_gpu.vectorize and guvectorize: NumPy ufunc behaviour, values
against NumPy and Numba's own vectorize/guvectorize.

Each loop shape is a compilation (about a second here), so the ufuncs are
made once per module and the tests share them; `_ufuncs(target)` builds
the same set for the GPU tests."""
from __future__ import annotations

import functools
import re

import numba
import numpy as np
import pytest

import numba_mlir_gpu
from numba_mlir_gpu import guvectorize, inspect_mlir, inspect_ptx, vectorize


def affine(a, b):
    return a * b + 1


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def bigger(a, b):
    return a if a > b else b


def smaller(a, b):
    return a if a < b else b


def dot(a, b, res):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    res[0] = s


def matvec(m, v, out):
    for i in range(m.shape[0]):
        s = 0.0
        for j in range(m.shape[1]):
            s += m[i, j] * v[j]
        out[i] = s


def normalise(row, out):
    s = 0.0
    for i in range(row.shape[0]):
        s += row[i] * row[i]
    scale = 1.0 / np.sqrt(s)
    for i in range(row.shape[0]):
        out[i] = row[i] * scale


SIGS = ["float64(float64, float64)", "int64(int64, int64)"]


@functools.lru_cache(maxsize=None)
def _ufuncs(target: str):
    return {
        "affine": vectorize(SIGS, target=target)(affine),
        "add": vectorize(SIGS, identity=0, target=target)(add),
        "mul": vectorize(["float64(float64, float64)"], identity=1, target=target)(mul),
        "max": vectorize(["float64(float64, float64)"], target=target)(bigger),
        "min": vectorize(["int64(int64, int64)"], target=target)(smaller),
        "dot": guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()",
                           target=target)(dot),
        "matvec": guvectorize(["void(float64[:,:], float64[:], float64[:])"],
                              "(m,n),(n)->(m)", target=target)(matvec),
    }


U = _ufuncs("cpu")
TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]

X = np.linspace(-3.0, 5.0, 24)
Y = np.linspace(2.0, -1.0, 24)


def _same(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got, expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_eager_signatures_match_numpy_and_numba(target):
    f = _ufuncs(target)["affine"]
    reference = numba.vectorize(SIGS)(affine)
    _same(f(X, Y), X * Y + 1)
    _same(f(X, Y), reference(X, Y))
    assert f.types == ["dd->d", "ll->l"] and f.nin == 2 and f.nout == 1


@pytest.mark.parametrize("target", TARGETS)
def test_dtype_dispatch_picks_the_loop_the_inputs_cast_to(target):
    """As NumPy picks among a ufunc's loops (Numba's vectorize builds one):
    an exact match, else the first loop in order the inputs cast to."""
    f = _ufuncs(target)["affine"]
    reference = numba.vectorize(SIGS)(affine)
    i = np.arange(24, dtype=np.int64)
    _same(f(i, i), i * i + 1)                                   # int64 loop
    for a, b in [(i.astype(np.int32), i.astype(np.int32)),      # first loop: float64
                 (X.astype(np.float32), Y.astype(np.float32)),
                 (i, Y)]:
        _same(f(a, b), reference(a, b))
    assert f(i.astype(np.int32), i).dtype == np.float64


def test_no_matching_signature_is_a_type_error():
    with pytest.raises(TypeError, match="no matching signature.*complex128"):
        U["affine"](X.astype(np.complex128), Y)
    with pytest.raises(TypeError, match="no matching signature"):
        U["min"](X, Y)          # float64 does not cast safely to int64


@pytest.mark.parametrize("target", TARGETS)
def test_broadcasting_scalars_and_0d(target):
    f = _ufuncs(target)["affine"]
    _same(f(X, 2.0), X * 2.0 + 1)
    _same(f(3, X.reshape(4, 6)), 3 * X.reshape(4, 6) + 1)     # int scalar, float array
    a, b = np.arange(3.0).reshape(3, 1), np.arange(4.0)
    _same(f(a, b), a * b + 1)                                 # (3,1) + (4,) -> (3,4)
    got = f(2, 3)
    assert type(got) is np.int64 and got == 7
    got = f(np.array(2.0), np.float64(3.0))
    assert type(got) is np.float64 and got == 7.0
    with pytest.raises(ValueError, match="could not be broadcast"):
        f(np.ones(3), np.ones(4))


@pytest.mark.parametrize("target", TARGETS)
def test_out_and_non_contiguous_inputs(target):
    f = _ufuncs(target)["affine"]
    m, n = np.arange(30.0).reshape(5, 6), np.arange(60.0).reshape(10, 6)[::2]
    out = np.zeros((6, 5))
    assert f(m.T, n.T, out=out) is out                        # transposed, strided
    _same(out, m.T * n.T + 1)
    out = np.zeros(12)
    f(X[::2], Y[1::2], out)                                   # positional out
    _same(out, X[::2] * Y[1::2] + 1)
    with pytest.raises(ValueError, match="out has shape"):
        f(X, Y, out=np.zeros(3))
    with pytest.raises(TypeError, match="same_kind"):
        f(X, Y, out=np.zeros(24, np.int64))


def test_lazy_compilation_adds_a_loop_per_input_types():
    f = vectorize(target="cpu")(affine)
    reference = numba.vectorize(affine)                     # Numba's DUFunc
    assert f.types == []
    a = np.arange(5, dtype=np.float32)
    _same(f(a, a), reference(a, a))           # float32 * float32 + 1 is float64 in Numba
    i = np.arange(5)
    _same(f(i, i), reference(i, i))
    assert f.types == reference.types == ["ff->d", "ll->l"]
    b = np.array([True, False])            # a loop it casts to first, as Numba (NumPy)
    _same(f(b, b), reference(b, b))
    g = vectorize(affine, target="cpu")        # bare decorator form
    assert isinstance(g, numba_mlir_gpu.UFunc) and g.types == []


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_add_along_axes(target):
    f = _ufuncs(target)["add"]
    big = np.arange(10000.0)                   # several levels of chunks
    assert f.reduce(big) == np.add.reduce(big)
    m = np.arange(20, dtype=np.int64).reshape(4, 5)
    _same(f.reduce(m), np.add.reduce(m))                    # axis 0
    _same(f.reduce(m, axis=1), np.add.reduce(m, axis=1))
    _same(f.reduce(m, axis=None), np.add.reduce(m, axis=None))
    _same(f.reduce(m, axis=-1, keepdims=True), np.add.reduce(m, axis=-1, keepdims=True))
    _same(f.reduce(m, axis=1, initial=10), np.add.reduce(m, axis=1, initial=10))
    _same(f.reduce(np.zeros((0, 3), np.int64)), np.zeros(3, np.int64))   # identity


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_multiply_maximum_minimum(target):
    u = _ufuncs(target)
    a = np.linspace(0.5, 1.5, 301)
    np.testing.assert_allclose(u["mul"].reduce(a), np.multiply.reduce(a), rtol=1e-12)
    assert u["max"].reduce(a[::-1]) == np.maximum.reduce(a)
    i = np.array([5, -3, 9, 2, -7, 4])
    assert u["min"].reduce(i) == np.minimum.reduce(i)
    with pytest.raises(ValueError, match="no identity"):
        u["max"].reduce(np.zeros(0))
    with pytest.raises(ValueError, match="binary"):
        vectorize(target="cpu")(lambda a: a).reduce(a)
    with pytest.raises(NotImplementedError, match="accumulate"):
        u["max"].accumulate(a)


@pytest.mark.parametrize("target", TARGETS)
def test_outer(target):
    u = _ufuncs(target)
    a, b = np.arange(6.0).reshape(2, 3), np.linspace(-1.0, 1.0, 4)
    _same(u["mul"].outer(a, b), np.multiply.outer(a, b))
    _same(u["max"].outer(b, a), np.maximum.outer(b, a))
    _same(u["mul"].outer(2.5, b), np.multiply.outer(2.5, b))
    out = np.empty((4, 4))
    u["max"].outer(b, b, out=out)
    _same(out, np.maximum.outer(b, b))


@pytest.mark.parametrize("target", TARGETS)
def test_gufunc_core_dimensions_and_loop_broadcasting(target):
    u = _ufuncs(target)
    a, b = np.arange(12.0).reshape(3, 4), np.linspace(1.0, 2.0, 4)
    reference = numba.guvectorize(["void(float64[:], float64[:], float64[:])"],
                                  "(n),(n)->()")(dot)
    _same(u["dot"](a, b), reference(a, b))                   # (3,4),(4,) -> (3,)
    _same(u["dot"](a, b), a @ b)
    got = u["dot"](b, b)
    assert np.isscalar(got) and got == b @ b                 # no loop dimensions
    m, v = np.arange(24.0).reshape(2, 3, 4), np.arange(8.0).reshape(2, 1, 4)
    _same(u["matvec"](m, v[:, 0]), np.einsum("kij,kj->ki", m, v[:, 0]))
    out = np.zeros((2, 3))
    assert u["matvec"](m, v[0, 0], out=out) is out           # (2,3,4),(4,) -> (2,3)
    _same(out, m @ v[0, 0])


def scale(a, s, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * s


def extremes(a, lo, hi):
    lo[0] = a[0]
    hi[0] = a[0]
    for i in range(a.shape[0]):
        lo[0] = min(lo[0], a[i])
        hi[0] = max(hi[0], a[i])


def test_gufunc_scalar_inputs_and_several_outputs():
    sigs = ["void(float64[:], float64, float64[:])"]
    ours = guvectorize(sigs, "(n),()->(n)", target="cpu")(scale)
    reference = numba.guvectorize(sigs, "(n),()->(n)")(scale)
    a, s = np.arange(12.0).reshape(3, 4), np.array([1.0, 2.0, 3.0])
    _same(ours(a, s), reference(a, s))               # () input: one number per row
    lo, hi = guvectorize(["void(float64[:], float64[:], float64[:])"], "(n)->(),()",
                         target="cpu")(extremes)(a[:, ::-1])
    _same(lo, a.min(axis=1))
    _same(hi, a.max(axis=1))


def test_gufunc_errors():
    with pytest.raises(ValueError, match="core dimension 'n' is 4 .* 3"):
        U["dot"](np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="needs? at least 2"):
        U["matvec"](np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="bad gufunc layout"):
        guvectorize(["void(float64[:], float64[:])"], "(n)->n")(dot)
    with pytest.raises(TypeError, match="core dimensions"):
        guvectorize(["void(float64, float64[:])"], "(n)->(n)")(dot)
    with pytest.raises(ValueError, match="output 0 has shape"):
        U["matvec"](np.ones((3, 4)), np.ones(4), out=np.zeros(4))


def test_lazy_gufunc_needs_and_uses_outputs():
    g = guvectorize("(n)->(n)", target="cpu")(normalise)
    with pytest.raises(TypeError, match="pass the outputs"):
        g(np.ones((2, 3)))
    a = np.arange(1.0, 7.0).reshape(2, 3)
    out = np.zeros_like(a)
    g(a, out)
    _same(out, a / np.linalg.norm(a, axis=1, keepdims=True))


def _in_njit(target):
    u = _ufuncs(target)
    affine_ = u["affine"]

    def fn(x, y):
        return affine_(x, y) * 2.0 + affine_(1.5, 2.0)
    return numba_mlir_gpu.njit(target=target)(fn)


@pytest.mark.parametrize("target", TARGETS)
def test_call_inside_njit_is_part_of_the_callers_loop(target):
    fn = _in_njit(target)
    _same(fn(X, Y), (X * Y + 1) * 2.0 + 4.0)
    text = inspect_mlir(fn)
    # the array expression is one parallel loop calling the kernel, lowered
    # into the same module: no call out of it
    assert text.count("scf.parallel") == 1
    assert re.findall(r"func.func private @affine\w*", text)
    assert "llvm.call" not in text


def _more_in_njit(target):
    u = _ufuncs(target)
    dot_, affine_ = u["dot"], u["affine"]

    def fn(a, b, out):
        rows = dot_(a, b) * 2.0          # a gufunc over a's rows, then an array expression
        whole = dot_(b, b)               # no loop dimensions: a number
        affine_(a, b, out)               # a ufunc with an explicit output
        return rows, whole, out.sum()
    return numba_mlir_gpu.njit(target=target)(fn)


@pytest.mark.parametrize("target", TARGETS)
def test_gufuncs_and_explicit_outputs_inside_njit(target):
    fn = _more_in_njit(target)
    a, b = np.arange(12.0).reshape(3, 4), np.linspace(1.0, 2.0, 4)
    out = np.zeros((3, 4))
    rows, whole, total = fn(a, b, out)
    _same(rows, 2.0 * (a @ b))
    assert whole == b @ b
    _same(out, a * b + 1)
    assert total == (a * b + 1).sum()
    text = inspect_mlir(fn)
    assert "llvm.call" not in text and text.count("scf.parallel") >= 2


def test_options_and_targets_are_checked():
    with pytest.raises(ValueError, match="unknown target"):
        vectorize(target="tpu")(affine)
    with pytest.raises(TypeError, match="unexpected options"):
        vectorize(SIGS, colour="red")(affine)
    with pytest.raises(TypeError, match="signature"):
        vectorize(["float64(float64)"])(affine)


def test_compile_only_builds_one_kernel():
    f = vectorize(["float32(float32, float32)"], target="compile-only")(affine)
    with pytest.raises(RuntimeError):
        f(np.ones(8, np.float32), np.ones(8, np.float32))
    (dispatcher,) = f.dispatchers
    ptx = "".join(inspect_ptx(dispatcher))
    assert ptx.count(".entry") == 1


@pytest.mark.gpu
def test_device_arrays_in_device_arrays_out():
    cp = pytest.importorskip("cupy")
    u = _ufuncs("gpu")
    x, y = cp.asarray(X), cp.asarray(Y)
    got = u["affine"](x, y)
    assert isinstance(got, cp.ndarray)
    _same(cp.asnumpy(got), X * Y + 1)
    got = u["affine"](x.reshape(4, 6), 2.0)
    assert isinstance(got, cp.ndarray) and got.shape == (4, 6)
    out = cp.zeros(24)
    assert u["affine"](x, y, out=out) is out
    _same(cp.asnumpy(out), X * Y + 1)
    total = u["add"].reduce(cp.asarray(np.arange(10000.0)))
    assert isinstance(total, cp.ndarray) and float(total) == np.arange(10000.0).sum()
    rows = u["dot"](cp.asarray(np.arange(12.0).reshape(3, 4)), cp.asarray(np.ones(4)))
    assert isinstance(rows, cp.ndarray)
    _same(cp.asnumpy(rows), np.arange(12.0).reshape(3, 4).sum(axis=1))
