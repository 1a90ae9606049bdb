"""Our functions over Dask arrays of CuPy chunks on one GPU (the threaded
scheduler): the same functions and expressions as test_dask.py, whose
chunks then stay on the device from start to end.

Dask is not on the GPU machine by default: run this file with the wheels
of `pip install -e ".[dask]"` on PYTHONPATH (docs/testing.md)."""
from __future__ import annotations

import numpy as np
import pytest

from .dask_kernels import Kernels, laplacian_reference, sum_of_squares

pytestmark = pytest.mark.gpu

SHAPE, CHUNKS = (1024, 768), (256, 384)


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


@pytest.fixture(scope="module")
def da():
    pytest.importorskip("dask")
    return pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def kernels() -> Kernels:
    return Kernels("gpu")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    return rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)


def chunked(da, cp, host: np.ndarray):
    device = cp.asarray(host)
    cp.cuda.runtime.deviceSynchronize()     # the copy is complete for every stream
    return da.from_array(device, chunks=CHUNKS, asarray=False)


def compute(dask_obj):
    import dask
    with dask.config.set(scheduler="threads", num_workers=4):
        return dask_obj.compute()


def test_blockwise_on_cupy_chunks(cp, da, kernels, data):
    xn, yn = data
    x, y = chunked(da, cp, xn), chunked(da, cp, yn)
    got = compute(da.blockwise(kernels.axpy, "ij", x, "ij", y, "ij", dtype=np.float64))
    assert isinstance(got, cp.ndarray)            # chunks stayed on the device
    np.testing.assert_allclose(cp.asnumpy(got), 2.0 * xn + np.sqrt(np.abs(yn)), rtol=1e-14)


def test_map_blocks_and_overlap_on_cupy_chunks(cp, da, kernels, data):
    xn, _ = data
    x = chunked(da, cp, xn)
    rows = compute(x.map_blocks(kernels.scale_rows))
    stencil = compute(x.map_overlap(kernels.laplacian, depth=1, boundary="reflect"))
    assert isinstance(rows, cp.ndarray) and isinstance(stencil, cp.ndarray)
    within = (np.arange(SHAPE[0]) % CHUNKS[0] % 3)[:, None]
    np.testing.assert_allclose(cp.asnumpy(rows), xn * 0.5 + within, rtol=1e-15)
    np.testing.assert_allclose(cp.asnumpy(stencil), laplacian_reference(xn), rtol=1e-12,
                               atol=1e-12)


def test_reduction_on_cupy_chunks(cp, da, kernels, data):
    xn, _ = data
    got = compute(sum_of_squares(da, chunked(da, cp, xn), kernels))
    np.testing.assert_allclose(float(got), np.sum(xn * xn), rtol=1e-12)


def test_cupy_chunks_on_a_non_blocking_stream(cp, da, kernels, data):
    """Dask's worker threads run each task on the stream current in that
    thread; a CuPy stream made current in the tasks themselves is followed."""
    xn, yn = data
    x, y = chunked(da, cp, xn), chunked(da, cp, yn)

    def on_own_stream(a, b):
        with cp.cuda.Stream(non_blocking=True) as s:
            out = kernels.axpy(a, b)
            s.synchronize()            # the chunk is complete when the task returns
        return out
    got = compute(da.blockwise(on_own_stream, "ij", x, "ij", y, "ij", dtype=np.float64))
    np.testing.assert_allclose(cp.asnumpy(got), 2.0 * xn + np.sqrt(np.abs(yn)), rtol=1e-14)
