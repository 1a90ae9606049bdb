"""Ahead-of-time GPU builds: compile on any machine (no GPU, no driver),
run elsewhere with no MLIR pass pipeline and no ptxas at the first call.

    python -m numba_mlir_gpu.aot mypkg.kernels:saxpy "void(f4[:], f4[:], f4)" \\
        --arch sm_80,sm_90,sm_100 -o build/aot

    numba_mlir_gpu.aot.use("build/aot")     # or NUMBA_MLIR_GPU_AOT=build/aot
    saxpy(x, y, 2.0)                         # loaded from the build

See docs/user-guide.md ("GPU binaries ahead of time").
"""
from .builder import DEFAULT_ARCHS, build, build_here
from .inspect import contents
from . import loading  # noqa: F401  (dispatchers look in the folders in use)
from .store import ENV_AOT, folders, use

__all__ = ["build", "build_here", "use", "folders", "contents", "ENV_AOT", "DEFAULT_ARCHS"]
