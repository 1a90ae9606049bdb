"""The kernel API (numba_mlir_gpu.kernel): each kernel launched through the
`launch_with` fixture on every target, results compared with NumPy's.
GPU runs are marked `gpu`; compile-only PTX checks run anywhere."""
from __future__ import annotations

import numpy as np
import pytest

from numba_mlir_gpu.kernel import (LOCAL_MEM_FENCE, WARP_SIZE, atomic, barrier, get_global_id,
                                   get_global_size, get_group_id, get_local_id, get_local_size,
                                   get_num_groups, group, kernel, kernel_sim, local, mem_fence,
                                   private)
from numba_mlir_gpu.kernel.dispatcher import KernelLaunchError
from numba_mlir_gpu.lowering.errors import UnsupportedConstructError

from . import kernel_programs

TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]
TILE = 16


@pytest.fixture(params=TARGETS + ["sim"])
def launch_with(request):
    """`launch_with(pyfunc)`: the kernel to launch on this target, or in the
    simulator, which must give the same results."""
    def make(pyfunc):
        if request.param == "sim":
            return kernel_sim(pyfunc)
        return kernel(target=request.param)(pyfunc)
    make.target = request.param
    return make


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(kernel_programs.CASES))
def test_the_simulators_kernel_programs(name, target):
    """The kernels of tests/kernel_programs.py, which test_kernel_sim.py runs
    in the simulator, compiled."""
    kernel_programs.check(kernel_programs.CASES[name], kernel(target=target))


def _rng(seed=0):
    return np.random.default_rng(seed)


# -- ids and sizes -------------------------------------------------------------------

def ids_1d(out):
    i = get_global_id(0)
    out[i, 0] = i
    out[i, 1] = get_local_id(0)
    out[i, 2] = get_group_id(0)
    out[i, 3] = get_global_size(0)
    out[i, 4] = get_local_size(0)
    out[i, 5] = get_num_groups(0)


@pytest.mark.parametrize("n, local_size", [(256, 64), (100, 32), (37, 37), (1000, 128)])
def test_ids_1d(launch_with, n, local_size):
    out = np.full((n, 6), -1, np.int64)
    launch_with(ids_1d)[n, local_size](out)
    i = np.arange(n)
    groups = -(-n // local_size)
    expected = np.stack([i, i % local_size, i // local_size, np.full(n, n),
                         np.full(n, local_size), np.full(n, groups)], axis=1)
    np.testing.assert_array_equal(out, expected)


def ids_2d(out):
    i = get_global_id(0)
    j = get_global_id(1)
    out[i, j, 0] = get_local_id(0) + 100 * get_local_id(1)
    out[i, j, 1] = get_group_id(0) + 100 * get_group_id(1)
    out[i, j, 2] = get_global_size(0) + 100 * get_global_size(1)


def test_ids_2d_with_a_global_size_not_a_multiple_of_the_local_size(launch_with):
    n, m = 19, 13
    out = np.full((n, m, 3), -1, np.int64)
    launch_with(ids_2d)[(n, m), (8, 4)](out)
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], i % 8 + 100 * (j % 4))
    np.testing.assert_array_equal(out[..., 1], i // 8 + 100 * (j // 4))
    np.testing.assert_array_equal(out[..., 2], np.full((n, m), n + 100 * m))


def ids_3d(out):
    i, j, k = get_global_id(0), get_global_id(1), get_global_id(2)
    out[i, j, k] = (get_local_id(0) + 10 * get_local_id(1) + 100 * get_local_id(2)
                    + 1000 * (get_group_id(0) + 10 * get_group_id(1) + 100 * get_group_id(2)))


def test_ids_3d(launch_with):
    shape, local_size = (6, 5, 7), (2, 4, 3)
    out = np.full(shape, -1, np.int64)
    launch_with(ids_3d)[shape, local_size](out)
    i, j, k = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    lx, ly, lz = local_size
    expected = (i % lx + 10 * (j % ly) + 100 * (k % lz)
                + 1000 * (i // lx + 10 * (j // ly) + 100 * (k // lz)))
    np.testing.assert_array_equal(out, expected)


def axpy(a, x, y, out):
    i = get_global_id(0)
    out[i] = a * x[i] + y[i]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_omitted_local_size_and_dtypes(launch_with, dtype):
    n = 1001
    x = np.arange(n).astype(dtype)
    y = (np.arange(n) % 7).astype(dtype)
    out = np.zeros(n, dtype)
    launch_with(axpy)[n](dtype(3), x, y, out)
    np.testing.assert_array_equal(out, dtype(3) * x + y)


def test_two_dimensional_global_size_with_the_local_size_left_to_us(launch_with):
    out = np.full((20, 30, 3), -1, np.int64)
    launch_with(ids_2d)[(20, 30), None](out)
    assert (out[..., 2] == 20 + 100 * 30).all()


def test_launch_errors():
    k = kernel(target="cpu")(axpy)
    with pytest.raises(KernelLaunchError):
        k[(4, 4), (2,)](1.0, np.ones(4), np.ones(4), np.ones(4))
    with pytest.raises(KernelLaunchError):
        k[4, 0](1.0, np.ones(4), np.ones(4), np.ones(4))
    with pytest.raises(TypeError):
        k(1.0, np.ones(4), np.ones(4), np.ones(4))


# -- local arrays and barriers --------------------------------------------------------

def transpose(a, out):
    tile = local.array((TILE, TILE + 1), np.float32)
    tx, ty = get_local_id(0), get_local_id(1)
    bx, by = get_group_id(0) * TILE, get_group_id(1) * TILE
    n, m = a.shape
    if by + ty < n and bx + tx < m:
        tile[ty, tx] = a[by + ty, bx + tx]
    barrier(LOCAL_MEM_FENCE)
    if bx + ty < m and by + tx < n:
        out[bx + ty, by + tx] = tile[tx, ty]


def test_tiled_transpose_through_a_local_array(launch_with):
    n, m = 70, 45              # not multiples of the tile
    a = _rng().random((n, m)).astype(np.float32)
    out = np.zeros((m, n), np.float32)
    groups = (-(-m // TILE), -(-n // TILE))
    launch_with(transpose)[(groups[0] * TILE, groups[1] * TILE), (TILE, TILE)](a, out)
    np.testing.assert_array_equal(out, a.T)


def block_sum(x, out):
    i = get_global_id(0)
    lid = get_local_id(0)
    tmp = local.array(256, np.float64)
    tmp[lid] = x[i]
    barrier()
    s = get_local_size(0) // 2
    while s > 0:
        if lid < s:
            tmp[lid] += tmp[lid + s]
        barrier()
        s //= 2
    if lid == 0:
        out[get_group_id(0)] = tmp[0]


@pytest.mark.parametrize("local_size", [256, 64])
def test_block_reduction_with_barriers_in_a_tree_loop(launch_with, local_size):
    n = 4096
    x = _rng(1).integers(0, 100, n).astype(np.float64)
    out = np.zeros(n // local_size)
    launch_with(block_sum)[n, local_size](x, out)
    np.testing.assert_array_equal(out, x.reshape(-1, local_size).sum(axis=1))


def test_barrier_kernel_with_a_partial_last_group(launch_with):
    """1000 = 3 x 256 + 232: the last group's barriers count its 232 items
    (on the GPU, a launch of its own)."""
    x = _rng(2).integers(0, 100, 1000).astype(np.float64)
    out = np.zeros(4)
    launch_with(kernel_programs.block_sum)[1000, 256](x, out)
    np.testing.assert_array_equal(out, np.add.reduceat(x, [0, 256, 512, 768]))


def test_barrier_kernel_with_omitted_local_size(launch_with):
    n = 256 * 3 + 5
    x = np.arange(n, dtype=np.float64)
    out = np.zeros(4)
    launch_with(kernel_programs.block_sum)[n](x, out)      # local size chosen: 256
    np.testing.assert_array_equal(out, np.add.reduceat(x, [0, 256, 512, 768]))


def group_sizes(out):
    """Per item: its group's item count (a reduction), the uniform local size
    and its flattened local id."""
    i = get_global_id(0)
    j = get_global_id(1)
    n = group.reduce_add(1)
    barrier()
    out[0, j, i] = n
    out[1, j, i] = get_local_size(0) * get_local_size(1)
    out[2, j, i] = group.broadcast(get_local_id(0) + 100 * get_local_id(1), 1)


def group_count_3d(out):
    n = group.reduce_add(1)
    out[get_global_id(2), get_global_id(1), get_global_id(0)] = n


def test_partial_groups_in_three_dims(launch_with):
    """(5, 3, 3) in groups of (4, 2, 2): all 2^3 regions (whole or partial
    along each dim) have items; each counts its own."""
    out = np.zeros((3, 3, 5), np.int64)
    launch_with(group_count_3d)[(5, 3, 3), (4, 2, 2)](out)
    e0 = np.where(np.arange(5) < 4, 4, 1)[None, None, :]
    e1 = np.where(np.arange(3) < 2, 2, 1)[None, :, None]
    e2 = np.where(np.arange(3) < 2, 2, 1)[:, None, None]
    np.testing.assert_array_equal(out, e0 * e1 * e2)


def test_partial_groups_are_launches_of_one_kernel():
    """Compile-only: a kernel with collectives is one outlined kernel (one
    binary, with its barrier), launched from a host loop over the regions."""
    k = kernel(target="compile-only")(group_count_3d)
    out = np.zeros((3, 3, 5), np.int64)
    assert ["barrier.sync" in ptx for ptx in k.inspect_ptx(out)] == [True]
    host = k.inspect_mlir(out, stage="lowered")
    assert host.count("gpu.launch_func") == 1 and host.count("gpu.binary @") == 1


def test_partial_groups_in_two_dims_count_only_their_items(launch_with):
    """(9, 6) in groups of (8, 4): groups of 8x4, 1x4, 8x2 and 1x2 items;
    get_local_size stays (8, 4); flattened id 1 is (1, 0), or (0, 1) in a
    group one item wide."""
    out = np.zeros((3, 6, 9), np.int64)
    launch_with(group_sizes)[(9, 6), (8, 4)](out)
    e0 = np.where(np.arange(9) < 8, 8, 1)[None, :]
    e1 = np.where(np.arange(6) < 4, 4, 2)[:, None]
    np.testing.assert_array_equal(out[0], e0 * e1)
    assert (out[1] == 32).all()
    np.testing.assert_array_equal(out[2], np.where(e0 == 1, 100, 1) + 0 * e1)


def private_reverse(x, out):
    i = get_global_id(0)
    p = private.array(4, np.int32)
    for k in range(4):
        p[k] = x[i] * (k + 1)
    total = 0
    for k in range(4):
        total += p[3 - k] * k
    out[i] = total


def test_private_arrays(launch_with):
    n = 300
    x = np.arange(n, dtype=np.int32)
    out = np.zeros(n, np.int32)
    launch_with(private_reverse)[n, 64](x, out)
    expected = sum(x * (4 - k) * k for k in range(4))
    np.testing.assert_array_equal(out, expected)


# -- atomics ----------------------------------------------------------------------------

def histogram(x, bins):
    i = get_global_id(0)
    atomic.add(bins, x[i], 1)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_histogram_with_atomic_add(launch_with, dtype):
    x = _rng(2).integers(0, 64, 10_000)
    bins = np.zeros(64, dtype)
    launch_with(histogram)[x.size, 128](x, bins)
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=64))


def local_histogram(x, bins):
    i = get_global_id(0)
    lid = get_local_id(0)
    local_bins = local.array(64, np.int32)
    local_bins[lid % 64] = 0
    barrier()
    if i < x.shape[0]:
        atomic.add(local_bins, x[i], 1)
    barrier()
    if lid < 64:
        atomic.add(bins, lid, local_bins[lid])


def test_histogram_with_a_local_histogram_per_group(launch_with):
    x = _rng(3).integers(0, 64, 5000)
    bins = np.zeros(64, np.int32)
    launch_with(local_histogram)[5120, 128](x, bins)
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=64))


def atomic_ops(ints, floats, olds):
    i = get_global_id(0)
    olds[i, 0] = atomic.add(ints, 0, 2)
    olds[i, 1] = atomic.sub(ints, 1, 3)
    atomic.min(ints, 2, i)
    atomic.max(ints, 3, i)
    atomic.add(floats, 0, 0.5)
    atomic.min(floats, 1, i * 0.25)
    atomic.max(floats, 2, i * 0.25)
    atomic.sub(floats, 3, 1.0)


@pytest.mark.parametrize("int_type, float_type", [(np.int32, np.float32),
                                                  (np.int64, np.float64)])
def test_atomic_operations_and_their_old_values(launch_with, int_type, float_type):
    n = 200
    ints = np.array([0, 1000, n, -1], int_type)
    floats = np.array([0.0, 1e9, -1.0, 0.0], float_type)
    olds = np.zeros((n, 2), np.int64)
    launch_with(atomic_ops)[n, 32](ints, floats, olds)
    np.testing.assert_array_equal(ints, [2 * n, 1000 - 3 * n, 0, n - 1])
    np.testing.assert_array_equal(floats, [0.5 * n, 0.0, (n - 1) * 0.25, -n])
    # each add/sub saw a distinct old value: together exactly the sequence
    np.testing.assert_array_equal(np.sort(olds[:, 0]), 2 * np.arange(n))
    np.testing.assert_array_equal(np.sort(olds[:, 1]), np.sort(1000 - 3 * np.arange(n)))


def exchange_and_cas(slot, ticket, olds):
    i = get_global_id(0)
    olds[i, 0] = atomic.exchange(slot, 0, i + 1)
    # a ticket lock: each item claims the next ticket with compare-and-swap
    claimed = False
    while not claimed:
        seen = ticket[0]
        if atomic.cas(ticket, 0, seen, seen + 1) == seen:
            olds[i, 1] = seen
            claimed = True


def test_exchange_and_compare_and_swap(launch_with):
    n = 128
    slot = np.zeros(1, np.int64)
    ticket = np.zeros(1, np.int32)
    olds = np.full((n, 2), -1, np.int64)
    launch_with(exchange_and_cas)[n, 32](slot, ticket, olds)
    # the exchanges form a chain: every old value but one is a new value
    values = set(olds[:, 0]) | {slot[0]}
    assert values == set(range(n + 1))
    np.testing.assert_array_equal(np.sort(olds[:, 1]), np.arange(n))
    assert ticket[0] == n


def test_atomic_exch_alias(launch_with):
    def k(a):
        atomic.exch(a, get_global_id(0), 7.0)
    a = np.zeros(10, np.float32)
    launch_with(k)[10](a)
    np.testing.assert_array_equal(a, 7.0)


# -- group operations and shuffles -------------------------------------------------------

def group_ops(x, out):
    i = get_global_id(0)
    v = x[i]
    out[i, 0] = group.reduce_add(v)
    out[i, 1] = group.reduce_min(v)
    out[i, 2] = group.reduce_max(v)
    out[i, 3] = group.broadcast(v, 3)


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_group_reductions_and_broadcast(launch_with, dtype):
    n, local_size = 256, 64
    x = _rng(4).integers(-1000, 1000, n).astype(dtype)
    out = np.zeros((n, 4), dtype)
    launch_with(group_ops)[n, local_size](x, out)
    g = x.reshape(-1, local_size)
    for col, expected in enumerate([g.sum(1), g.min(1), g.max(1), g[:, 3]]):
        np.testing.assert_array_equal(out[:, col], np.repeat(expected, local_size))


def shuffles(x, out):
    i = get_global_id(0)
    v = x[i]
    out[i, 0] = group.shuffle_idx(v, 5)
    out[i, 1] = group.shuffle_down(v, 3)
    out[i, 2] = group.shuffle_up(v, 2)
    out[i, 3] = group.shuffle_xor(v, 1)


def test_shuffles(launch_with):
    n = 128
    x = np.arange(n, dtype=np.float32) * 3
    out = np.zeros((n, 4), np.float32)
    launch_with(shuffles)[n, 64](x, out)
    lane = np.arange(n) % WARP_SIZE
    base = np.arange(n) - lane
    np.testing.assert_array_equal(out[:, 0], x[base + 5])
    down = np.where(lane + 3 < WARP_SIZE, np.arange(n) + 3, np.arange(n))
    np.testing.assert_array_equal(out[:, 1], x[down])
    up = np.where(lane >= 2, np.arange(n) - 2, np.arange(n))
    np.testing.assert_array_equal(out[:, 2], x[up])
    np.testing.assert_array_equal(out[:, 3], x[base + (lane ^ 1)])


def warp_scan(x, out):
    """Inclusive scan of each group: shuffles within warps, the warps'
    totals through a local array."""
    i = get_global_id(0)
    lid = get_local_id(0)
    lane = lid % WARP_SIZE
    warp = lid // WARP_SIZE
    totals = local.array(32, np.int64)
    v = x[i]
    d = 1
    while d < WARP_SIZE:
        other = group.shuffle_up(v, d)
        if lane >= d:
            v += other
        d *= 2
    if lane == WARP_SIZE - 1:
        totals[warp] = v
    barrier()
    offset = 0
    for w in range(warp):
        offset += totals[w]
    out[i] = v + offset


def test_inclusive_scan_with_shuffles_and_a_local_array(launch_with):
    n, local_size = 512, 128
    x = _rng(5).integers(0, 10, n).astype(np.int64)
    out = np.zeros(n, np.int64)
    launch_with(warp_scan)[n, local_size](x, out)
    expected = np.cumsum(x.reshape(-1, local_size), axis=1).ravel()
    np.testing.assert_array_equal(out, expected)


# -- device arrays ------------------------------------------------------------------------

@pytest.mark.gpu
def test_cupy_arrays_are_used_in_place():
    cupy = pytest.importorskip("cupy")
    n = 10_000
    x = cupy.arange(n, dtype=cupy.float32)
    y = cupy.ones(n, dtype=cupy.float32)
    out = cupy.zeros(n, dtype=cupy.float32)
    kernel(target="gpu")(axpy)[n, 256](np.float32(2), x, y, out)
    np.testing.assert_array_equal(cupy.asnumpy(out), 2 * np.arange(n, dtype=np.float32) + 1)
    bins = cupy.zeros(64, cupy.int32)
    data = cupy.asarray(_rng(6).integers(0, 64, 5000))
    kernel(target="gpu")(local_histogram)[5120, 128](data, bins)
    np.testing.assert_array_equal(cupy.asnumpy(bins),
                                  np.bincount(cupy.asnumpy(data), minlength=64))


# -- GPU code without a GPU ---------------------------------------------------------------

def _ptx(pyfunc, *args) -> str:
    return "\n".join(kernel(target="compile-only")(pyfunc).inspect_ptx(*args))


def test_compile_only_ptx_of_barriers_shared_memory_atomics_and_shuffles():
    x = np.zeros(64, np.int64)
    ptx = _ptx(local_histogram, x, np.zeros(64, np.int32))
    assert "barrier.sync" in ptx or "bar.sync" in ptx
    assert ".shared" in ptx
    assert "atom." in ptx
    ptx = _ptx(warp_scan, x, x)
    assert "shfl.sync" in ptx
    ptx = _ptx(transpose, np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32))
    assert ".shared" in ptx and ("barrier.sync" in ptx or "bar.sync" in ptx)
    assert "atom." in _ptx(atomic_ops, np.zeros(4, np.int32), np.zeros(4, np.float32),
                           np.zeros((4, 2), np.int64))
    assert "atom." in _ptx(exchange_and_cas, np.zeros(1, np.int64), np.zeros(1, np.int32),
                           np.zeros((4, 2), np.int64))


def test_compile_only_mlir_uses_the_gpu_dialect():
    k = kernel(target="compile-only")(block_sum)
    text = k.inspect_mlir(np.zeros(4), np.zeros(4))
    assert "gpu.launch" in text and "gpu.dynamic_shared_memory" in text


# -- compile-time errors (part 3) -----------------------------------------------------------

def barrier_under_id_condition(out):
    i = get_local_id(0)
    if i < 4:
        barrier()
    out[i] = i


def barrier_in_id_dependent_loop(out):
    i = get_global_id(0)
    for k in range(i):
        barrier()
    out[i] = i


def reduce_under_id_condition(out):
    i = get_global_id(0)
    if i % 2 == 0:
        out[i] = group.reduce_add(i)


def local_array_of_runtime_size(out):
    tmp = local.array(out.shape[0], np.float32)
    tmp[0] = 1
    out[0] = tmp[0]


def private_array_of_runtime_size(out):
    n = out.shape[0]
    tmp = private.array((n, 2), np.float32)
    out[0] = tmp[0, 0]


def atomic_on_int16(out):
    atomic.add(out, 0, 1)


@pytest.mark.parametrize("target", ["cpu", "compile-only"])
@pytest.mark.parametrize("pyfunc, dtype, message", [
    (barrier_under_id_condition, np.int64, r"barrier\(\) under a condition"),
    (barrier_in_id_dependent_loop, np.int64, r"barrier\(\) under a condition or in a loop"),
    (reduce_under_id_condition, np.int64, r"group.reduce_add\(\) under a condition"),
    (local_array_of_runtime_size, np.float32, r"local.array\(\) with a shape that is not"),
    (private_array_of_runtime_size, np.float32, r"private.array\(\) with a shape that is not"),
    (atomic_on_int16, np.int16, r"atomic.add\(\) on an array of int16"),
])
def test_compile_time_errors_name_the_construct_and_the_line(target, pyfunc, dtype, message):
    k = kernel(target=target)(pyfunc)
    with pytest.raises(UnsupportedConstructError, match=message) as info:
        k.compile(np.zeros(8, dtype))
    text = str(info.value)
    assert "test_kernel_api.py" in text
    assert pyfunc.__name__ in text


def test_uniform_loops_with_barriers_are_accepted():
    k = kernel(target="compile-only")(block_sum)
    k.compile(np.zeros(4), np.zeros(4))      # no error: the loop's trip count is uniform


# -- more shapes of kernels ---------------------------------------------------------------

def smooth_in_group(x, out):
    """Three rounds of neighbour averaging inside each group, a barrier
    after each read and each write (a barrier in a uniform `for` loop)."""
    i = get_global_id(0)
    lid = get_local_id(0)
    n = get_local_size(0)
    buf = local.array(64, np.float64)
    buf[lid] = x[i]
    barrier()
    for _ in range(3):
        left = buf[lid - 1] if lid > 0 else buf[lid]
        right = buf[lid + 1] if lid + 1 < n else buf[lid]
        value = (left + buf[lid] + right) / 3.0
        barrier()
        buf[lid] = value
        barrier()
    out[i] = buf[lid]


def test_barriers_in_a_uniform_for_loop(launch_with):
    n, local_size = 256, 64
    x = _rng(7).random(n)
    out = np.zeros(n)
    launch_with(smooth_in_group)[n, local_size](x, out)
    expected = x.reshape(-1, local_size).copy()
    for _ in range(3):
        padded = np.concatenate([expected[:, :1], expected, expected[:, -1:]], axis=1)
        expected = (padded[:, :-2] + padded[:, 1:-1] + padded[:, 2:]) / 3.0
    np.testing.assert_allclose(out, expected.ravel(), rtol=1e-12)


def group_ops_2d(x, out):
    i, j = get_global_id(0), get_global_id(1)
    flat = get_local_id(0) + get_local_size(0) * get_local_id(1)
    out[i, j, 0] = group.reduce_add(x[i, j])
    out[i, j, 1] = group.broadcast(x[i, j], 5)
    out[i, j, 2] = flat


def test_group_operations_in_two_dimensional_groups(launch_with):
    shape, local_size = (16, 12), (8, 4)
    x = _rng(8).integers(0, 100, shape).astype(np.int64)
    out = np.zeros(shape + (3,), np.int64)
    launch_with(group_ops_2d)[shape, local_size](x, out)
    for gi in range(2):
        for gj in range(3):
            block = x[gi * 8:(gi + 1) * 8, gj * 4:(gj + 1) * 4]
            got = out[gi * 8:(gi + 1) * 8, gj * 4:(gj + 1) * 4]
            assert (got[..., 0] == block.sum()).all()
            # flattened local id 5: local id (5, 0) (dimension 0 fastest)
            assert (got[..., 1] == block[5, 0]).all()


def runtime_dim(dims, out):
    i = get_global_id(0)
    j = get_global_id(1)
    d = dims[0]
    out[i, j] = get_global_id(d) + 1000 * get_local_size(d)


def test_ids_of_a_dimension_known_at_run_time(launch_with):
    out = np.zeros((8, 6), np.int64)
    launch_with(runtime_dim)[(8, 6), (4, 3)](np.array([1]), out)
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(6) + 3000, (8, 6)))


@pytest.fixture
def helper():
    from numba_mlir_gpu import njit

    @njit(target="cpu")        # typed for the call; the kernel compiles its own copy
    def square(v):
        return v * v
    return square


def test_kernels_call_jitted_functions(launch_with, helper):
    def k(x, out):
        i = get_global_id(0)
        out[i] = helper(x[i]) + 1.0
    x = np.arange(50, dtype=np.float32)
    out = np.zeros_like(x)
    launch_with(k)[50, 16](x, out)
    np.testing.assert_array_equal(out, x * x + 1)


def view_across_barrier(a, out):
    i = get_global_id(0)
    row = a[i]
    barrier()
    out[i] = row[0]


def test_cpu_refuses_a_view_live_across_a_barrier():
    k = kernel(target="cpu")(view_across_barrier)
    with pytest.raises(UnsupportedConstructError, match="lives across a barrier"):
        k.compile(np.zeros((4, 2)), np.zeros(4))


def test_view_across_a_barrier_compiles_for_the_gpu():
    k = kernel(target="compile-only")(view_across_barrier)
    assert k.inspect_ptx(np.zeros((4, 2)), np.zeros(4))


def test_fp64_truncate_is_passed_to_the_gpu_build():
    def k(x, out):
        i = get_global_id(0)
        out[i] = x[i] * 1.5 + 2.0
    args = (np.zeros(4), np.zeros(4))
    native = "\n".join(kernel(target="compile-only")(k).inspect_ptx(*args))
    truncated = "\n".join(kernel(target="compile-only", fp64="truncate")(k).inspect_ptx(*args))
    assert ".f64" in native
    assert "fma.rn.f64" not in truncated and "mul.rn.f64" not in truncated


def fenced(x, out):
    i = get_global_id(0)
    out[i] = x[i]
    mem_fence(LOCAL_MEM_FENCE)
    mem_fence()
    out[i] += 1


def test_memory_fences(launch_with):
    x = np.arange(40.0)
    out = np.zeros(40)
    launch_with(fenced)[40, 8](x, out)
    np.testing.assert_array_equal(out, x + 1)


def test_memory_fences_in_ptx():
    ptx = _ptx(fenced, np.zeros(4), np.zeros(4))
    assert "fence.acq_rel.cta" in ptx and "fence.acq_rel.sys" in ptx


def shuffle_under_id_condition(out):
    i = get_global_id(0)
    if i < 3:
        out[i] = group.shuffle_down(i, 1)


@pytest.mark.parametrize("target", ["cpu", "compile-only"])
def test_shuffle_under_an_id_condition_is_refused(target):
    k = kernel(target=target)(shuffle_under_id_condition)
    with pytest.raises(UnsupportedConstructError, match=r"group.shuffle_down\(\) under"):
        k.compile(np.zeros(8, np.int64))


_F32, _F64, _I32, _I64 = (np.zeros(64, t) for t in (np.float32, np.float64, np.int32, np.int64))


@pytest.mark.parametrize("pyfunc, args", [
    (ids_1d, (np.zeros((8, 6), np.int64),)),
    (ids_2d, (np.zeros((8, 8, 3), np.int64),)),
    (ids_3d, (np.zeros((4, 4, 4), np.int64),)),
    (axpy, (np.float32(2), _F32, _F32, _F32)),
    (transpose, (np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32))),
    (block_sum, (_F64, _F64)),
    (private_reverse, (_I32, _I32)),
    (histogram, (_I64, _I32)),
    (local_histogram, (_I64, _I32)),
    (atomic_ops, (np.zeros(4, np.int64), np.zeros(4, np.float64), np.zeros((4, 2), np.int64))),
    (exchange_and_cas, (np.zeros(1, np.int64), np.zeros(1, np.int32),
                        np.zeros((4, 2), np.int64))),
    (group_ops, (_F64, np.zeros((64, 4)))),
    (group_ops, (_I32, np.zeros((64, 4), np.int32))),
    (shuffles, (_F32, np.zeros((64, 4), np.float32))),
    (warp_scan, (_I64, _I64)),
    (smooth_in_group, (_F64, _F64)),
    (group_ops_2d, (np.zeros((4, 4), np.int64), np.zeros((4, 4, 3), np.int64))),
    (runtime_dim, (np.zeros(1, np.int64), np.zeros((4, 4), np.int64))),
    (view_across_barrier, (np.zeros((4, 2)), _F64)),
])
def test_every_kernel_compiles_for_the_gpu(pyfunc, args):
    """What the GPU runs of these tests compile to, checked here without a GPU."""
    assert ".entry" in "\n".join(kernel(target="compile-only")(pyfunc).inspect_ptx(*args))


def private_across_barriers(x, out):
    i = get_global_id(0)
    lid = get_local_id(0)
    p = private.array(3, np.int64)
    shared = local.array(16, np.int64)
    for j in range(3):
        p[j] = x[i] * (j + 1)
    shared[lid] = p[0]
    barrier()
    for j in range(3):
        p[j] += shared[15 - lid]
    barrier()
    out[i] = p[0] + p[1] + p[2]


def test_private_arrays_live_across_barriers(launch_with):
    x = np.arange(64, dtype=np.int64)
    out = np.zeros(64, np.int64)
    launch_with(private_across_barriers)[64, 16](x, out)
    g = x.reshape(-1, 16)
    np.testing.assert_array_equal(out, (6 * g + 3 * g[:, ::-1]).ravel())
