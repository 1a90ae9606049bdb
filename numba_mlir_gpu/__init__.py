"""numba-mlir-gpu: compile Numba functions through MLIR, prange loops as GPU kernels.

    from numba import njit, prange
    from numba_mlir_gpu import MLIRGPUPipeline

    @njit(pipeline_class=MLIRGPUPipeline)
    def f(x): ...
"""
from __future__ import annotations

from ._libs import load_mlir

load_mlir()   # fail at import, with the package to install, if MLIR is missing

from . import caching, memory  # noqa: E402,F401  (cache keys; typing of GPU arrays)
from .api import compiled_function, inspect_mlir, inspect_ptx, njit  # noqa: E402
from .pipeline import MLIRGPUPipeline  # noqa: E402
from .target import ENV_TARGET, NoGPUWarning  # noqa: E402

__all__ = ["MLIRGPUPipeline", "njit", "inspect_mlir", "inspect_ptx", "compiled_function",
           "ENV_TARGET", "NoGPUWarning"]
__version__ = "0.1.0"
