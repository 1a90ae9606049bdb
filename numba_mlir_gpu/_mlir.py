"""The MLIR Python bindings, imported only after their libraries are loaded.

Every module of the package imports MLIR names from here, never from `mlir`
directly, so the load order in `_libs.load_mlir` always holds.
"""
from ._libs import load_mlir

load_mlir()

from mlir import ir, passmanager  # noqa: E402
from mlir.dialects import (  # noqa: E402
    arith, cf, func, gpu, linalg, llvm, math, memref, scf,
)
from mlir.dialects import complex as complex_dialect  # noqa: E402
from mlir.execution_engine import ExecutionEngine  # noqa: E402


# One pool of worker threads for every context: a context makes its own pool
# otherwise (a thread per core), and compiled functions keep their contexts
# alive, so a process that compiles thousands of functions (a test worker)
# ran out of threads, and MLIR aborted the process.
_THREAD_POOL = ir.ThreadPool()


def new_context() -> ir.Context:
    """An MLIR context that runs its parallel work on the shared pool."""
    context = ir.Context()
    context.set_thread_pool(_THREAD_POOL)
    return context


__all__ = ["new_context", "ir", "passmanager", "arith", "cf", "func", "gpu", "linalg", "llvm", "math",
           "memref", "scf", "ExecutionEngine", "complex_dialect"]
