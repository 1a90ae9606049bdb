"""The device of the data (runtime/devices.py): a call runs on the device its
GPU arrays live on, NumPy-only calls on the current device.

On one GPU the tests check which device a call used (its results' device,
the device's memory pool); the tests of two devices skip, saying so, where
fewer are present."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu.runtime import cuda
from numba_mlir_gpu.runtime.devices import MixedDevicesError, data_device

pytestmark = pytest.mark.gpu


def add(x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] + y[i]
    return out


def add_one(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] + 1.0
    return out


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture(scope="module")
def two_devices(cp):
    count = cuda.device_count()
    if count < 2:
        pytest.skip(f"needs 2 GPUs; this machine has {count}")


def pool_reserved_high(device: int) -> int:
    """The most memory `device`'s default pool (the one our runtime allocates
    from; CuPy's own pool is separate) has held."""
    lib = cuda.require_device()
    pool, value = ctypes.c_void_p(), ctypes.c_uint64(0)
    assert lib.cuDeviceGetDefaultMemPool(ctypes.byref(pool), device) == 0
    assert lib.cuMemPoolGetAttribute(pool, 6, ctypes.byref(value)) == 0   # RESERVED_MEM_HIGH
    return value.value


# -- one GPU ------------------------------------------------------------------

def test_the_device_of_the_data(cp):
    x = cp.ones(16, dtype=cp.float32)
    assert data_device([x, np.ones(3), 2.0, (x, 1)]) == 0
    assert data_device([np.ones(3), 2.0]) is None


def test_device_arrays_run_on_their_device(cp):
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    x = cp.arange(1 << 16, dtype=cp.float32)
    out = f(x)
    assert isinstance(out, cp.ndarray) and out.device.id == 0
    np.testing.assert_array_equal(cp.asnumpy(out), np.arange(1 << 16, dtype=np.float32) + 1)
    assert cuda.current_device() == 0


def test_numpy_only_calls_use_the_current_device(cp):
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    n = 1 << 24                              # 64 MiB of float32: the argument's device copy
    with cp.cuda.Device(0):
        got = f(np.zeros(n, dtype=np.float32))
    np.testing.assert_array_equal(got[:4], np.ones(4, np.float32))
    assert pool_reserved_high(0) >= n * 4


# -- two GPUs -----------------------------------------------------------------

def test_arrays_on_device_1_run_there(cp, two_devices):
    f = numba_mlir_gpu.njit(target="gpu")(add)
    with cp.cuda.Device(1):
        x = cp.arange(5000, dtype=cp.float64)
        y = cp.ones(5000, dtype=cp.float64)
    with cp.cuda.Device(0):
        out = f(x, y)                                # device 0 current, data on 1
        assert cuda.current_device() == 0            # put back after the call
    assert out.device.id == 1
    np.testing.assert_array_equal(cp.asnumpy(out), np.arange(5000.0) + 1)


def test_one_function_alternating_between_devices(cp, two_devices):
    """Each device loads the kernels on its first launch there."""
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    arrays = []
    for device in (0, 1):
        with cp.cuda.Device(device):
            arrays.append(cp.full(1000, float(device), dtype=cp.float32))
    for _ in range(3):
        for device, x in enumerate(arrays):
            out = f(x)
            assert out.device.id == device
            np.testing.assert_array_equal(cp.asnumpy(out), np.full(1000, device + 1.0, np.float32))


def test_arrays_on_two_devices_are_an_error(cp, two_devices):
    f = numba_mlir_gpu.njit(target="gpu")(add)
    with cp.cuda.Device(0):
        x = cp.ones(10)
    with cp.cuda.Device(1):
        y = cp.ones(10)
    with pytest.raises(MixedDevicesError, match="argument 0 on device 0, argument 1 on device 1"):
        f(x, y)


def test_numpy_only_calls_on_device_1(cp, two_devices):
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    n = 1 << 24
    before = pool_reserved_high(1)
    with cp.cuda.Device(1):
        got = f(np.zeros(n, dtype=np.float32))
    np.testing.assert_array_equal(got[-4:], np.ones(4, np.float32))
    assert pool_reserved_high(1) >= max(before, n * 4)


def test_current_stream_of_device_1(cp, two_devices):
    f = numba_mlir_gpu.njit(target="gpu")(add_one)
    with cp.cuda.Device(1):
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            x = cp.full(1 << 20, 2.0, dtype=cp.float32)
            out = f(x)
            got = cp.asnumpy(out)
    np.testing.assert_array_equal(got, np.full(1 << 20, 3.0, np.float32))
