"""kernel_sim: the kernel API run by Python (no GPU). The kernels of
tests/kernel_programs.py, then what only the simulator shows: errors,
deadlocks, garbage in uninitialised memory, launch checks."""
import threading
import time

import numba
import numpy as np
import pytest

from numba_mlir_gpu.kernel import (OutsideKernelError, WARP_SIZE, atomic, barrier, get_global_id,
                                   get_global_size, get_local_id, get_local_size, group,
                                   kernel_sim, local, private)
from numba_mlir_gpu.kernel.simulator import (DEFAULT_LOCAL_SIZE, KernelDeadlockError,
                                             launch_sizes)

from .kernel_programs import CASES, check


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_program(name):
    check(CASES[name], kernel_sim)


def test_decorator_forms_and_options():
    def fill(a):
        a[get_global_id(0)] = 7
    for decorate in (kernel_sim, kernel_sim(), kernel_sim(target="gpu", fastmath=True, fp64="x")):
        a = np.zeros(10)
        k = decorate(fill)
        assert k[10, 5](a) is None
        assert (a == 7).all()
        assert k.__name__ == "fill" and k.py_func is fill
    assert kernel_sim(fastmath=True)(fill).options == {"fastmath": True}


def test_launch_sizes():
    assert launch_sizes(1000) == ((1000,), (DEFAULT_LOCAL_SIZE,))
    assert launch_sizes(10) == ((10,), (10,))
    assert launch_sizes((1000, 3)) == ((1000, 3), (256, 1))
    assert launch_sizes((8, 4), [2, 2]) == ((8, 4), (2, 2))
    with pytest.raises(ValueError, match="different numbers of dimensions"):
        launch_sizes((8, 4), 2)
    with pytest.raises(ValueError, match="at most 1024"):
        launch_sizes((64, 64), (32, 64))
    with pytest.raises(ValueError, match="1 to 3"):
        launch_sizes((1, 1, 1, 1))
    with pytest.raises(ValueError, match=">= 1"):
        launch_sizes(8, 0)
    with pytest.raises(TypeError):
        launch_sizes(8.0)


def test_launch_forms():
    seen = []

    def record(a):
        if get_global_id(0) == 0 and get_global_id(1) == 0:
            seen.append((get_global_size(0), get_global_size(1), get_local_size(0),
                         get_local_size(1)))
    k = kernel_sim(record)
    k[64, 32](None)                  # a global and a local size (1-D), as numba.cuda reads it
    k[(8, 4),](None)                 # a 2-D global size, no local size
    k[(8, 4), (4, 2)](None)
    k[0, 1](None)                    # nothing to run
    assert seen == [(64, 1, 32, 1), (8, 4, 8, 1), (8, 4, 4, 2)]
    with pytest.raises(TypeError, match=r"record\[global_size, local_size\]"):
        k(None)
    k[(8, 4), None](None)            # the same, as the compiled kernel also reads it
    k[8, 4, 2](None)                 # three ints: a 3-D global size
    assert seen[3:] == [(8, 4, 8, 1)] * 3     # the 3-D launch: two items at (0, 0, k)


def test_outside_a_kernel():
    with pytest.raises(OutsideKernelError):
        get_global_id(0)
    with pytest.raises(OutsideKernelError):
        barrier()
    with pytest.raises(OutsideKernelError):
        local.array(4, np.float32)
    kernel_sim(lambda a: None)[4](None)
    with pytest.raises(OutsideKernelError):      # a launch leaves no state behind
        get_local_id(0)


def test_dimensions_beyond_the_launch_and_bad_dimensions():
    out = np.zeros(6, np.int64)

    def dims(out):
        out[:] = [get_global_id(2), get_local_id(1), get_global_size(1), get_local_size(2),
                  get_global_size(0), get_local_size(0)]
    kernel_sim(dims)[5, 5](out)
    assert out.tolist() == [0, 0, 1, 1, 5, 5]

    def bad(out):
        get_global_id(3)
    with pytest.raises(ValueError, match="0, 1 or 2"):
        kernel_sim(bad)[1](out)


def test_print_runs_in_order_of_global_id_without_barriers(capsys):
    def hello(a):
        print("item", get_global_id(0))
    kernel_sim(hello)[6, 3](None)
    assert capsys.readouterr().out.split("\n")[:6] == [f"item {i}" for i in range(6)]


def test_scalars_by_value_arrays_in_place():
    def k(a, s):
        s += 1
        a[get_global_id(0)] = s
    a = np.zeros(4)
    kernel_sim(k)[4](a, 1.5)
    assert a.tolist() == [2.5] * 4


# ------------------------------------------------------------- deadlocks

def barrier_in_branch(a):
    if get_local_id(0) < 3:
        barrier()
    a[get_global_id(0)] = 1


def test_barrier_not_reached_by_all_items_is_an_error_not_a_hang():
    a = np.zeros(128)
    before = threading.active_count()
    start = time.perf_counter()
    with pytest.raises(KernelDeadlockError) as info:
        kernel_sim(barrier_in_branch)[128, 64](a)
    assert time.perf_counter() - start < 5
    message = str(info.value)
    assert "kernel 'barrier_in_branch'" in message
    assert "barrier at " in message and "test_kernel_sim.py" in message
    assert "reached by 3 of 64 work-items of group (0,)" in message
    assert "61 returned" in message
    assert a[64:].sum() == 0          # the launch stopped at the first group
    assert threading.active_count() == before   # its threads ended


def test_items_at_different_barriers():
    def two_barriers(a):
        if get_local_id(0) % 2 == 0:
            barrier()
        else:
            barrier()
    with pytest.raises(KernelDeadlockError, match=r"reached by 5 of 10 .* 5 wait at barrier"):
        kernel_sim(two_barriers)[10](None)


def test_collective_in_a_branch():
    def reduce_some(a):
        if get_global_id(0) < 40:
            a[0] = group.reduce_add(1)
    with pytest.raises(KernelDeadlockError, match=r"group.reduce_add at .* reached by 40 of 64"):
        kernel_sim(reduce_some)[64](np.zeros(1))


def test_shuffle_by_part_of_a_warp():
    def shuffle_some(a):
        if get_local_id(0) != 33:
            a[get_global_id(0)] = group.shuffle_down(1.0, 1)
    with pytest.raises(KernelDeadlockError,
                       match=r"group.shuffle_down at .* reached by 31 of 32 work-items of warp 1 "
                             r"of group \(0,\) .*; 1 returned"):
        kernel_sim(shuffle_some)[64](np.zeros(64))


def test_partial_groups_synchronise_their_own_items():
    """As the compiled kernel: a partial group's barriers and collectives
    count its items ((9, 6) in groups of (8, 4): 32, 4, 16 and 2 items)."""
    def count(a):
        n = group.reduce_add(1)
        barrier()
        a[get_global_id(1), get_global_id(0)] = n
    a = np.zeros((6, 9), np.int64)
    kernel_sim(count)[(9, 6), (8, 4)](a)
    np.testing.assert_array_equal(a, np.where(np.arange(9) < 8, 8, 1)[None, :] *
                                  np.where(np.arange(6) < 4, 4, 2)[:, None])


# ------------------------------------------------------------ exceptions

def fails_at_five(a):
    i = get_global_id(0)
    if i == 5:
        raise ValueError("item five")
    a[i] = 1


def test_an_exception_stops_the_launch_and_names_the_item():
    a = np.zeros(100)
    with pytest.raises(ValueError, match="item five") as info:
        kernel_sim(fails_at_five)[100, 10](a)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "global id (5,), local id (5,), group (0,)" in notes
    assert "fails_at_five" in notes
    assert a[10:].sum() == 0


def test_an_exception_while_others_wait_at_a_barrier():
    def k(a):
        if get_local_id(0) == 40:
            raise KeyError("forty")
        barrier()
        a[get_global_id(0)] = 1
    before = threading.active_count()
    a = np.zeros(64)
    with pytest.raises(KeyError, match="forty"):
        kernel_sim(k)[64](a)
    assert a.sum() == 0
    assert threading.active_count() == before


# ---------------------------------------------------------------- memory

def test_uninitialised_local_and_private_arrays_hold_garbage():
    def reads_first(f, i, p):
        lid = get_local_id(0)
        lf = local.array(8, np.float32)
        li = local.array((2, 4), numba.int32)
        pf = private.array(3, numba.float64)
        f[get_global_id(0)] = lf[lid]
        i[get_global_id(0)] = li[0, lid % 4]
        p[get_global_id(0)] = pf[2]
        lf[lid] = 0.0          # after this item's read; later items read it
    f, i, p = np.zeros(8), np.zeros(8, np.int64), np.zeros(8)
    kernel_sim(reads_first)[8, 8](f, i, p)
    assert np.isnan(f[0]) and np.isnan(p).all()
    assert (i == np.iinfo(np.int32).max).all()


def test_local_arrays_are_shared_by_a_group_and_fresh_per_group():
    def k(out):
        a = local.array(1, np.int64)
        b = local.array(2, np.int64)
        if get_local_id(0) == 0:
            a[0] = 0
        barrier()
        atomic.add(a, 0, 1)
        barrier()
        b[0] = a[0]
        out[get_global_id(0)] = b[0]
    out = np.zeros(24, np.int64)
    kernel_sim(k)[24, 8](out)
    assert out.tolist() == [8] * 24


def test_local_arrays_must_agree_across_items():
    def k(a):
        local.array(4 + get_local_id(0), np.float32)
    with pytest.raises(ValueError, match="shape \\(5,\\) of float32; the same call"):
        kernel_sim(k)[4](None)


def test_atomic_exch_alias_and_full_index():
    def k(a, old):
        old[0] = atomic.exch(a, 1, 9.0)
    a, old = np.zeros(3), np.zeros(1)
    kernel_sim(k)[1](a, old)
    assert a.tolist() == [0, 9, 0] and old[0] == 0

    def partial_index(a):
        atomic.add(a, 0, 1)
    with pytest.raises(IndexError, match="full index"):
        kernel_sim(partial_index)[1](np.zeros((2, 2)))


def test_items_waiting_for_each_other_through_cas():
    """Item i waits until item i + 1 has set its flag: the reverse of the
    order items run in; a failed CAS lets the others go first."""
    def chain(flags, order, counter):
        i = get_global_id(0)
        if i + 1 < get_global_size(0):
            while atomic.cas(flags, i + 1, 1, 1) != 1:
                pass
        order[i] = atomic.add(counter, 0, 1)
        atomic.exchange(flags, i, 1)
    n = 40
    flags, order, counter = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(1, np.int64)
    kernel_sim(chain)[n, n](flags, order, counter)
    assert order.tolist() == list(range(n))[::-1]


def test_spinning_on_cas_forever_is_an_error():
    def spin(flag):
        while atomic.cas(flag, 0, 1, 1) != 1:
            pass
    with pytest.raises(KernelDeadlockError, match="atomic.cas failed"):
        kernel_sim(spin)[2](np.zeros(1, np.int64))


def test_broadcast_from_an_item_outside_the_group():
    def k(a):
        a[get_global_id(0)] = group.broadcast(1.0, 9)
    with pytest.raises(IndexError, match="not an active work-item"):
        kernel_sim(k)[16, 8](np.zeros(16))


def test_shuffle_values_of_any_type_and_warp_size():
    def k(out):
        lid = get_local_id(0)
        out[lid] = group.shuffle_xor(float(lid), WARP_SIZE - 1)
    out = np.zeros(64)
    kernel_sim(k)[64](out)
    lanes = np.arange(64) % 32
    np.testing.assert_array_equal(out, np.arange(64) - lanes + (31 - lanes))


# ------------------------------------------------------------ performance

def test_thousands_of_items_with_barriers_run_in_seconds():
    def k(a):
        for _ in range(4):
            barrier()
        a[get_global_id(0)] += 1
    a = np.zeros(4096)
    start = time.perf_counter()
    kernel_sim(k)[4096, 256](a)
    assert (a == 1).all()
    assert time.perf_counter() - start < 10


# ------------------------------------------------------------------ CuPy

def test_cupy_arrays_are_copied_to_the_host_and_back():
    cupy = pytest.importorskip("cupy")
    try:
        a = cupy.zeros(10)
    except Exception as e:   # cupy without a GPU
        pytest.skip(f"no CuPy device: {e}")

    def k(a):
        a[get_global_id(0)] = get_global_id(0)
    kernel_sim(k)[10, 4](a)
    assert cupy.asnumpy(a).tolist() == list(range(10))


def test_gpu_arrays_without_cupy_are_refused(monkeypatch):
    import sys

    class FakeDeviceArray:
        __cuda_array_interface__ = {"shape": (1,), "typestr": "<f8", "data": (0, False),
                                    "version": 3}
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(TypeError, match="through CuPy"):
        kernel_sim(lambda a: None)[1](FakeDeviceArray())


def test_a_kernel_returns_none():
    with pytest.raises(TypeError, match="a kernel returns None, not 3"):
        kernel_sim(lambda a: 3)[4](None)
