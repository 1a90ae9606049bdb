"""np.random in compiled code: Philox4x32-10 known answers, the keying of
draws (host code, parallel loops, filled arrays), distributions (moments and
Kolmogorov-Smirnov on 10^6 draws), independence, reproducibility, launch
shapes, refusals and the GPU code (compile-only)."""
from __future__ import annotations

import math
import random as pyrandom

import numpy as np
import pytest
from numba import prange
from numba.core import config

import numba_mlir_gpu
from numba_mlir_gpu.lowering.errors import UnsupportedConstructError

from .support import TARGETS, ours

N = 10 ** 6
MASK = 0xFFFFFFFF


# -- a reference Philox4x32-10 in Python ---------------------------------------

def philox(counter, key, rounds=10):
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & MASK, (k1 + 0xBB67AE85) & MASK
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK)
    return c0, c1, c2, c3


# Random123's kat_vectors for philox4x32_10: (counter, key, result)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((MASK,) * 4, (MASK, MASK), (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


@pytest.mark.parametrize("counter, key, expected", KAT)
def test_reference_philox_matches_random123(counter, key, expected):
    assert philox(counter, key) == expected


@pytest.mark.parametrize("counter, key, expected", KAT)
def test_mlir_philox_matches_random123(counter, key, expected):
    """lowering/philox.py, JIT-ed alone: the same four words."""
    import ctypes

    from numba_mlir_gpu._mlir import ExecutionEngine, arith, func, ir, memref, passmanager
    from numba_mlir_gpu.lowering.philox import const_u32, philox4x32_10
    out = np.zeros(4, np.uint32)
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        i32 = ir.IntegerType.get_signless(32)
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("kat", ([ir.MemRefType.get([4], i32)], []))
            fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            with ir.InsertionPoint(fn.add_entry_block()):
                words = philox4x32_10([const_u32(c) for c in counter],
                                      [const_u32(k) for k in key])
                for i, word in enumerate(words):
                    memref.StoreOp(word, fn.arguments[0],
                                   [arith.ConstantOp(ir.IndexType.get(), i).result])
                func.ReturnOp([])
        passmanager.PassManager.parse(
            "builtin.module(finalize-memref-to-llvm,convert-arith-to-llvm,"
            "convert-func-to-llvm,reconcile-unrealized-casts)").run(module.operation)
        engine = ExecutionEngine(module, opt_level=0)
        from mlir.runtime import get_ranked_memref_descriptor
        descriptor = get_ranked_memref_descriptor(out)
        engine.invoke("kat", ctypes.pointer(ctypes.pointer(descriptor)))
    assert tuple(int(w) for w in out) == expected


# -- the keying of draws ---------------------------------------------------------

def _unit(words):
    """The float64 a block gives np.random.random(): the top 53 bits of (w1, w0)."""
    return ((words[1] << 32 | words[0]) >> 11) * 2.0 ** -53


def seeded_random(seed, n):
    np.random.seed(seed)
    return np.random.random(n)


def seeded_prange(seed, n):
    np.random.seed(seed)
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.random.random()
    return out


def seeded_host_loop(seed, n):
    np.random.seed(seed)
    out = np.empty(n)
    for i in range(n):
        out[i] = np.random.random()
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [seeded_random, seeded_prange, seeded_host_loop])
def test_draw_k_after_seed_is_philox_of_counter_k(target, fn):
    """After np.random.seed(s), element k of any of these is the block of
    counter (k, 0, 0, 0) under key (s mod 2^32, s >> 32): host draws take
    positions one by one, a loop of n takes n at once, iteration k the k-th."""
    seed = (7 << 32) | 12345
    got = ours(fn, target)(seed, 1000)
    key = (seed & MASK, seed >> 32)
    expected = [_unit(philox((k, 0, 0, 0), key)) for k in range(1000)]
    np.testing.assert_array_equal(got, expected)


def seed_only(seed):
    np.random.seed(seed)


def draw_only(n):
    return np.random.random(n)


def test_seed_is_shared_by_all_compiled_functions():
    seed, draw = ours(seed_only, "cpu"), ours(draw_only, "cpu")
    seed(5)
    first = draw(100)
    seed(5)
    np.testing.assert_array_equal(draw(100), first)
    np.testing.assert_array_equal(first, ours(seeded_random, "cpu")(5, 100))


@pytest.mark.parametrize("target", TARGETS)
def test_reproducible_and_fresh(target):
    fn = ours(seeded_prange, target)
    a, b, c = fn(1, 1000), fn(1, 1000), fn(2, 1000)
    np.testing.assert_array_equal(a, b)
    assert not np.any(a == c)
    draw = ours(draw_only, target)
    d, e = draw(1000), draw(1000)       # no reseeding: the counter moved on
    assert not np.any(d == e)


def test_independent_of_thread_count(monkeypatch):
    results = []
    for threads in (1, 2, 7):
        monkeypatch.setattr(config, "NUMBA_NUM_THREADS", threads)
        results.append(ours(seeded_prange, "cpu")(11, 10000))
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


@pytest.mark.gpu
@pytest.mark.parametrize("launch", ["32x1", "256x4", "1024x8"])
def test_gpu_independent_of_launch_shape_and_same_as_cpu(monkeypatch, launch):
    monkeypatch.setenv("NUMBA_MLIR_GPU_LAUNCH", launch)
    got = ours(seeded_prange, "gpu")(11, 100000)
    np.testing.assert_array_equal(got, ours(seeded_prange, "cpu")(11, 100000))


def seeded_mixture(seed, n):
    np.random.seed(seed)
    ints = np.random.randint(-5, 1000, n)
    floats = np.empty(n)
    for i in prange(n):
        floats[i] = np.random.normal(1.0, 2.0) + np.random.exponential() + np.random.poisson(20.0)
    return ints, floats


@pytest.mark.gpu
def test_gpu_draws_the_cpu_blocks():
    """randint: the same integers; floats through libdevice's log/cos/sqrt
    within rounding of the CPU's (libm)."""
    ints, floats = ours(seeded_mixture, "gpu")(8, 100000)
    cpu_ints, cpu_floats = ours(seeded_mixture, "cpu")(8, 100000)
    np.testing.assert_array_equal(ints, cpu_ints)
    close = np.isclose(floats, cpu_floats, rtol=1e-12, atol=1e-12)
    assert close.mean() > 0.999     # a poisson acceptance may flip at a rounding edge


def draws_in_inner_loops(seed, n, m):
    np.random.seed(seed)
    out = np.empty((n, m))
    sums = np.empty(n)
    for i in prange(n):
        s = 0.0
        for j in range(m):
            v = np.random.random()
            out[i, j] = v
            s += v
        sums[i] = s
    return out, sums


def array_draws_in_prange(seed, n):
    np.random.seed(seed)
    out = np.empty((n, 4))
    for i in prange(n):
        out[i, :] = np.random.random(4)
    return out


def summed_draws(seed, n):
    np.random.seed(seed)
    total = 0.0
    for i in prange(n):
        total += np.random.standard_normal()
    return total


@pytest.mark.parametrize("target", TARGETS)
def test_draws_in_loops_inside_an_iteration(target):
    """Draws in a loop of the body (a per-iteration draw number), and a
    filled array inside a body (a stream derived from one draw): distinct,
    uniform and repeatable."""
    out, sums = ours(draws_in_inner_loops, target)(3, 20000, 50)
    again, _ = ours(draws_in_inner_loops, target)(3, 20000, 50)
    np.testing.assert_array_equal(out, again)
    np.testing.assert_allclose(sums, out.sum(axis=1), rtol=1e-12)
    assert len(np.unique(out)) == out.size
    _check_uniform(out.ravel())
    _check_uncorrelated(out.ravel())
    _check_uncorrelated(out.T.ravel())
    arrays = ours(array_draws_in_prange, target)(3, 250000)
    assert len(np.unique(arrays)) == arrays.size
    _check_uniform(arrays.ravel())
    _check_uncorrelated(arrays.ravel())
    _check_uncorrelated(arrays.T.ravel())


@pytest.mark.parametrize("target", TARGETS)
def test_draws_in_a_reduction(target):
    total = ours(summed_draws, target)(4, N)
    assert abs(total) < 5 * math.sqrt(N)
    assert total == ours(summed_draws, target)(4, N)


# -- distributions: moments and Kolmogorov-Smirnov on 10^6 draws -------------

def _ks(sample, cdf):
    """The Kolmogorov-Smirnov statistic of `sample` against `cdf`."""
    x = np.sort(sample)
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def _check_ks(sample, cdf):
    # the 0.001-level critical value
    assert _ks(sample, cdf) < 1.95 / math.sqrt(len(sample))


def _check_moments(sample, mean, var):
    n = len(sample)
    assert abs(sample.mean() - mean) < 5 * math.sqrt(var / n)
    # the sample variance's standard error, for the light tails used here
    assert abs(sample.var() - var) < 5 * var * math.sqrt(3.0 / n)


def _check_uniform(sample, low=0.0, high=1.0):
    assert sample.min() >= low and sample.max() < high
    _check_moments(sample, (low + high) / 2, (high - low) ** 2 / 12)
    _check_ks(sample, lambda x: (x - low) / (high - low))


def _check_uncorrelated(sample):
    a = sample - sample.mean()
    lag1 = np.dot(a[:-1], a[1:]) / np.dot(a, a)
    assert abs(lag1) < 5 / math.sqrt(len(sample))


_erf = np.frompyfunc(math.erf, 1, 1)


def _normal_cdf(loc, scale):
    return lambda x: 0.5 * (1 + _erf((x - loc) / (scale * math.sqrt(2))).astype(np.float64))


def uniform_prange(n):
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.random.uniform(-2.0, 3.0)
    return out


def uniform_size(n):
    return np.random.uniform(-2.0, 3.0, n)


def normal_prange(n):
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.random.normal(1.5, 2.0)
    return out


def normal_size(n):
    return np.random.normal(1.5, 2.0, size=(n // 1000, 1000)).ravel()


def randn_2d(n):
    return np.random.randn(n // 1000, 1000).ravel()


def standard_normal_size(n):
    return np.random.standard_normal(n)


def exponential_prange(n):
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.random.exponential(0.5)
    return out


def exponential_size(n):
    return np.random.exponential(0.5, n)


def rand_size(n):
    return np.random.rand(n)


def ranf_prange(n):
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.random.ranf() + 0 * np.random.random_sample() + 0 * np.random.sample()
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [uniform_prange, uniform_size])
def test_uniform(target, fn):
    sample = ours(fn, target)(N)
    _check_uniform(sample, -2.0, 3.0)
    _check_uncorrelated(sample)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [rand_size, ranf_prange])
def test_random(target, fn):
    sample = ours(fn, target)(N)
    _check_uniform(sample)
    _check_uncorrelated(sample)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn, loc, scale", [(normal_prange, 1.5, 2.0), (normal_size, 1.5, 2.0),
                                            (randn_2d, 0.0, 1.0),
                                            (standard_normal_size, 0.0, 1.0)])
def test_normal(target, fn, loc, scale):
    sample = ours(fn, target)(N)
    _check_moments(sample, loc, scale ** 2)
    _check_ks(sample, _normal_cdf(loc, scale))
    _check_uncorrelated(sample)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [exponential_prange, exponential_size])
def test_exponential(target, fn):
    sample = ours(fn, target)(N)
    assert sample.min() >= 0
    assert abs(sample.mean() - 0.5) < 5 * 0.5 / math.sqrt(N)
    _check_ks(sample, lambda x: 1 - np.exp(-x / 0.5))
    _check_uncorrelated(sample)


def _check_discrete(sample, pmf: dict):
    """Each value's count within 5 sigma of its expectation (values with at
    least 50 expected), and nothing outside the support."""
    n = len(sample)
    values, counts = np.unique(sample, return_counts=True)
    assert set(values.tolist()) <= set(pmf)
    found = dict(zip(values.tolist(), counts.tolist()))
    for value, p in pmf.items():
        if n * p >= 50:
            assert abs(found.get(value, 0) - n * p) < 5 * math.sqrt(n * p * (1 - p)), value


def randint_prange(n):
    out = np.empty(n, np.int64)
    for i in prange(n):
        out[i] = np.random.randint(-3, 7)
    return out


def randint_size(n):
    return np.random.randint(-3, 7, n)


def randint_high_only(n):
    out = np.empty(n, np.int64)
    for i in prange(n):
        out[i] = np.random.randint(10) - 3
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [randint_prange, randint_size, randint_high_only])
def test_randint(target, fn):
    sample = ours(fn, target)(N)
    assert sample.dtype == np.int64
    _check_discrete(sample, {v: 0.1 for v in range(-3, 7)})
    _check_moments(sample.astype(np.float64), 1.5, (10 ** 2 - 1) / 12)
    _check_uncorrelated(sample.astype(np.float64))


def poisson_prange(n, lam):
    out = np.empty(n, np.int64)
    for i in prange(n):
        out[i] = np.random.poisson(lam)
    return out


def poisson_size(n, lam):
    return np.random.poisson(lam, n)


def _poisson_pmf(lam):
    return {k: math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1))
            for k in range(int(lam + 40 * math.sqrt(lam) + 40))}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn", [poisson_prange, poisson_size])
@pytest.mark.parametrize("lam", [0.7, 4.0, 10.0, 37.5, 1000.0])
def test_poisson(target, fn, lam):
    """Inversion below lam = 10, PTRS from there."""
    sample = ours(fn, target)(N, lam)
    _check_moments(sample.astype(np.float64), lam, lam)
    _check_discrete(sample, _poisson_pmf(lam))
    _check_uncorrelated(sample.astype(np.float64))


def poisson_rows_in_prange(n, lam):
    out = np.empty((n, 4), np.int64)
    for i in prange(n):
        out[i, :] = np.random.poisson(lam, 4)
    return out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("lam", [3.0, 30.0])
def test_poisson_arrays_inside_an_iteration(target, lam):
    """Both algorithms in one scf.if, the draw number carried out of it."""
    sample = ours(poisson_rows_in_prange, target)(N // 4, lam).ravel().astype(np.float64)
    _check_moments(sample, lam, lam)
    _check_uncorrelated(sample)


def scalar_forms(seed):
    np.random.seed(seed)
    return (np.random.random(), np.random.rand(), np.random.randn(), np.random.normal(),
            np.random.normal(3.0), np.random.uniform(), np.random.uniform(1, 2),
            np.random.exponential(), np.random.standard_exponential(),
            np.random.randint(5), np.random.poisson(), np.random.poisson(3),
            np.random.standard_normal())


def test_scalar_forms_in_host_code():
    got = ours(scalar_forms, "cpu")(9)
    assert got == ours(scalar_forms, "cpu")(9)
    assert 0 <= got[0] < 1 and 0 <= got[1] < 1 and 1 <= got[6] < 2
    assert got[7] >= 0 and got[8] >= 0 and 0 <= got[9] < 5
    assert isinstance(got[9], int) and isinstance(got[10], int)
    key = (9, 0)
    assert got[0] == _unit(philox((0, 0, 0, 0), key))
    assert got[1] == _unit(philox((1, 0, 0, 0), key))


# -- errors --------------------------------------------------------------------

def empty_randint(lo, hi):
    return np.random.randint(lo, hi)


def negative_poisson(lam):
    return np.random.poisson(lam, 3)


def test_value_errors():
    with pytest.raises(ValueError, match="empty range"):
        ours(empty_randint, "cpu")(5, 5)
    with pytest.raises(ValueError, match="lambda < 0"):
        ours(negative_poisson, "cpu")(-1.0)


def choice(x):
    return np.random.choice(x)


def shuffle(x):
    np.random.shuffle(x)
    return x


def beta(n):
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.random.beta(2.0, 3.0)
    return out


def python_random(n):
    return pyrandom.random() * n


@pytest.mark.parametrize("fn, args, name", [
    (choice, (np.ones(3),), "np.random.choice"),
    (shuffle, (np.ones(3),), "np.random.shuffle"),
    (beta, (4,), "np.random.beta"),
    (python_random, (4,), "random.random"),
])
def test_unsupported_functions_are_refused_by_name(fn, args, name):
    with pytest.raises(UnsupportedConstructError, match=name) as info:
        ours(fn, "cpu")(*args)
    assert "test_random.py" in str(info.value)


@numba_mlir_gpu.njit(target="cpu")
def _draws_a_value():
    return np.random.random()


def calls_a_drawing_function(n):
    out = np.empty(n)
    for i in prange(n):
        out[i] = _draws_a_value()
    return out


def seeds_in_a_loop(n):
    out = np.empty(n)
    for i in prange(n):
        np.random.seed(i)
        out[i] = 1.0
    return out


@pytest.mark.parametrize("fn, message", [
    (calls_a_drawing_function, "called from a parallel loop"),
    (seeds_in_a_loop, "np.random.seed inside a parallel loop"),
])
def test_draws_the_keying_cannot_place_are_refused(fn, message):
    with pytest.raises(UnsupportedConstructError, match=message):
        ours(fn, "cpu")(4)


# -- GPU -----------------------------------------------------------------------

@pytest.mark.parametrize("fn, args", [
    (normal_prange, (N,)),
    (draws_in_inner_loops, (3, 100, 50)),      # a block per iteration, or a thread
    (array_draws_in_prange, (3, 100)),         # a chunk kernel (the body makes an array)
    (summed_draws, (3, 100)),                  # a tree reduction
    (randint_size, (100,)),                    # a filled array with a rejection loop
    (poisson_size, (100, 3.0)),
])
def test_gpu_code_for_drawing_loops(fn, args):
    """Compile-only: the Philox rounds are in the kernels (32-bit high
    multiplies), and the state stays on the host (the kernels get the key
    and the loop's base as parameters)."""
    from .test_codegen import all_ptx, compile_only, entries
    ptx = all_ptx(compile_only(fn, *args))
    assert entries(ptx)
    assert "mul.hi.u32" in ptx or "mul.wide.u32" in ptx
    assert "nmg_random_state" not in ptx


# -- the host fallback and the on-disk cache --------------------------------------

def fallback_with_drawing_loop(seed, n):
    names = {"scale": 2.0}          # a dict: host code for Numba's lowering
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.random.random()
    return out * names["scale"]


def fallback_with_host_draw(n):
    names = {"scale": 2.0}
    return np.random.random() * names["scale"] + n


def test_host_fallback_with_draws():
    """A loop compiled alone for the fallback draws from the shared generator;
    host code Numba would lower must not draw (Numba's own generator)."""
    seed = ours(seed_only, "cpu")
    fn = ours(fallback_with_drawing_loop, "cpu", fallback=True)
    seed(6)
    got = fn(6, 1000)
    path = numba_mlir_gpu.inspect_path(fn)
    assert path.path == "fallback" and [loop.path for loop in path.loops] == ["mlir"]
    seed(6)
    np.testing.assert_array_equal(got, 2.0 * ours(draw_only, "cpu")(1000))
    with pytest.raises(UnsupportedConstructError):
        ours(fallback_with_host_draw, "cpu", fallback=True)(1)


CACHED = '''
import numpy as np
from numba import prange
import numba_mlir_gpu

@numba_mlir_gpu.njit(target="cpu", cache=True)
def seeded(seed, n):
    np.random.seed(seed)
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.random.random()
    return out, np.random.random()
'''

CACHED_RUN = '''
import json
import cached_random
from numba_mlir_gpu.compiler import jit
out, after = cached_random.seeded(3, 5)
print(json.dumps({"pipeline_runs": jit.PIPELINE_RUNS, "out": out.tolist(), "after": after}))
'''


def test_code_loaded_from_the_cache_finds_the_generator(tmp_path):
    from .test_cache import run_in_new_process
    (tmp_path / "cached_random.py").write_text(CACHED)
    first = run_in_new_process(tmp_path, CACHED_RUN)
    second = run_in_new_process(tmp_path, CACHED_RUN)
    assert first["pipeline_runs"] >= 1 and second["pipeline_runs"] == 0
    expected = [_unit(philox((k, 0, 0, 0), (3, 0))) for k in range(6)]
    assert second["out"] == first["out"] == expected[:5]
    assert second["after"] == first["after"] == expected[5]
