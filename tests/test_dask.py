"""Our functions over Dask arrays of NumPy chunks (the CPU target): with
Dask's threaded scheduler, and in the worker processes of a
`distributed.LocalCluster`, where they arrive pickled, compile (or load
from the `cache=True` cache the parent wrote) and run.

The GPU half (CuPy chunks) is test_dask_gpu.py."""
from __future__ import annotations

import numpy as np
import pytest

from .dask_kernels import Kernels, laplacian_reference, sum_of_squares

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

SHAPE, CHUNKS = (300, 200), (100, 50)


@pytest.fixture(scope="module")
def kernels() -> Kernels:
    # cache=True: the worker process of test_distributed_workers loads them
    return Kernels("cpu", cache=True, stream="current")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    return rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)


def threaded():
    return dask.config.set(scheduler="threads", num_workers=2)


def test_blockwise_array_expression(kernels, data):
    xn, yn = data
    x, y = da.from_array(xn, chunks=CHUNKS), da.from_array(yn, chunks=CHUNKS)
    with threaded():
        got = da.blockwise(kernels.axpy, "ij", x, "ij", y, "ij", dtype=np.float64).compute()
    np.testing.assert_allclose(got, 2.0 * xn + np.sqrt(np.abs(yn)), rtol=1e-15)


def test_map_blocks_prange_loop(kernels, data):
    xn, _ = data
    with threaded():
        got = da.from_array(xn, chunks=CHUNKS).map_blocks(kernels.scale_rows).compute()
    rows = np.arange(SHAPE[0]) % CHUNKS[0] % 3           # the row index within its chunk
    np.testing.assert_allclose(got, xn * 0.5 + rows[:, None], rtol=1e-15)


def test_map_overlap_stencil(kernels, data):
    xn, _ = data
    x = da.from_array(xn, chunks=CHUNKS)
    with threaded():
        got = x.map_overlap(kernels.laplacian, depth=1, boundary="reflect").compute()
    np.testing.assert_allclose(got, laplacian_reference(xn), rtol=1e-12, atol=1e-12)


def test_reduction_chunk_and_aggregate(kernels, data):
    xn, _ = data
    total = sum_of_squares(da, da.from_array(xn, chunks=CHUNKS), kernels)
    assert total.shape == ()
    with threaded():
        got = total.compute()
    np.testing.assert_allclose(got, np.sum(xn * xn), rtol=1e-12)


# -- distributed --------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    # One worker process, one thread: enough to show that functions pickle and
    # compile there; each more costs its start-up and compilations.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") \
            as cluster, distributed.Client(cluster) as c:
        yield c


def test_distributed_workers(client, kernels, data):
    """The functions reach the worker process pickled; cache=True: the
    parent compiled and saved them (the tests above), the worker's unpickled
    dispatchers load the same entries (same source file, same key) and keep
    our pipeline and their options."""
    xn, yn = data
    x, y = da.from_array(xn, chunks=CHUNKS), da.from_array(yn, chunks=CHUNKS)
    block = xn[:CHUNKS[0], :CHUNKS[1]]
    kernels.scale_rows(block)               # compiled here (or loaded), saved
    expr = da.blockwise(kernels.axpy, "ij", x, "ij", y, "ij", dtype=np.float64)
    stencil = x.map_overlap(kernels.laplacian, depth=1, boundary="reflect")
    rows = x.map_blocks(kernels.scale_rows)
    total = sum_of_squares(da, x, kernels)
    got_expr, got_stencil, got_rows, got_total = client.compute(
        [expr, stencil, rows, total], sync=True)
    np.testing.assert_allclose(got_expr, 2.0 * xn + np.sqrt(np.abs(yn)), rtol=1e-15)
    np.testing.assert_allclose(got_stencil, laplacian_reference(xn), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_rows, xn * 0.5 + (np.arange(SHAPE[0]) % CHUNKS[0] % 3)[:, None],
                               rtol=1e-15)
    np.testing.assert_allclose(got_total, np.sum(xn * xn), rtol=1e-12)

    def worker_view(fn):
        fn(block)
        pipeline = fn._compiler.pipeline_class
        return (pipeline.__name__, fn.stream_option, sum(fn.stats.cache_hits.values()),
                sum(fn.stats.cache_misses.values()))
    assert client.submit(worker_view, kernels.scale_rows, pure=False).result() == \
        ("MLIRGPUPipeline_target_cpu", "current", 1, 0)

    def compiled_there(fn):
        fn(block)                     # no cache: the worker compiles it, through our pipeline
        (compiled,) = fn.overloads.values()
        return fn.stream_option, compiled.metadata.get("numba_mlir_gpu_path").path
    uncached = Kernels("cpu", stream="default").scale_rows
    assert client.submit(compiled_there, uncached, pure=False).result() == ("default", "mlir")
