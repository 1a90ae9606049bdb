"""Host fallback (frontend/fallback.py): host code our lowering does not
support is lowered by Numba, each parallel loop still through MLIR; results
as Numba's own. With the fallback off, the same functions are the clear
error they were."""
import ctypes
import warnings

import numba
import numpy as np
import pytest
from numba import prange
from numba.typed import List

from numba_mlir_gpu import (FallbackWarning, UnsupportedConstructError, inspect_mlir,
                            inspect_path, inspect_ptx, njit)
from numba_mlir_gpu.frontend.wrapper import CompileOnlyError

from .support import TARGETS, check as _check, ours as _ours


# These tests are about the host fallback: it is on.
def check(*args, **kwargs):
    return _check(*args, fallback=True, **kwargs)


def ours(pyfunc, target):
    return _ours(pyfunc, target, fallback=True)

RNG = np.random.default_rng(5)


def dict_then_loops(x):
    d = {}
    d[1] = 2.0
    c = d[1]
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i] * c
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] + s
    return s, out


def several_reductions(x):
    names = {"scale": 3.0}
    scale = names["scale"]
    total, top, count = 0.0, -np.inf, 0
    for i in prange(x.shape[0]):
        total += x[i] * scale
        top = max(top, x[i])
        count += x[i] > 0.5
    return total, top, count


def loops_in_a_host_loop(x, steps):
    seen = {}
    for step in range(steps):
        for i in prange(x.shape[0]):
            x[i] = 0.5 * x[i] + step
        seen[step] = x.sum()
    return x, seen[steps - 1]


def typed_list_of_arrays(parts):
    out = np.zeros(len(parts))
    for k in range(len(parts)):
        part = parts[k]
        acc = 0.0
        for i in prange(part.shape[0]):
            acc += part[i] * part[i]
        out[k] = acc
    return out


def string_keys(x):
    weights = {"a": 1.5, "b": -2.0}
    w = weights["a"] + weights["b"]
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = w * x[i]
    return out


def no_loops(n):
    d = {}
    for i in range(n):
        d[i] = i * i
    return d[n - 1]


def axis_sum_in_host_code(x):
    d = {0: 1.0}
    c = d[0]
    rows = np.sum(x, axis=1)
    for i in prange(rows.shape[0]):
        rows[i] = rows[i] * c
    return rows


def unsupported_loop_body(x):
    d = {0: 2.0}
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * d[0]
    return out


X = RNG.random(1001)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, args, loops", [
    (dict_then_loops, (X,), 2),
    (several_reductions, (X,), 1),
    (loops_in_a_host_loop, (X.copy(), 3), 1),
    (string_keys, (X,), 1),
    (no_loops, (7,), 0),
    (axis_sum_in_host_code, (RNG.random((37, 45)),), 1),
])
def test_host_code_falls_back_and_loops_go_through_mlir(fn, args, loops, target):
    check(fn, *args, target=target, rtol=1e-12)
    compiled = ours(fn, target)
    compiled(*args)
    path = inspect_path(compiled)
    assert path.path == "fallback" and path.reason
    assert [loop.path for loop in path.loops] == ["mlir"] * loops


@pytest.mark.parametrize("target", TARGETS)
def test_typed_lists_of_arrays(target):
    parts = List([RNG.random(n) for n in (1, 33, 257)])
    got = ours(typed_list_of_arrays, target)(parts)
    np.testing.assert_allclose(got, numba.njit(typed_list_of_arrays)(parts), rtol=1e-12)


def test_the_path_and_its_reason_are_visible():
    f = njit(target="cpu")(dict_then_loops)
    f(X)
    path = inspect_path(f)
    assert path.path == "fallback"
    assert "build_map" in path.reason and "line" in path.reason
    assert [loop.path for loop in path.loops] == ["mlir", "mlir"]
    assert [name.split(".")[0] for name in path.loops[0].outputs] == ["s"]
    assert path.loops[1].outputs == []
    text = inspect_mlir(f)
    assert text.startswith("// numba-mlir-gpu: host code lowered by Numba")
    assert "2 of 2 parallel loops through MLIR" in text.splitlines()[0]
    assert "scf.parallel" in text
    whole = njit(target="cpu")(lambda x: x + 1.0)
    whole(X)
    assert inspect_path(whole).path == "mlir"
    assert inspect_mlir(whole).startswith("// numba-mlir-gpu: the whole function through MLIR")


def test_fallback_off_by_option_is_the_error():
    f = njit(target="cpu", fallback=False)(dict_then_loops)
    with pytest.raises(UnsupportedConstructError, match="build_map"):
        f(X)


def test_fallback_off_by_environment_is_the_error(monkeypatch):
    monkeypatch.setenv("NUMBA_MLIR_GPU_FALLBACK", "0")
    f = njit(target="cpu")(string_keys)
    with pytest.raises(UnsupportedConstructError):
        f(X)
    monkeypatch.setenv("NUMBA_MLIR_GPU_FALLBACK", "1")
    g = njit(target="cpu")(string_keys)
    np.testing.assert_array_equal(g(X), string_keys(X))


@pytest.mark.parametrize("target", TARGETS)
def test_a_loop_mlir_cannot_take_is_an_error_naming_it(target):
    f = njit(target=target)(unsupported_loop_body)
    with pytest.raises(UnsupportedConstructError, match="DictType"):
        f(X)


def test_unsupported_loops_on_the_cpu_when_asked_with_a_warning():
    f = njit(target="cpu", unsupported_loops="cpu")(unsupported_loop_body)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = f(X)
    np.testing.assert_array_equal(got, X * 2.0)
    assert any(issubclass(w.category, FallbackWarning) for w in caught)
    assert [loop.path for loop in inspect_path(f).loops] == ["numba-cpu"]


def test_unsupported_loops_from_the_environment(monkeypatch):
    monkeypatch.setenv("NUMBA_MLIR_GPU_UNSUPPORTED_LOOPS", "cpu")
    f = njit(target="cpu")(unsupported_loop_body)
    with pytest.warns(FallbackWarning):
        np.testing.assert_array_equal(f(X), X * 2.0)
    assert [loop.path for loop in inspect_path(f).loops] == ["numba-cpu"]
    # the option given to njit wins over the environment
    pinned = njit(target="cpu", unsupported_loops="error")(unsupported_loop_body)
    with pytest.raises(UnsupportedConstructError, match="DictType"):
        pinned(X)


def test_unknown_unsupported_loops_setting(monkeypatch):
    with pytest.raises(ValueError, match="unsupported_loops"):
        njit(target="cpu", unsupported_loops="gpu")
    monkeypatch.setenv("NUMBA_MLIR_GPU_UNSUPPORTED_LOOPS", "gpu")
    with pytest.raises(ValueError, match="NUMBA_MLIR_GPU_UNSUPPORTED_LOOPS"):
        njit(target="cpu")(unsupported_loop_body)(X)


# -- GPU arrays in Numba-lowered host code ----------------------------------------

def device_loops_around_a_dict(x, out):
    d = {"w": 2.0}
    w = d["w"]
    for i in prange(x.shape[0]):
        out[i] = w * x[i]
    return out.shape[0]


def device_element_in_host_code(x):
    d = {"w": 2.0}
    return x[0] * d["w"]


@pytest.mark.gpu
def test_device_arrays_stay_on_the_device_through_the_loops():
    cp = pytest.importorskip("cupy")
    x = cp.asarray(X)
    out = cp.zeros_like(x)
    f = njit(target="gpu")(device_loops_around_a_dict)
    assert f(x, out) == X.shape[0]
    np.testing.assert_array_equal(cp.asnumpy(out), 2.0 * X)
    assert inspect_path(f).loops[0].path == "mlir"


@pytest.mark.gpu
def test_host_code_reading_a_device_array_is_refused():
    cp = pytest.importorskip("cupy")
    f = njit(target="gpu")(device_element_in_host_code)
    with pytest.raises(UnsupportedConstructError, match="GPU array in host code"):
        f(cp.asarray(X))


def test_loops_of_a_fallback_function_are_gpu_kernels_without_a_gpu():
    """compile-only: PTX of each loop, built with no GPU; a call raises."""
    f = njit(target="compile-only")(dict_then_loops)
    with pytest.raises(CompileOnlyError):
        f(X)
    ptx = inspect_ptx(f)
    assert len(ptx) == 2 and all(".entry" in text for text in ptx)
    assert all(text.startswith("// numba-mlir-gpu: host code lowered by Numba") for text in ptx)


# -- host arrays resident on the GPU across a fallback function's loops ---------

def two_loops_on_one_array(x):
    weights = {"a": 2.0}
    w = weights["a"]
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * w
    for i in prange(x.shape[0]):
        out[i] += x[i]
    return out


def two_loops_returning_a_tuple(x):
    weights = {"a": 2.0}
    w = weights["a"]
    out = np.zeros_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * w
    s = 0.0
    for i in prange(x.shape[0]):
        s += out[i]
    return s, out


def host_read_between_loops(x):
    weights = {"a": 1.0}
    c = weights["a"]
    out = np.zeros_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] + c
    first = out[0]
    for i in prange(x.shape[0]):
        out[i] += first
    return out


def raise_between_loops(x, n):
    weights = {"a": 3.0}
    c = weights["a"]
    out = np.zeros_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * c
    if n > 0:
        raise ValueError("n is positive")
    for i in prange(x.shape[0]):
        out[i] += 1.0
    return out


def temporary_in_a_host_loop(x, steps):
    weights = {"a": 1.0}
    c = weights["a"]
    total = 0.0
    for step in range(steps):
        tmp = np.empty_like(x)
        for i in prange(x.shape[0]):
            tmp[i] = x[i] * (step + c)
        s = 0.0
        for i in prange(x.shape[0] - 1):      # not fused with the loop above
            s += tmp[i + 1]
        total += s
    return total


def _resident(fn, target, *args):
    f = ours(fn, target)
    f(*args)
    return inspect_path(f).resident


@pytest.mark.parametrize("target", TARGETS)
def test_arrays_only_passed_along_stay_on_the_gpu(target):
    x = RNG.random(1001)
    check(two_loops_on_one_array, x, target=target)
    expected = {"x": False, "out": True} if target == "gpu" else {}
    assert _resident(two_loops_on_one_array, target, x) == expected
    check(two_loops_returning_a_tuple, x, target=target, rtol=1e-12)
    expected = {"x": False, "out": True} if target == "gpu" else {}
    assert _resident(two_loops_returning_a_tuple, target, x) == expected


@pytest.mark.parametrize("target", TARGETS)
def test_an_array_the_host_reads_between_loops_is_copied_per_loop(target):
    x = RNG.random(515)
    check(host_read_between_loops, x, target=target)
    assert "out" not in _resident(host_read_between_loops, target, x)


@pytest.mark.parametrize("target", TARGETS)
def test_raising_between_loops_releases_the_device_copies(target):
    x = RNG.random(300)
    f = ours(raise_between_loops, target)
    for _ in range(3):
        with pytest.raises(ValueError, match="n is positive"):
            f(x, 1)
    np.testing.assert_array_equal(f(x, 0), x * 3.0 + 1.0)


@pytest.mark.parametrize("target", TARGETS)
def test_a_temporary_made_in_a_host_loop(target):
    x = RNG.random(777)
    check(temporary_in_a_host_loop, x, 4, target=target, rtol=1e-12)
    expected = {"x": False, "tmp": True} if target == "gpu" else {}
    assert _resident(temporary_in_a_host_loop, target, x, 4) == expected


# -- constructs that sent library functions to the fallback, now lowered ---------

@numba.njit
def _scaled(x, tol=1e-3, n=3, flag=True):
    return x * tol + n if flag else x


def omitted_defaults(x):
    return _scaled(x) + _scaled(x, 2.0) + _scaled(x, n=5)


def diff_and_shape_tuples(a):
    inner = a.shape[:-1] + (a.shape[-1] - 1,)
    return np.diff(a), inner[0] + inner[-1]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, args", [
    (omitted_defaults, (1.5,)),
    (diff_and_shape_tuples, (np.arange(12.0).reshape(3, 4) ** 2,)),
], ids=["omitted_defaults", "diff_and_shape_tuples"])
def test_whole_function_through_mlir(fn, args, target):
    check(fn, *args, target=target)
    f = ours(fn, target)
    f(*args)
    assert inspect_path(f).path == "mlir", inspect_path(f).reason


@numba.njit
def _evens(n):
    for i in range(n):
        yield 2 * i


def sum_of_a_generator(n):
    s = 0
    for v in _evens(n):
        s += v
    return s


def a_generator(n):
    for i in range(n):
        yield i * i


@pytest.mark.parametrize("target", TARGETS)
def test_generators_take_the_fallback(target):
    """`yield` (in the function or a callee) was an internal error
    (AttributeError); it is a construct the fallback takes."""
    f = ours(sum_of_a_generator, target)
    assert f(6) == sum_of_a_generator(6)
    assert "generators" in inspect_path(f).reason
    with pytest.raises(UnsupportedConstructError, match="generator functions"):
        ours(a_generator, target)(4)        # itself: numba.njit's to compile
    with pytest.raises(UnsupportedConstructError, match="generators"):
        njit(target=target, fallback=False)(sum_of_a_generator)(3)


def alias_between_loops(x):
    weights = {"a": 2.0}
    w = weights["a"]
    out = x            # the same host memory under two names
    for i in prange(x.shape[0]):
        out[i] = x[i] * w
    total = 0.0
    for i in prange(x.shape[0] - 1):
        total += x[i + 1]
    return total


@pytest.mark.parametrize("target", TARGETS)
def test_an_alias_of_another_array_is_not_resident(target):
    check(alias_between_loops, RNG.random(301), target=target, rtol=1e-12)
    assert "out" not in _resident(alias_between_loops, target, RNG.random(5))


# -- slices and compile-time objects as inputs of a fallback function's loops ------
# Numba turns `a[lo:hi] = v` into a parfor whose inputs include the slice (or
# the `slice` builtin, hoisted out of the loop); they reach the loop's MLIR
# function as integers and as the global again (loop_inputs.py).

def slice_bounds_assigned(a, lo, hi):
    k = {"k": 1.0}["k"]          # a dict: the host code falls back
    a[lo:hi] = 5.0 * k
    return a


def slice_to_slice(a, b, n):
    k = {"k": 1.0}["k"]
    a[1:] = b[:n - 1] * k
    return a


def slice_default_bounds(a, m):
    k = {"k": 1.0}["k"]
    a[: m + 1] = 1e300
    a[-3:] = 2.0 * k
    a[:-5] = a[:-5] + 1.0
    return a


def shifted_copy(t, mean):
    """stumpy's _stump: a rolled copy made with two slice assignments."""
    k = {"k": 1.0}["k"]
    c = np.empty(mean.shape[0])
    c[1:] = t[: mean.shape[0] - 1]
    c[0] = t[-1]
    c[:] = c - mean
    return c * k


def row_slice(a, i, m):
    k = {"k": 1.0}["k"]
    a[i, : m + 1] = 7.0 * k
    return a


def block_of_a_matrix(a, b, lo, hi):
    k = {"k": 1.0}["k"]
    a[lo:hi, 1:] = b[lo:hi, :-1] * 3.0 * k
    return a


def slice_of_a_view(a, b):
    k = {"k": 1.0}["k"]
    v = a[2:8]
    v[1:4] = b[:3] + k
    return a


def slice_object_in_a_prange(a, lo, hi, step, out):
    k = {"k": 1.0}["k"]
    s = slice(lo, hi, step)
    for i in prange(out.shape[0]):
        out[i] = a[s].sum() + i * k
    return out


def slice_argument_in_a_prange(a, s, out):
    k = {"k": 1.0}["k"]
    for i in prange(out.shape[0]):
        out[i] = a[s].sum() + i * k
    return out


def _module_of(backend):
    def rounded(x):
        k = {"k": 1.0}["k"]
        return backend.ceil(x * k), backend.floor(x + k)
    return rounded


module_in_a_closure = _module_of(np)


A10 = RNG.random(10)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, args", [
    (slice_bounds_assigned, (A10.copy(), 2, 7)),
    (slice_bounds_assigned, (A10.copy(), -7, -2)),
    (slice_bounds_assigned, (A10.copy(), -70, 200)),
    (slice_bounds_assigned, (A10.copy(), 6, 2)),            # empty
    (slice_bounds_assigned, (A10.copy(), 3, 3)),            # empty
    (slice_to_slice, (np.zeros(10), A10, 10)),
    (slice_default_bounds, (A10.copy(), 4)),
    (shifted_copy, (A10, RNG.random(8))),
    (row_slice, (RNG.random((5, 10)), 2, 4)),
    (row_slice, (RNG.random((5, 10)), -1, -4)),
    (block_of_a_matrix, (np.zeros((6, 5)), RNG.random((6, 5)), 1, -1)),
    (slice_of_a_view, (A10.copy(), A10)),
    (slice_object_in_a_prange, (A10, 1, 9, 2, np.zeros(4))),
    (slice_object_in_a_prange, (A10, 8, -10, -3, np.zeros(4))),
    (slice_argument_in_a_prange, (A10, slice(-2, None, -3), np.zeros(4))),
    (slice_argument_in_a_prange, (A10, slice(None, None, -1), np.zeros(4))),
    (slice_argument_in_a_prange, (A10, slice(1, -1), np.zeros(4))),
    (slice_argument_in_a_prange, (A10, slice(None, 4), np.zeros(4))),
    (slice_argument_in_a_prange, (A10, slice(5, 2), np.zeros(4))),   # empty
    (module_in_a_closure, (A10 * 7.0,)),
], ids=lambda v: getattr(v, "__name__", None))
def test_slices_and_globals_reach_the_loops_through_mlir(fn, args, target):
    check(fn, *args, target=target)
    f = ours(fn, target)
    f(*args)
    path = inspect_path(f)
    assert path.path == "fallback" and path.reason
    assert path.loops and all(loop.path == "mlir" for loop in path.loops), path.loops


def test_a_slice_is_passed_as_its_integers():
    f = njit(target="cpu")(block_of_a_matrix)
    f(np.zeros((6, 5)), RNG.random((6, 5)), 1, -1)
    parameters = [p for loop in inspect_path(f).loops for p in loop.parameters if not p.whole]
    # a tuple of two slice<a:b>: start and stop of each, step 1 is known
    assert sorted(p.path for p in parameters) == [(0, "start"), (0, "stop"),
                                                   (1, "start"), (1, "stop")]
    assert all(p.type == numba.intp for p in parameters)
    g = njit(target="cpu")(slice_argument_in_a_prange)
    g(A10, slice(1, None, 2), np.zeros(3))
    assert [p.path for p in inspect_path(g).loops[0].parameters if not p.whole] == [
        ("start",), ("stop",), ("step",)]


def test_loops_with_slice_inputs_are_gpu_kernels_without_a_gpu():
    f = njit(target="compile-only")(shifted_copy)
    with pytest.raises(CompileOnlyError):
        f(A10, RNG.random(8))
    assert len(inspect_ptx(f)) == 2 and all(".entry" in text for text in inspect_ptx(f))


# -- lists of scalars read or written inside a fallback function's loops -----------

def list_read_in_a_loop(a, breakpoints):
    """tslearn's cydist_sax: breakpoints given as a Python list."""
    k = {"k": 1.0}["k"]
    s = 0.0
    for t in prange(a.shape[0]):
        s += breakpoints[int(a[t]) % len(breakpoints)] * k
    return s


def list_built_in_host_code(a):
    weights = [1.5, 2.5, 3.5]
    k = {"k": 1.0}["k"]
    out = np.empty(a.shape[0])
    for t in prange(a.shape[0]):
        out[t] = weights[t % 3] * a[t] * k + weights[-1]
    return out


def list_written_in_a_loop(a, values):
    k = {"k": 1.0}["k"]
    for t in prange(len(values)):
        values[t] = values[t] * 2.0 + a[t] * k
    return values[0]


def list_of_flags(a, flags):
    k = {"k": 1.0}["k"]
    out = np.empty(a.shape[0])
    for t in prange(a.shape[0]):
        out[t] = a[t] * k if flags[t % len(flags)] else 0.0
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, args", [
    (list_read_in_a_loop, (np.arange(10.0), [0.25, -1.0, 3.0])),
    (list_built_in_host_code, (A10,)),
    (list_of_flags, (A10, [True, False, True])),
    (list_of_flags, (A10, [1, 0, 2])),
], ids=lambda v: getattr(v, "__name__", None))
def test_lists_of_scalars_reach_the_loops_as_arrays(fn, args, target):
    check(fn, *args, target=target)
    f = ours(fn, target)
    f(*args)
    assert [loop.path for loop in inspect_path(f).loops] == ["mlir"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_list_the_loop_writes_is_reflected_to_python(target):
    values = [float(i) for i in range(6)]
    expected = list(values)
    numba.njit(list_written_in_a_loop)(A10, expected)
    assert ours(list_written_in_a_loop, target)(A10, values) == expected[0]
    assert values == expected


# -- Numba's implementations compiled while ours compiles (frontend/nested_compiles.py) --

def percentiles(a):
    return np.percentile(a, 30.0), np.quantile(a, np.array([0.25, 0.75]))


def test_numba_implementations_typed_for_ours_serve_stock_numba_afterwards(monkeypatch):
    """Typing np.percentile for our pipeline leaves its implementations lowered
    and not finalised (deferred entries); a stock njit function compiled
    afterwards links them, which finalises them then, and computes what NumPy
    does. uint16 data: a signature no other test compiles first."""
    from numba_mlir_gpu.frontend import nested_compiles
    made = []

    class Counted(nested_compiles.DeferredEntry):
        def __init__(self, *args):
            made.append(args)
            super().__init__(*args)

    monkeypatch.setattr(nested_compiles, "DeferredEntry", Counted)
    a = (np.random.default_rng(3).random(41) * 1000).astype(np.uint16)
    expected = percentiles(a)
    got = njit(target="cpu")(percentiles)(a)
    assert made, "no implementation was left without machine code"
    stock = numba.njit(percentiles)(a)
    for result in (got, stock):
        np.testing.assert_allclose(result[0], expected[0], rtol=1e-12)
        np.testing.assert_allclose(result[1], expected[1], rtol=1e-12)
    # the libraries stock's code linked were finalised then, their environments set
    finalised = [(context, library, fndesc, env) for context, library, fndesc, env in made
                 if library._finalized]
    assert finalised
    for context, library, fndesc, env in finalised:
        address = library.codegen._engine.get_global_value_address(context.get_env_name(fndesc))
        assert ctypes.c_void_p.from_address(address).value == id(env)
