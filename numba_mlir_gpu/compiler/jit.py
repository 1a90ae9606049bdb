"""From a lowered MLIR module to a callable address: pass pipeline, OrcJIT.

The entry function is called through the ExecutionEngine's packed wrapper
`_mlir_<name>(void **args)`: args[i] points at the i-th LLVM-level parameter
(memrefs expanded to allocated ptr, aligned ptr, offset, sizes, strides) and
the last one at storage for the (struct of) results.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
from dataclasses import dataclass, field

from .._libs import runtime_library
from .._mlir import ExecutionEngine, gpu, ir, new_context, passmanager
from ..lowering.errors import MLIRCompilationError
from ..lowering.random_streams import STATE_SYMBOL
from ..lowering.printing import PRINT_SYMBOLS
from ..lowering import threading_layer
from ..lowering.blas import CPU_SYMBOLS, CUBLAS_HANDLE_SYMBOL, CUBLAS_SYMBOLS
from ..runtime.cuda import compute_capability, reserve_device_heap
from ..runtime.device import RUNTIME_FUNCTIONS, register_runtime
from ..runtime.printing import register_printing
from ..runtime.blas import register_blas
from ..runtime.cublas import register_cublas
from ..runtime.threads import register_threading_layer
from ..runtime.placement import place_memory
from ..runtime.random_state import register_state
from ..targets.gpu.heap import HEAP_ATTRIBUTE, heap_bytes
from .gpu_binaries import select_for_device

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

# The GPU runtime (runtime/device.py): managed memory unless
# runtime/placement.py finds that only the GPU touches the array.
_GPU_ALLOCATOR = """
llvm.func @nmg_alloc_managed(i64) -> !llvm.ptr
llvm.func @nmg_free(!llvm.ptr)
llvm.func @_mlir_memref_to_llvm_alloc(%n: i64) -> !llvm.ptr {
  %p = llvm.call @nmg_alloc_managed(%n) : (i64) -> !llvm.ptr
  llvm.return %p : !llvm.ptr
}
llvm.func @_mlir_memref_to_llvm_free(%p: !llvm.ptr) {
  llvm.call @nmg_free(%p) : (!llvm.ptr) -> ()
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
    global PIPELINE_RUNS
    PIPELINE_RUNS += 1
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


def array_destructor_symbol(gpu: bool) -> str:
    """The function (`void dtor(void *data)`) that frees a returned array."""
    return "nmg_free" if gpu else "free"


_LIVE_ENGINES: list = []

# How many times the MLIR pass pipeline ran in this process (tests check
# that a function loaded from Numba's on-disk cache did not run it).
PIPELINE_RUNS = 0


@dataclass
class JitFunction:
    """A compiled entry point; keeps its engine (and so its code) alive.

    `symbol` names the entry for Numba's linker: registered with llvmlite in
    every process that loads the code, never baked in as an address."""
    engine: object
    name: str
    address: int
    gpu: bool
    llvm_mlir: str = ""
    symbol: str = ""
    keepalive: list = field(default_factory=list)

    def reloader(self) -> "Reload":
        return Reload(self.llvm_mlir, self.name, self.gpu, self.symbol)


@dataclass
class Reload:
    """Re-JITs cached host code (post-pipeline MLIR) in a new process before
    Numba links the cached wrapper; picklable, runs as a `reload_init`."""
    llvm_mlir: str
    name: str
    gpu: bool
    symbol: str

    def __call__(self) -> None:
        context = new_context()
        with context, ir.Location.unknown():
            module = ir.Module.parse(self.llvm_mlir)
            jitted = _engine(module, self.name, self.gpu, self.llvm_mlir)
        jitted.keepalive.append(context)
        _RELOADED.append(jitted)


_RELOADED: list = []


def jit(module: ir.Module, name: str, gpu: bool, opt_level: int = 3,
        device_results: bool = False) -> JitFunction:
    """JIT a module the pipeline lowered to the LLVM dialect. On the GPU the
    host code is first rewritten for placement and streams (runtime/placement.py);
    `device_results`: the call gets device arrays, so results stay there."""
    if gpu:
        _place(module, name, device_results)
    return _engine(module, name, gpu, str(module), opt_level)


def _place(module: ir.Module, name: str, device_results: bool) -> None:
    # cuBLAS runs on our kernels' stream, so its calls are placed as launches
    place_memory(module, name, device_results,
                 CUBLAS_SYMBOLS | {CUBLAS_HANDLE_SYMBOL})


def for_another_process(module: ir.Module, name: str, device_results: bool) -> JitFunction:
    """What `jit` keeps of a GPU module for Numba's cache, without JIT-ing
    it: an ahead-of-time build, on a machine that may have no GPU. Its
    symbol, and the GPU runtime's that Numba's wrapper calls, point at
    `abort` here (Numba links the wrapper to save it); a process that loads
    the build re-JITs the text (Reload) and registers the real addresses first."""
    from llvmlite import binding as ll
    _place(module, name, device_results)
    text = str(module)
    symbol = _symbol(name, text)
    nowhere = ctypes.cast(ctypes.CDLL(None).abort, ctypes.c_void_p).value
    for needed in [symbol, *RUNTIME_FUNCTIONS]:
        if not ll.address_of_symbol(needed):
            ll.add_symbol(needed, nowhere)
    return JitFunction(None, name, 0, True, text, symbol)


def _symbol(name: str, text: str) -> str:
    # same text, same code: a digest names the entry across processes
    return f"numba_mlir_gpu_{name}_{hashlib.sha1(text.encode()).hexdigest()[:16]}"


def _engine(module: ir.Module, name: str, gpu: bool, text: str,
            opt_level: int = 3) -> JitFunction:
    from llvmlite import binding as ll
    shared = list(_cuda_runtime_libs()) if gpu else [runtime_library("mlir_async_runtime")]
    if gpu:    # each GPU binary's object for this GPU (one build serves several)
        select_for_device(module, compute_capability(), name)
        if HEAP_ATTRIBUTE in module.operation.attributes:    # kernels call malloc
            reserve_device_heap(*heap_bytes())
    declared = ir.SymbolTable(module.operation)
    try:
        engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=shared)
    except Exception as exc:   # the engine reports failures as plain RuntimeError
        raise MLIRCompilationError(f"MLIR ExecutionEngine failed: {exc}") from None
    if gpu:
        register_runtime(engine)
    register_state(engine, STATE_SYMBOL)    # np.random's generator, shared by every engine
    # only where the code calls them: resolving the threading layer launches
    # Numba's worker threads
    layer = {s: f for s, f in threading_layer.SYMBOLS.items() if s in declared}
    if layer:
        register_threading_layer(engine, layer)
    blas = {s: helper for s, helper in CPU_SYMBOLS.items() if s in declared}
    if blas:
        register_blas(engine, blas)
    gemms = [s for s in CUBLAS_SYMBOLS if s in declared]
    if gemms:
        register_cublas(engine, CUBLAS_HANDLE_SYMBOL, gemms)
    if any(symbol in declared for symbol in PRINT_SYMBOLS):
        register_printing(engine, PRINT_SYMBOLS)
    engine.initialize()   # global constructors: GPU binaries, the async runtime
    # Engines are never destroyed (Numba never unloads code either): a
    # destroyed engine calls the runtime libraries' destroy hooks, which tear
    # down the async runtime that every other engine shares.
    _LIVE_ENGINES.append(engine)
    address = engine.raw_lookup(name)
    if not address:
        raise MLIRCompilationError(f"symbol {name!r} not found in the JIT-ed module")
    symbol = _symbol(name, text)
    ll.add_symbol(symbol, address)
    return JitFunction(engine, name, address, gpu, text, symbol)


def extract_ptx(module: ir.Module) -> list[str]:
    """The PTX of each `gpu.binary` built with format=isa."""
    found: list[str] = []

    def visit(op: ir.Operation):
        if op.name == "gpu.binary":
            for obj in ir.ArrayAttr(op.attributes["objects"]):
                found.append(bytes(gpu.ObjectAttr(obj).object).decode(errors="replace").rstrip("\x00"))
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return found
