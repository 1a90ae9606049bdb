"""compiler/constant_slots.py: a status buffer that only ever holds 0 is
folded, so the host code reads nothing back after the loop's kernel."""
import numpy as np

from numba_mlir_gpu import inspect_mlir, vectorize
from numba_mlir_gpu._mlir import ir
from numba_mlir_gpu.compiler.constant_slots import fold_constant_scalar_buffers

STATUS = """
func.func @f(%x: memref<?xf64>, %flag: i32) -> i32 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %n = memref.dim %x, %c0 : memref<?xf64>
  %status = memref.alloc() : memref<i32>
  memref.store %zero, %status[] : memref<i32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {{
    {inside}
    scf.reduce
  }}
  %s = memref.load %status[] : memref<i32>
  memref.dealloc %status : memref<i32>
  return %s : i32
}}
"""


def _folded(inside: str) -> str:
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(STATUS.format(inside=inside))
        fold_constant_scalar_buffers(module)
        module.operation.verify()
        return str(module)


def test_a_status_never_set_is_the_constant():
    text = _folded("")
    assert "memref.alloc" not in text and "memref.load" not in text
    assert "return %c0_i32" in text


def test_a_status_set_in_the_loop_stays():
    for inside in ("memref.store %one, %status[] : memref<i32>",
                   "memref.store %flag, %status[] : memref<i32>"):
        text = _folded(inside)
        assert "memref.alloc() : memref<i32>" in text and "memref.load %alloc[]" in text


def bs_like(s, k, t):
    return s / k * t


def test_a_ufunc_loop_returns_without_reading_a_status():
    """The ufunc's generated loop calls its kernel with a status result: after
    inlining, the host code returns the constant 0 (no read after the launch)."""
    ufunc = vectorize(["float64(float64, float64, float64)"], target="compile-only")(bs_like)
    x = np.ones(100)
    try:
        ufunc(x, x, x, out=np.empty(100))
    except Exception:       # compile-only: built, not run
        pass
    fn = list(ufunc._compiled.values())[0]
    host = inspect_mlir(fn, fn.signatures[0], stage="lowered")
    host = host[host.find("llvm.func @_elementwise"):host.find("gpu.binary")]
    returned = [line.split()[1] for line in host.splitlines() if "llvm.return" in line]
    constants = {line.split()[0] for line in host.splitlines()
                 if "llvm.mlir.constant(0 : i32)" in line}
    assert returned and set(returned) <= constants, host
