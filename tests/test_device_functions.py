"""A user's LLVM bitcode device library, linked into the kernels and called
through `numba_mlir_gpu.declare_device`. The library is written here as LLVM
IR for NVPTX and turned into bitcode with llvmlite."""
import numpy as np
import pytest
from llvmlite import binding as ll
from numba import prange

import numba_mlir_gpu
from numba_mlir_gpu import UnsupportedConstructError

LIBRARY = r"""
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
define float @scale_and_shift(float %x, i32 %k) {
  %kf = sitofp i32 %k to float
  %m = fmul float %x, %kf
  %r = fadd float %m, 1.0
  ret float %r
}
"""


@pytest.fixture
def scale(tmp_path):
    path = tmp_path / "scale.bc"
    path.write_bytes(ll.parse_assembly(LIBRARY).as_bitcode())
    return numba_mlir_gpu.declare_device("scale_and_shift", "float32(float32, int32)",
                                         link=str(path))


def apply(fn):
    def body(x, out):
        for i in prange(x.shape[0]):
            out[i] = fn(x[i], 3)
    return body


def test_the_library_is_linked_into_the_kernel(scale):
    f = numba_mlir_gpu.njit("void(f4[::1], f4[::1])", target="compile-only")(apply(scale))
    (ptx,) = numba_mlir_gpu.compiled_function(f).ptx
    assert "scale_and_shift" not in ptx                 # resolved and inlined
    assert "0f40400000" in ptx and "0f3F800000" in ptx  # its * 3.0 and + 1.0


def test_a_call_in_host_code_is_refused(scale):
    f = numba_mlir_gpu.njit(target="cpu")(apply(scale))
    with pytest.raises(UnsupportedConstructError, match="device function 'scale_and_shift'"):
        f(np.ones(4, np.float32), np.zeros(4, np.float32))


def test_only_scalar_signatures():
    with pytest.raises(TypeError, match="only scalar"):
        numba_mlir_gpu.declare_device("f", "float32(float32[:])")


@pytest.mark.gpu
def test_a_kernel_calls_the_library(scale):
    f = numba_mlir_gpu.njit(target="gpu")(apply(scale))
    x = np.linspace(-5, 5, 1001).astype(np.float32)
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_array_equal(out, x * np.float32(3) + np.float32(1))
