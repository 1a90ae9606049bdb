"""numba-mlir-gpu: compile Numba functions through MLIR, prange loops as GPU kernels.

    from numba import njit, prange
    from numba_mlir_gpu import MLIRGPUPipeline

    @njit(pipeline_class=MLIRGPUPipeline)
    def f(x): ...
"""
from __future__ import annotations

from ._libs import load_mlir
from ._version import __version__

load_mlir()   # fail at import, with the package to install, if MLIR is missing

from .runtime import device_arrays  # noqa: E402,F401  (typing of GPU arrays)
from .frontend import caching  # noqa: E402,F401  (cache keys of our dispatchers)
from .api import compiled_function, inspect_mlir, inspect_path, inspect_ptx, njit  # noqa: E402
from . import aot  # noqa: E402  (ahead-of-time builds; dispatchers look in their folders)
from .compiler.gpu_binaries import GPUArchitectureError, PtxasWarning  # noqa: E402
from .frontend.fallback import FallbackWarning  # noqa: E402
from .frontend.pipeline import MLIRGPUPipeline  # noqa: E402
from .lowering.device_functions import declare_device  # noqa: E402
from .lowering.errors import MLIRCompilationError, UnsupportedConstructError  # noqa: E402
from .targets.choice import ENV_TARGET, NoGPUWarning  # noqa: E402
from .ufuncs import GUFunc, UFunc, guvectorize, vectorize  # noqa: E402

__all__ = ["MLIRGPUPipeline", "njit", "inspect_mlir", "inspect_ptx", "inspect_path",
           "compiled_function", "FallbackWarning", "PtxasWarning", "GPUArchitectureError", "aot",
           "declare_device", "ENV_TARGET", "NoGPUWarning", "UnsupportedConstructError",
           "MLIRCompilationError", "vectorize", "guvectorize", "UFunc", "GUFunc"]
