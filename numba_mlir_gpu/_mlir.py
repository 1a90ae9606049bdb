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

__all__ = ["ir", "passmanager", "arith", "cf", "func", "gpu", "linalg", "llvm", "math",
           "memref", "scf", "ExecutionEngine", "complex_dialect"]
