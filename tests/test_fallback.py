"""Host fallback (frontend/fallback.py): host code our lowering does not
support is lowered by Numba, each parallel loop still through MLIR; results
as Numba's own. With the fallback off, the same functions are the clear
error they were."""
import warnings

import numba
import numpy as np
import pytest
from numba import prange
from numba.typed import List

from numba_mlir_gpu import (FallbackWarning, UnsupportedConstructError, inspect_mlir,
                            inspect_path, inspect_ptx, njit)
from numba_mlir_gpu.frontend.wrapper import CompileOnlyError

from .support import TARGETS, check, ours

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


def test_unknown_unsupported_loops_setting():
    with pytest.raises(ValueError, match="unsupported_loops"):
        njit(target="cpu", unsupported_loops="gpu")


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
