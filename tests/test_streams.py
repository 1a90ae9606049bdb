"""The stream GPU calls run on (runtime/streams.py, frontend/dispatch.py).

The first tests need no GPU: the option, the call keyword and the
per-thread value the runtime reads. The GPU tests check the ordering with
work queued on a non-blocking CuPy stream, and that a call with device
arrays only does not wait for that stream (no synchronisation at all)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.runtime.streams import (LEGACY, set_thread_stream, stream_handle,
                                            thread_stream)


def add_one(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] + 1.0
    return out


def total(x):
    return x.sum()


def takes_stream(x, stream):
    return x + stream


def test_stream_option_is_checked():
    with pytest.raises(ValueError, match="stream must be one of"):
        numba_mlir_gpu.njit(stream="mine")
    assert numba_mlir_gpu.njit(stream="default")(add_one).stream_option == "default"
    assert numba_mlir_gpu.njit(add_one).stream_option is None


def test_stream_handles():
    assert stream_handle("default") == LEGACY
    assert stream_handle(7) == 7
    with pytest.raises(TypeError, match="stream must be"):
        stream_handle(object())


def test_call_keyword_sets_the_stream_for_the_call_only():
    f = numba_mlir_gpu.njit(target="cpu")(add_one)
    np.testing.assert_array_equal(f(np.zeros(3), stream=12345), np.ones(3))
    assert thread_stream() == LEGACY         # put back after the call
    # a function with a parameter named `stream` gets it as an argument
    g = numba_mlir_gpu.njit(target="cpu")(takes_stream)
    assert g(1.0, stream=2.0) == 3.0


def test_the_stream_is_per_thread():
    results = {}

    def other():
        results["before"] = thread_stream()
        set_thread_stream(99)
        results["after"] = thread_stream()
        set_thread_stream(LEGACY)
    previous = set_thread_stream(42)
    try:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert thread_stream() == 42
    finally:
        set_thread_stream(previous)
    assert results == {"before": LEGACY, "after": 99}


def test_the_runtime_reads_the_stream_key():
    """The GPU runtime's text (JIT-ed only where there is a GPU) parses and
    verifies here, and asks this process's pthread key for the stream."""
    from numba_mlir_gpu._mlir import ir
    from numba_mlir_gpu.runtime.device import runtime_text
    from numba_mlir_gpu.runtime.streams import STREAM_KEY
    text = runtime_text()
    assert f"llvm.mlir.constant({STREAM_KEY} : i32)" in text and "@" + "STREAM_KEY@" not in text
    with ir.Context(), ir.Location.unknown():
        assert ir.Module.parse(text).operation.verify()


# -- GPU ----------------------------------------------------------------------

SPIN = r"""
extern "C" __global__ void spin_then_fill(float *x, long long cycles, int n, float value) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = value;
}
"""
N = 1 << 16          # 256 blocks of 256: one wave on any GPU, so the spin is paid once
SPIN_CYCLES = 400_000_000       # about 0.2 s at 2 GHz


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture(scope="module")
def spin(cp):
    return cp.RawKernel(SPIN, "spin_then_fill")


def queue_slow_fill(cp, spin, x, value: float) -> None:
    """On the current CuPy stream: spin about 0.2 s, then x[:] = value."""
    spin((N // 256,), (256,), (x, np.int64(SPIN_CYCLES), np.int32(N), np.float32(value)))


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["current", "keyword"])
def test_ordered_after_work_on_a_non_blocking_stream(cp, spin, how):
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    f(cp.zeros(N, dtype=cp.float32))            # compiled before the clock starts
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.zeros(N, dtype=cp.float32)
        queue_slow_fill(cp, spin, x, 1.0)
    if how == "current":
        with s:
            y = f(x)
    else:
        y = f(x, stream=s)
    # device arrays in and out: queued on s, nothing waited for
    assert not s.done, "the call waited for the stream (or the spin was too short)"
    with s:
        np.testing.assert_array_equal(cp.asnumpy(y), np.full(N, 2.0, np.float32))
    assert cp.cuda.get_current_stream().ptr == 0


@pytest.mark.gpu
def test_host_results_wait_for_the_stream_only(cp, spin):
    """A scalar result is read on the host: the call waits for its stream
    (with the queued fill before it), and a busy other stream is not waited for."""
    f = numba_mlir_gpu.njit(target="gpu")(total)
    f(cp.ones(N, dtype=cp.float32))
    mine, busy = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with busy:
        other = cp.zeros(N, dtype=cp.float32)
        queue_slow_fill(cp, spin, other, 5.0)
        queue_slow_fill(cp, spin, other, 5.0)     # about 0.4 s
    with mine:
        x = cp.zeros(N, dtype=cp.float32)
        queue_slow_fill(cp, spin, x, 3.0)
        assert f(x) == 3.0 * N
    assert not busy.done, "the call synchronised more than its own stream"
    busy.synchronize()


@pytest.mark.gpu
def test_numpy_arguments_on_a_non_blocking_stream(cp):
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    with cp.cuda.Stream(non_blocking=True):
        np.testing.assert_array_equal(f(np.arange(1000.0)), np.arange(1000.0) + 1)


@pytest.mark.gpu
def test_default_option_ignores_the_current_stream(cp):
    """stream="default": the legacy default stream, whatever CuPy's is; the
    caller orders it (here: by synchronising the non-blocking stream first)."""
    f = numba_mlir_gpu.njit(target="gpu", stream="default")(add_one)
    with cp.cuda.Stream(non_blocking=True) as s:
        x = cp.full(N, 4.0, dtype=cp.float32)
        s.synchronize()
        y = f(x)
    cp.cuda.Stream.null.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(y), np.full(N, 5.0, np.float32))


@pytest.mark.gpu
def test_threads_with_their_own_streams(cp):
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    f(cp.zeros(4, dtype=cp.float32))
    results, errors = {}, []

    def work(k):
        try:
            with cp.cuda.Stream(non_blocking=True) as s:
                y = cp.full(N, float(k), dtype=cp.float32)
                for _ in range(20):
                    y = f(y)
                results[k] = float(cp.asnumpy(y).min()), float(cp.asnumpy(y).max())
                s.synchronize()
        except Exception as exc:   # noqa: BLE001  (reported by the assertion below)
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {k: (k + 20.0, k + 20.0) for k in range(4)}


SPIN_COPY = r"""
extern "C" __global__ void spin_then_copy(const float *x, float *y, long long cycles, int n) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""


@pytest.mark.gpu
def test_a_result_dropped_after_the_call_is_freed_in_its_streams_order(cp):
    """A result that dies outside any call is freed on the stream its call
    ran on, after the kernels queued there that still read it. It was freed
    on the legacy default stream, which does not wait for a non-blocking
    stream: the memory pool gave the memory to the next allocation there
    while a kernel still had to read it (the flaky threads test below)."""
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    f(cp.zeros(N, dtype=cp.float32))
    copy = cp.RawKernel(SPIN_COPY, "spin_then_copy")
    six = cp.full(N, 6.0, dtype=cp.float32)
    for _ in range(3):          # before the fix, the first try often passed
        mine = cp.cuda.Stream(non_blocking=True)
        with mine:
            y = f(cp.zeros(N, dtype=cp.float32))    # ones, allocated on `mine`
            z = cp.zeros(N, dtype=cp.float32)
            copy((N // 256,), (256,), (y, z, np.int64(SPIN_CYCLES), np.int32(N)))
        del y                                       # outside any call
        # allocations of the same size on the legacy default stream, which
        # does not wait for `mine`: the pool reuses a block freed there at once
        ws = [f(six) for _ in range(16)]
        cp.cuda.Stream.null.synchronize()
        mine.synchronize()
        np.testing.assert_array_equal(cp.asnumpy(z), np.ones(N, np.float32))
        for w in ws:
            np.testing.assert_array_equal(cp.asnumpy(w), np.full(N, 7.0, np.float32))


@pytest.mark.gpu
def test_torch_current_stream():
    torch = pytest.importorskip("torch")
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.arange(4096, dtype=torch.float32, device="cuda")
        y = f(x)
        got = torch.as_tensor(y, device="cuda").cpu().numpy()
    np.testing.assert_array_equal(got, np.arange(4096, dtype=np.float32) + 1)
