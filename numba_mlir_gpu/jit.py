"""From a lowered MLIR module to a callable address: pass pipeline, OrcJIT.

The entry function is called through the ExecutionEngine's packed wrapper
`_mlir_<name>(void **args)`: args[i] points at the i-th LLVM-level parameter
(memrefs expanded to allocated ptr, aligned ptr, offset, sizes, strides) and
the last one at storage for the (struct of) results.
"""
from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass, field

from ._libs import runtime_library
from ._mlir import ExecutionEngine, ir, passmanager
from .lowering.errors import MLIRCompilationError

# memref.alloc/dealloc call these (finalize-memref-to-llvm with generic
# functions); each target defines them over its own allocator.
_CPU_ALLOCATOR = """
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @free(!llvm.ptr)
llvm.func @_mlir_memref_to_llvm_alloc(%n: i64) -> !llvm.ptr {
  %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
  llvm.return %p : !llvm.ptr
}
llvm.func @_mlir_memref_to_llvm_free(%p: !llvm.ptr) {
  llvm.call @free(%p) : (!llvm.ptr) -> ()
  llvm.return
}
"""

# CUDA managed memory: reachable from host code and from kernels alike.
_GPU_ALLOCATOR = """
llvm.func @mgpuMemAlloc(i64, !llvm.ptr, i8) -> !llvm.ptr
llvm.func @mgpuMemFree(!llvm.ptr, !llvm.ptr)
llvm.func @_mlir_memref_to_llvm_alloc(%n: i64) -> !llvm.ptr {
  %stream = llvm.mlir.zero : !llvm.ptr
  %shared = llvm.mlir.constant(1 : i8) : i8
  %one = llvm.mlir.constant(1 : i64) : i64
  %size = llvm.intr.umax(%n, %one) : (i64, i64) -> i64
  %p = llvm.call @mgpuMemAlloc(%size, %stream, %shared) : (i64, !llvm.ptr, i8) -> !llvm.ptr
  llvm.return %p : !llvm.ptr
}
llvm.func @_mlir_memref_to_llvm_free(%p: !llvm.ptr) {
  %stream = llvm.mlir.zero : !llvm.ptr
  llvm.call @mgpuMemFree(%p, %stream) : (!llvm.ptr, !llvm.ptr) -> ()
  llvm.return
}
"""


def add_allocator(module: ir.Module, gpu: bool) -> None:
    """Append the allocator functions for the target to `module`."""
    defs = ir.Module.parse(_GPU_ALLOCATOR if gpu else _CPU_ALLOCATOR)
    for op in list(defs.body.operations):
        module.body.append(op.detach_from_parent() if hasattr(op, "detach_from_parent") else op)


def run_pipeline(module: ir.Module, pipeline) -> None:
    """Run a textual pipeline, or a list of textual pipelines and Python
    rewrites (callables taking the module)."""
    for stage in [pipeline] if isinstance(pipeline, str) else pipeline:
        if callable(stage):
            stage(module)
            continue
        try:
            passmanager.PassManager.parse(stage).run(module.operation)
        except ir.MLIRError as exc:
            raise MLIRCompilationError(f"MLIR pass pipeline failed: {exc}") from None


@functools.lru_cache(maxsize=None)
def _cuda_runtime_libs() -> tuple[str, ...]:
    return (runtime_library("mlir_cuda_runtime"), runtime_library("mlir_runner_utils"))


@functools.lru_cache(maxsize=None)
def array_destructor(gpu: bool) -> int:
    """Address of `void dtor(void *data)` that frees a returned array."""
    if gpu:
        lib = ctypes.CDLL(_cuda_runtime_libs()[0], mode=ctypes.RTLD_GLOBAL)
        return ctypes.cast(lib.mgpuMemFree, ctypes.c_void_p).value
    return ctypes.cast(ctypes.CDLL(None).free, ctypes.c_void_p).value


@functools.lru_cache(maxsize=None)
def stream_synchronize_address() -> int:
    """Address of the CUDA runtime wrapper `mgpuStreamSynchronize(stream)`."""
    lib = ctypes.CDLL(_cuda_runtime_libs()[0], mode=ctypes.RTLD_GLOBAL)
    return ctypes.cast(lib.mgpuStreamSynchronize, ctypes.c_void_p).value


_LIVE_ENGINES: list = []


@dataclass
class JitFunction:
    """A compiled entry point; keeps its engine (and so its code) alive."""
    engine: object
    name: str
    address: int
    gpu: bool
    llvm_mlir: str = ""
    keepalive: list = field(default_factory=list)


def jit(module: ir.Module, name: str, gpu: bool, opt_level: int = 3) -> JitFunction:
    # c_runner_utils: memrefCopy, which memref.copy between strided memrefs (views) calls
    shared = list(_cuda_runtime_libs()) if gpu else [runtime_library("mlir_async_runtime"),
                                                     runtime_library("mlir_c_runner_utils")]
    if gpu:
        array_destructor(True)     # load the runtime before the engine resolves symbols
    lowered = str(module)
    try:
        engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=shared)
    except Exception as exc:   # the engine reports failures as plain RuntimeError
        raise MLIRCompilationError(f"MLIR ExecutionEngine failed: {exc}") from None
    engine.initialize()   # global constructors: GPU binaries, the async runtime
    # Engines are never destroyed (Numba never unloads code either): a
    # destroyed engine calls the runtime libraries' destroy hooks, which tear
    # down the async runtime that every other engine shares.
    _LIVE_ENGINES.append(engine)
    address = engine.raw_lookup(name)
    if not address:
        raise MLIRCompilationError(f"symbol {name!r} not found in the JIT-ed module")
    return JitFunction(engine, name, address, gpu, lowered)


def extract_ptx(module: ir.Module) -> list[str]:
    """The PTX of each `gpu.binary` built with format=isa."""
    from ._mlir import gpu
    found: list[str] = []

    def visit(op: ir.Operation):
        if op.name == "gpu.binary":
            for obj in ir.ArrayAttr(op.attributes["objects"]):
                found.append(bytes(gpu.ObjectAttr(obj).object).decode(errors="replace").rstrip("\x00"))
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return found
