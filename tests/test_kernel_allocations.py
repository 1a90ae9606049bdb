"""Arrays made inside prange bodies on the GPU (issue 21).

Two ways (docs/design.md, "Per-iteration arrays in kernels"):

* sizes the host can compute before the loop (`np.empty(n)`, `x[i] - c`,
  `np.sort(row)`, 2-D temporaries): scratch slots allocated before the
  kernel, one per block of a chunk kernel (targets/gpu/scratch.py), so the
  memory is bounded by the chunks in flight, not the iterations;
* anything else (a size from the data, arrays made by a called function):
  a plain kernel whose threads allocate on the device heap (`malloc`, freed
  in the same iteration: targets/gpu/heap.py); a failed allocation raises
  MemoryError naming the line.

Values are compared with Numba's own `njit(parallel=True)` on the CPU target
(and on the GPU, marked `gpu`); the compile-only target shows which way each
loop took in its PTX.
"""
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.lowering.errors import UnsupportedConstructError

from .support import TARGETS, check
from .test_codegen import all_ptx, compile_only, entries


# -- sizes known before the loop: scratch slots ------------------------------------

def filled_and_reduced(x, k):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        t = np.empty(k)
        for j in range(k):
            t[j] = x[i] * (j + 1)
        z = np.zeros(k)
        z[: k // 2] = 1.0
        out[i] = t.sum() + (t * z).sum()
    return out


def squared_distance_to(x, c):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        out[i] = np.sum((x[i] - c) ** 2)
    return out


def sorted_row_ends(x):
    out = np.empty((x.shape[0], 3))
    for i in prange(x.shape[0]):
        s = np.sort(x[i])
        out[i, 0] = s[0]
        out[i, 1] = s[-1]
        out[i, 2] = s[s.shape[0] // 2]
    return out


def copied_rows(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        r = x[i].copy()
        r[0] = r[-1]
        out[i] = r * 2.0
    return out


def two_d_temporary(x, m):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        g = np.zeros((m, x.shape[1]))
        for a in range(m):
            g[a] = x[i] * (a + 1)
        out[i] = g.sum() - g[m - 1, 0]
    return out


def masked_in_body(x, y):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        above = x[i][x[i] > y[i]]          # at most the row: a slot of the row's size
        out[i] = above.sum() + above.shape[0]
    return out


def nested_pranges(x):
    out = np.empty((x.shape[0], x.shape[1]))
    for i in prange(x.shape[0]):
        for j in prange(x.shape[1]):
            t = np.zeros(4)
            t[j % 4] = x[i, j]
            out[i, j] = t.sum() + t[0]
    return out


HOISTED = [filled_and_reduced, squared_distance_to, sorted_row_ends, copied_rows,
           two_d_temporary, masked_in_body, nested_pranges]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 37, 1000])       # not multiples of any block size
def test_hoisted_temporaries(n, target):
    rng = np.random.default_rng(n + 21)
    x = rng.random((n, 37))
    check(filled_and_reduced, x[:, 0].copy(), 13, target=target, rtol=1e-12,
          parallel_reference=True)
    check(squared_distance_to, x, rng.random(37), target=target, rtol=1e-12,
          parallel_reference=True)
    check(sorted_row_ends, x, target=target, parallel_reference=True)
    check(copied_rows, x, target=target, parallel_reference=True)
    check(two_d_temporary, x, 3, target=target, rtol=1e-12, parallel_reference=True)
    check(masked_in_body, x, rng.random(n), target=target, rtol=1e-12, parallel_reference=True)
    check(nested_pranges, x, target=target, parallel_reference=True)


def test_hoisted_temporaries_are_scratch_slots_in_chunk_kernels():
    x = np.ones((4, 5))
    for fn, args in [(filled_and_reduced, (np.ones(4), 3)),
                     (squared_distance_to, (x, np.ones(5))),
                     (sorted_row_ends, (x,)),
                     (copied_rows, (x,)),
                     (two_d_temporary, (x, 2)),
                     (masked_in_body, (x, np.ones(4))),
                     (nested_pranges, (x,))]:
        ptx = all_ptx(compile_only(fn, *args))
        assert entries(ptx), fn.__name__
        assert "malloc" not in ptx, fn.__name__


def many_small_temporaries(x):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        t = np.full(8, x[i])
        t[0] += 1.0
        out[i] = t.sum()
    return out


def test_many_iterations_with_a_small_temporary():
    x = np.arange(10 ** 6, dtype=np.float64) % 97
    check(many_small_temporaries, x, target="cpu", parallel_reference=True)
    ptx = all_ptx(compile_only(many_small_temporaries, x[:8]))
    assert "malloc" not in ptx and entries(ptx)


@pytest.mark.gpu
def test_gpu_memory_of_temporaries_is_bounded_by_the_chunks():
    """10^7 iterations, each with an 8 KiB temporary: 80 GB if each iteration
    had its own, more than the GPU holds; the scratch holds one slot per
    chunk (at most MAX_CHUNKS, within SCRATCH_BYTES)."""
    def big_temporaries(x):
        out = np.empty(x.shape[0])
        for i in prange(x.shape[0]):
            t = np.full(1024, x[i])
            t[0] = x[i]                   # made (not fused into the sum)
            out[i] = t.sum()
        return out
    x = (np.arange(10 ** 7) % 7).astype(np.float64)
    got = numba_mlir_gpu.njit(target="gpu")(big_temporaries)(x)
    np.testing.assert_array_equal(got, 1024.0 * x)


@pytest.mark.gpu
def test_gpu_many_iterations_with_a_small_temporary():
    x = np.arange(10 ** 6, dtype=np.float64) % 97
    check(many_small_temporaries, x, target="gpu", parallel_reference=True)


# -- sizes known only in the iteration, arrays of called functions: device heap ------

def sized_by_the_data(x, counts):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        t = np.empty(counts[i])
        for j in range(counts[i]):
            t[j] = x[i] * j
        out[i] = t.sum()
    return out


def nested_sized_by_the_data(x, counts):
    out = np.zeros((x.shape[0], 3))
    for i in prange(x.shape[0]):
        for j in prange(3):
            t = np.ones(counts[i] + j + 1)
            t[0] = x[i]
            out[i, j] = t.sum() * x[i]
    return out


@numba.njit
def _scaled_sum(row):
    t = np.empty(row.shape[0])
    for j in range(row.shape[0]):
        t[j] = row[j] * 2.0
    return t.sum()


def calls_an_allocating_function(x):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        out[i] = _scaled_sum(x[i])
    return out


def outer_products(a, b):        # pyts' GASF: np.outer is Numba's implementation
    out = np.empty((a.shape[0], a.shape[1], a.shape[1]))
    for i in prange(a.shape[0]):
        out[i] = np.outer(a[i], a[i]) - np.outer(b[i], b[i])
    return out


def digitized_rows(x, bins):     # pyts' discretizers: np.searchsorted
    out = np.empty(x.shape)
    for i in prange(x.shape[0]):
        out[i] = np.searchsorted(bins, x[i], side="left")
    return out


@numba.njit
def _bound(x, x_max, y):
    # pyts' lower bound helper: masks in a called function
    return np.sum(np.square(x[x > x_max] - x_max)) + np.sum(y[y < x_max])


def pairwise_bounds(x, y):
    out = np.empty((x.shape[0], y.shape[0]))
    for i in prange(x.shape[0]):
        for j in prange(y.shape[0]):
            out[i, j] = _bound(x[i], 0.5, y[j])
    return out


def reduction_of_data_sized(x, counts):
    s = 0.0
    for i in prange(x.shape[0]):
        t = np.full(counts[i] + 1, x[i])
        t[0] = 0.0
        s += t.sum()
    return s


def order_statistics_of_rows(x):
    """np.median/percentile/quantile of each row: Numba's implementations copy
    the row to partition it (issue 15: refused in GPU prange bodies before)."""
    out = np.empty((x.shape[0], 3))
    for i in prange(x.shape[0]):
        out[i, 0] = np.median(x[i])
        out[i, 1] = np.percentile(x[i], 30.0)
        out[i, 2] = np.quantile(x[i], 0.7)
    return out


ON_THE_HEAP = [sized_by_the_data, nested_sized_by_the_data,
               calls_an_allocating_function, outer_products, digitized_rows, pairwise_bounds,
               reduction_of_data_sized, order_statistics_of_rows]


def _heap_cases(n, rng):
    x = rng.random((n, 11))
    counts = rng.integers(0, 9, n)
    return [(sized_by_the_data, (x[:, 0].copy(), counts)),
            (nested_sized_by_the_data, (x[:, 0].copy(), counts)),
            (calls_an_allocating_function, (x,)),
            (outer_products, (x, rng.random((n, 11)))),
            (digitized_rows, (x, np.linspace(0.1, 0.9, 5))),
            (pairwise_bounds, (x, rng.random((5, 11)))),
            (reduction_of_data_sized, (x[:, 0].copy(), counts)),
            (order_statistics_of_rows, (x,))]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [0, 1, 300])
def test_arrays_on_the_device_heap(n, target):
    for fn, args in _heap_cases(n, np.random.default_rng(n + 5)):
        check(fn, *args, target=target, rtol=1e-12, parallel_reference=True)


def test_data_sized_arrays_and_called_functions_allocate_in_the_kernel():
    for fn, args in _heap_cases(4, np.random.default_rng(3)):
        ptx = all_ptx(compile_only(fn, *args))
        assert entries(ptx), fn.__name__
        assert "malloc" in ptx and "free" in ptx, fn.__name__
        assert "exit;" in ptx, fn.__name__          # a failed malloc ends the thread


def test_kernels_that_allocate_mark_their_module():
    """compiler/jit.py raises the context's heap limit for such modules only."""
    from numba_mlir_gpu import compiled_function
    from numba_mlir_gpu.targets.gpu.heap import HEAP_ATTRIBUTE
    heap = compile_only(sized_by_the_data, np.ones(3), np.ones(3, np.int64))
    assert HEAP_ATTRIBUTE in compiled_function(heap).lowered_mlir.splitlines()[0]
    scratch = compile_only(squared_distance_to, np.ones((3, 2)), np.ones(2))
    assert HEAP_ATTRIBUTE not in compiled_function(scratch).lowered_mlir.splitlines()[0]


def rolling_peak_to_peak(a, w):
    # stumpy's _rolling_isconstant: the deallocation clones np.ptp's input in
    # the kernel (a callee returns its argument or, on its error path, a
    # placeholder), which is a `malloc` no lowering of ours made
    out = np.empty(a.shape[0] - w + 1)
    for i in prange(out.shape[0]):
        out[i] = np.ptp(a[i:i + w])
    return out


def test_copies_made_by_the_deallocation_mark_their_module_too():
    from numba_mlir_gpu import compiled_function
    from numba_mlir_gpu.targets.gpu.heap import HEAP_ATTRIBUTE
    fn = compile_only(rolling_peak_to_peak, np.ones(300), 10)
    assert "malloc" in all_ptx(fn)
    assert HEAP_ATTRIBUTE in compiled_function(fn).lowered_mlir.splitlines()[0]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [1, 7, 20000])
def test_rolling_peak_to_peak(n, target):
    # 20000 windows of 100: 32 MB of copies in flight, past CUDA's 8 MiB default heap
    check(rolling_peak_to_peak, np.random.default_rng(n).random(n + 99), 100, target=target)


def test_heap_size_setting(monkeypatch):
    from numba_mlir_gpu.targets.gpu import heap
    monkeypatch.delenv(heap.HEAP_ENV, raising=False)
    assert heap.heap_bytes() == (heap.DEFAULT_HEAP_MB << 20, False)     # at least that
    monkeypatch.setenv(heap.HEAP_ENV, "64")
    assert heap.heap_bytes() == (64 << 20, True)                         # exactly that


@pytest.mark.gpu
def test_gpu_many_iterations_on_the_device_heap():
    """Each thread frees its arrays in its iteration: 10^6 iterations of
    data-sized arrays need only the threads in flight's worth of heap."""
    rng = np.random.default_rng(1)
    n = 10 ** 6
    x, counts = rng.random(n), rng.integers(0, 40, n)
    got = numba_mlir_gpu.njit(target="gpu")(reduction_of_data_sized)(x, counts)
    np.testing.assert_allclose(got, np.sum(x * counts), rtol=1e-9)
    out = numba_mlir_gpu.njit(target="gpu")(sized_by_the_data)(x, counts)
    np.testing.assert_allclose(out, x * (counts * (counts - 1) / 2), rtol=1e-12)


@pytest.mark.gpu
def test_gpu_exhausted_device_heap_is_a_memory_error():
    """A heap of 1 MiB, threads each asking for 1 MiB: MemoryError naming
    the line, and the process's GPU still works afterwards."""
    code = textwrap.dedent("""
        import numpy as np
        from numba import prange
        import numba_mlir_gpu

        def big(x, counts):
            out = np.empty(x.shape[0])
            for i in prange(x.shape[0]):
                t = np.ones(counts[i] + 1)        # THE LINE
                t[0] = 0.0
                out[i] = t.sum() * x[i]
            return out

        f = numba_mlir_gpu.njit(target="gpu")(big)
        try:
            f(np.ones(100000), np.full(100000, 1 << 14))     # 128 KiB a thread
        except MemoryError as e:
            print("MemoryError:", e)
        print("after:", f(np.ones(5), np.arange(5)).tolist())
    """)
    line = next(n for n, text in enumerate(code.splitlines(), 1) if "THE LINE" in text)
    env = dict(os.environ, NUMBA_MLIR_GPU_DEVICE_HEAP_MB="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert "MemoryError: numba-mlir-gpu: the GPU device heap is exhausted" in done.stdout, \
        done.stdout + done.stderr
    assert f"<string>:{line}" in done.stdout, done.stdout
    assert "after: [0.0, 1.0, 2.0, 3.0, 4.0]" in done.stdout, done.stdout + done.stderr


# -- what stays refused ---------------------------------------------------------------

def array_reduction_of_data_sized(x, counts):
    acc = np.zeros(3)
    for i in prange(x.shape[0]):
        t = np.ones(counts[i] + 1)
        t[0] = 2.0
        acc += t.sum() * x[i]
    return acc


def test_array_reductions_with_data_sized_temporaries_stay_refused():
    """The private copies of an array reduction need the chunk kernel, whose
    temporaries need sizes before the launch."""
    with pytest.raises(UnsupportedConstructError, match="size depends on the data"):
        numba_mlir_gpu.njit(target="compile-only")(array_reduction_of_data_sized)(
            np.ones(4), np.ones(4, np.int64))
    check(array_reduction_of_data_sized, np.arange(4.0), np.arange(4), parallel_reference=True)


def arrays_kept_in_a_list(x):
    rows = [np.empty(0) for _ in range(x.shape[0])]
    for i in prange(x.shape[0]):
        rows[i] = x[i] * 2.0              # an array handed out of its iteration
    return rows


def test_arrays_leaving_their_iteration_are_a_clear_error():
    with pytest.raises(UnsupportedConstructError):
        numba_mlir_gpu.njit(target="compile-only", fallback=False)(arrays_kept_in_a_list)(
            np.ones((3, 2)))


@pytest.mark.parametrize("fn", HOISTED + ON_THE_HEAP)
def test_cpu_target_unchanged(fn):
    """The CPU target allocates in loop bodies as before: no heap markers."""
    from numba_mlir_gpu import compiled_function
    cases = dict(_heap_cases(3, np.random.default_rng(0)))
    x = np.random.default_rng(1).random((3, 5))
    args = cases.get(fn) or {filled_and_reduced: (x[:, 0].copy(), 3),
                             squared_distance_to: (x, x[0].copy()), two_d_temporary: (x, 2),
                             masked_in_body: (x, x[:, 0].copy())}.get(fn, (x,))
    ours = numba_mlir_gpu.njit(target="cpu")(fn)
    ours(*args)
    from numba_mlir_gpu.targets.gpu.heap import HEAP_ATTRIBUTE
    assert HEAP_ATTRIBUTE not in compiled_function(ours).lowered_mlir
