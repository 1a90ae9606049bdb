"""GPU code generation without a GPU: compile-only builds PTX (no CUDA needed)."""
import re

import numpy as np
import pytest
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu import compiled_function, inspect_mlir, inspect_ptx
from numba_mlir_gpu.frontend.wrapper import CompileOnlyError

from .test_prange import sum_reduction


def two_loops(x, y):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * 2.0
    n = x.shape[0]
    for i in prange(n):      # reads across iterations: not fused with the first
        y[i] = out[n - 1 - i] + np.sqrt(y[i])
    return out


def compile_only(fn, *args):
    dispatcher = numba_mlir_gpu.njit(target="compile-only")(fn)
    with pytest.raises(CompileOnlyError, match="compile-only"):
        dispatcher(*args)
    return dispatcher


def entries(ptx: str) -> list[str]:
    return re.findall(r"\.visible \.entry (\w+)\(", ptx)


def all_ptx(fn) -> str:
    """One GPU module (and PTX text) per outlined kernel, joined."""
    return "\n".join(inspect_ptx(fn))


def test_one_kernel_per_prange_loop():
    x = np.ones(16)
    fn = compile_only(two_loops, x, x.copy())
    ptx = all_ptx(fn)
    assert len(entries(ptx)) == 2
    assert ".target sm_90" in ptx
    # IEEE square root, not the approximation
    assert "sqrt.rn.f64" in ptx and "sqrt.approx" not in ptx


def test_float32_sqrt_and_division_are_ieee_in_ptx():
    def f(x, y):
        for i in prange(x.shape[0]):
            y[i] = np.sqrt(x[i]) / y[i]
    x = np.ones(4, np.float32)
    ptx = all_ptx(compile_only(f, x, x.copy()))
    assert "sqrt.rn.f32" in ptx and "div.rn.f32" in ptx
    assert "approx" not in ptx


def test_int64_elements_move_as_64_bit_words():
    """Kernels are translated to LLVM IR with NVPTX's data layout: with
    LLVM's default one an i64 is 4-aligned, and each int64 load and store
    was split into two 32-bit ones (passes.nvptx_data_layout)."""
    def f(x, out):
        for i in prange(x.shape[0]):
            out[i] = x[i] * 3
    x = np.ones(1000, np.int64)
    ptx = all_ptx(compile_only(f, x, x.copy()))
    assert re.search(r"ld\.global(\.nc)?\.b64", ptx) and "st.global.b64" in ptx
    assert not re.search(r"(ld|st)\.global(\.nc)?\.b32", ptx)


def test_reduction_kernels_are_deterministic():
    fn = compile_only(sum_reduction, np.ones(16))
    ptx = all_ptx(fn)
    assert len(entries(ptx)) == 1          # per-block partials; the host folds them in order
    assert "atom" not in ptx               # no atomics: same result every run


def test_kernels_are_launched_from_host_code():
    fn = compile_only(two_loops, np.ones(16), np.ones(16))
    lowered = inspect_mlir(fn, stage="lowered")
    assert "gpu.binary" in lowered and lowered.count("mgpuLaunchKernel") >= 1 or \
        "gpu.launch_func" in lowered
    assert "nmg_alloc_managed" in lowered   # the GPU runtime's allocator


def test_input_mlir_has_parallel_loops():
    fn = compile_only(two_loops, np.ones(16), np.ones(16))
    text = inspect_mlir(fn)
    assert text.count("scf.parallel") == 2
    assert compiled_function(fn).target.name == "compile-only"


def fused_expression(a, b, c, d):
    return a * b + c * d


def test_array_expression_on_device_arrays_is_one_kernel():
    """Numba fuses array expressions only over its own ("internal") array
    types; device arrays must count as such, or `a*b` and `c*d` stay
    unfused operators this package cannot lower."""
    from .test_arrays import HostBackedCudaArray
    x = HostBackedCudaArray(np.arange(8, dtype=np.float32))
    fn = compile_only(fused_expression, x, x, x, x)
    assert len(entries(all_ptx(fn))) == 1
