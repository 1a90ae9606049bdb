"""Where GPU arrays live and how NumPy arguments cross the bus (GPU machine
only, except the placement checks, which read the compile-only host code)."""
import collections

import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu import inspect_mlir
from numba_mlir_gpu._mlir import ir
from numba_mlir_gpu.runtime.placement import place_memory

from .support import check


def saxpy_new(a, x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = a * x[i] + y[i]
    return out


def scale_into(out, x):
    for i in prange(x.shape[0]):
        out[i] = 2 * x[i]


def sum_of_squares(x):
    tmp = np.empty_like(x)
    for i in prange(x.shape[0]):
        tmp[i] = x[i] * x[i]
    return tmp.sum()


def reversed_squares(x):
    tmp = np.empty_like(x)
    for i in prange(x.shape[0]):
        tmp[i] = x[i] * x[i]
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = tmp[x.shape[0] - 1 - i]
    return out


def host_fill(n):
    out = np.empty(n)
    for i in range(n):               # host code writes it: managed memory
        out[i] = i
    for i in prange(n):
        out[i] *= 2
    return out


def add_2d(a, b):
    out = np.empty(a.shape)
    for i in prange(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] + b[i, j]
    return out


def placed(pyfunc, *args, device_results=False) -> str:
    fn = numba_mlir_gpu.njit(target="compile-only")(pyfunc)
    fn.compile(tuple(numba_mlir_gpu.runtime.device_arrays.typeof_impl(a, None) if hasattr(a, "__cuda_array_interface__")
                     else __import__("numba").typeof(a) for a in args))
    text = inspect_mlir(fn, fn.signatures[0], stage="lowered")
    with ir.Context():
        module = ir.Module.parse(text)
        entry = next(op.operation.attributes["sym_name"].value for op in module.body.operations
                     if op.operation.name == "llvm.func")
        place_memory(module, entry, device_results)
        module.operation.verify()
        return "\n".join(line for line in str(module).splitlines() if "gpu.binary" not in line)


def test_arrays_only_kernels_touch_are_device_memory():
    host = placed(reversed_squares, np.ones(8))
    entry = host.split("llvm.func @_mlir_memref_to_llvm_alloc")[0]
    assert entry.count("call @nmg_alloc_device") == 2          # x's mirror and tmp
    assert entry.count("call @nmg_alloc_managed_on_device") == 1   # out, read by the caller
    assert "call @nmg_alloc_managed(" not in entry and "call @nmg_sync" not in entry


def test_reductions_wait_only_in_the_copy_the_host_reads():
    host = placed(sum_of_squares, np.ones(8))
    entry = host.split("llvm.func @_mlir_memref_to_llvm_alloc")[0]
    assert entry.count("gpu.launch_func") == 1
    # the partials stay in device memory and are copied out with cuMemcpy,
    # which waits for the launch (a synchronous copy on the launch's stream):
    # no separate wait, and never a read through managed memory
    assert "call @nmg_alloc_managed" not in entry
    assert "call @nmg_sync" not in entry
    assert entry.count("call @nmg_memcpy") == 2      # the argument's mirror in, the partials out


def test_numpy_arguments_cross_the_bus_with_cumemcpy():
    host = placed(scale_into, np.ones(8), np.ones(8))
    entry = host.split("llvm.func @_mlir_memref_to_llvm_alloc")[0]
    assert "llvm.intr.memcpy" not in entry
    assert entry.count("call @nmg_memcpy") == 3   # x in, out in, out back


def test_arguments_the_function_only_overwrites_are_not_copied_in():
    from numba_mlir_gpu.targets.gpu.strategy import overwritten_arguments
    seen = {}

    def spy(func_ir):
        seen[func_ir.func_id.func_name] = overwritten_arguments(func_ir)
        return seen[func_ir.func_id.func_name]
    import numba_mlir_gpu.targets.gpu.strategy as targets
    targets.overwritten_arguments, original = spy, targets.overwritten_arguments
    try:
        placed(scale_into, np.ones(8), np.ones(8))

        def read_write(out, x):
            for i in prange(x.shape[0]):
                out[i] += x[i]
        placed(read_write, np.ones(8), np.ones(8))
    finally:
        targets.overwritten_arguments = original
    assert seen["scale_into"] == {0: [("dim", 1, 0)]}     # out: the loop's stop is x.shape[0]
    assert seen["read_write"] == {}


def test_arguments_written_through_a_variable_bound_in_a_loop_are_copied_back():
    """`u, v = v, u`: v is a new array, then u; writing v writes argument 0
    (and reading u reads it), whatever order the assignments come in."""
    from numba_mlir_gpu.targets.gpu import strategy as targets
    from .test_views import swap_buffers
    seen = {}
    spies = {name: getattr(targets, name) for name in ("written_arguments",
                                                        "overwritten_arguments")}

    def spy(name):
        def call(func_ir):
            seen[name] = spies[name](func_ir)
            return seen[name]
        return call
    try:
        for name in spies:
            setattr(targets, name, spy(name))
        placed(swap_buffers, np.ones(8), 3)
    finally:
        for name, original in spies.items():
            setattr(targets, name, original)
    assert 0 in seen["written_arguments"]
    assert seen["overwritten_arguments"] == {}


def test_returned_arrays_are_managed_and_prefetched_for_numpy_callers():
    host = placed(saxpy_new, np.float32(2), np.ones(8, np.float32), np.ones(8, np.float32))
    assert "call @nmg_alloc_managed_on_device" in host
    # no stream per launch, no wait in the function: the wrapper waits
    assert "mgpuStreamCreate" not in host and "call @nmg_sync" not in host
    assert "gpu.launch_func <" in host


def test_host_written_arrays_stay_managed_and_launches_wait():
    host = placed(host_fill, 8)
    entry = host.split("llvm.func @_mlir_memref_to_llvm_alloc")[0]
    assert "call @nmg_alloc_managed(" in entry
    # nothing runs on the host after the kernel: the wrapper's wait suffices
    assert "call @nmg_sync" not in entry


@pytest.mark.gpu
def test_fresh_arrays_read_and_returned_on_the_host():
    x = np.random.default_rng(1).random(100_000).astype(np.float32)
    y = np.random.default_rng(2).random(100_000).astype(np.float32)
    check(saxpy_new, np.float32(2.5), x, y, target="gpu")
    check(host_fill, 1000, target="gpu")
    check(sum_of_squares, x.astype(np.float64), target="gpu", rtol=1e-12)
    check(reversed_squares, x, target="gpu")


@pytest.mark.gpu
def test_write_only_and_read_write_arguments():
    x = np.random.default_rng(3).random(5000)
    check(scale_into, np.full(5000, np.nan), x, target="gpu")     # not copied in
    check(scale_into, np.arange(6000.0), x, target="gpu")         # loop too short: copied

    def partial(out, x):                 # elements it does not write keep their values
        for i in prange(x.shape[0] // 2):
            out[i] = x[i]
    check(partial, np.arange(5000.0), x, target="gpu")


@pytest.mark.gpu
@pytest.mark.parametrize("make", [
    lambda a: np.asfortranarray(a),
    lambda a: a[:, ::2],
    lambda a: a[::-1, 1:],
    lambda a: a.T,
], ids=["fortran", "step", "reversed", "transposed"])
def test_non_contiguous_numpy_inputs(make):
    rng = np.random.default_rng(4)
    a, b = make(rng.random((60, 80))), make(rng.random((60, 80)))
    check(add_2d, a, b, target="gpu")

    def write_strided(out, a):
        for i in prange(a.shape[0]):
            for j in range(a.shape[1]):
                out[i, j] = 2 * a[i, j]
    check(write_strided, make(np.zeros((60, 80))), a, target="gpu")


def test_launches_share_the_default_stream():
    from .test_codegen import two_loops
    host = placed(two_loops, np.ones(16), np.ones(16))
    launches = [line for line in host.splitlines() if "gpu.launch_func" in line]
    assert len(launches) == 2
    # each launch names a stream, so the LLVM translation creates none around it
    assert all("gpu.launch_func <" in line for line in launches)
    assert "mgpuStreamCreate" not in host and "mgpuStreamDestroy" not in host


def zeros_like_of(x):
    out = np.zeros_like(x)          # reads only x's shape: x is not copied back
    for i in prange(x.shape[0]):
        out[i] = x[i] + 1.0
    return out


def write_through_reshape(x):
    y = np.reshape(x, (2, 4))       # a view: writing it writes x
    for i in prange(2):
        y[i, 0] = 1.0


def test_arguments_are_copied_back_only_when_written():
    entry = placed(zeros_like_of, np.ones(8)).split("llvm.func @_mlir_memref_to_llvm_alloc")[0]
    assert entry.count("call @nmg_memcpy") == 1           # in only
    entry = placed(write_through_reshape, np.ones(8)).split("llvm.func @_mlir_memref_to_llvm_alloc")[0]
    assert entry.count("call @nmg_memcpy") == 2           # in, and back through the view


def copy_complex(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * 2
    return out


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_bug_copies_into_over_aligned_allocations_go_through_the_driver(dtype):
    """Complex allocations are aligned by hand (ptrtoint, add, urem, sub,
    inttoptr); the argument's copy into its device mirror was left a host
    memcpy into device memory, which segfaulted on the H200."""
    host = placed(copy_complex, np.ones(8, dtype))
    entry = host.split("llvm.func @_mlir_memref_to_llvm_alloc")[0]
    assert "llvm.urem" in entry                 # the hand alignment is there
    assert "llvm.intr.memcpy" not in entry
    assert entry.count("call @nmg_memcpy") == 1     # x in; out is managed, read by the caller


Holder = collections.namedtuple("Holder", ["y", "z"])


def write_through_tuple(a):
    for i in prange(a.y.shape[0]):
        a.y[i] = a.z[i] + 5


def test_bug_arrays_in_tuple_arguments_are_copied_back():
    """A kernel writing an array held in a (named) tuple argument: its
    device mirror was never copied back (Numba's test_namedtuple3 on the
    H200 left the NumPy array unwritten). Both arrays of the written tuple
    are copied back now; each is copied in."""
    host = placed(write_through_tuple, Holder(np.zeros(8), np.ones(8)))
    entry = host.split("llvm.func @_mlir_memref_to_llvm_alloc")[0]
    assert entry.count("call @nmg_memcpy") == 4


@pytest.mark.gpu
def test_arrays_in_tuple_arguments_written_on_the_gpu():
    a = Holder(np.zeros(1001), np.arange(1001.0))
    numba_mlir_gpu.njit(target="gpu")(write_through_tuple)(a)
    np.testing.assert_array_equal(a.y, np.arange(1001.0) + 5)


def _rows_written_through_enumerate(m):
    for i, row in enumerate(m):
        row[0] = i
    return m


def _rows_written_through_zip(a, b):
    for r, s in zip(a, b):
        r[0] = s[0]


def _reads_through_range_of_shape(x, y):
    total = 0.0
    for i in range(x.shape[0]):
        total += (x[i] - y[i]) ** 2
    return total


@pytest.mark.parametrize("fn, ndim, written", [
    (_rows_written_through_enumerate, 2, {0}),
    (_rows_written_through_zip, 2, {0, 1}),     # r or s: both may be written
    (_reads_through_range_of_shape, 1, set()),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_which_arguments_a_function_writes(fn, ndim, written):
    """What the GPU copies back: rows an iteration yields are views of the
    array (a write through them writes it); `range(x.shape[0])` writes
    nothing (it made a callee's arrays count as written, and the GPU refused
    calling it where a block's threads share the loop)."""
    import numba
    from numba.core.registry import cpu_target
    from numba_mlir_gpu.frontend.typed_ir import typed_ir
    from numba_mlir_gpu.lowering.argument_writes import written_arguments
    ty = numba.typeof(np.ones((3,) * ndim))
    nargs = fn.__code__.co_argcount
    state = typed_ir(fn, (ty,) * nargs, cpu_target.typing_context, cpu_target.target_context)
    assert written_arguments(state.func_ir) == written
