"""The two pieces of the CUDA toolkit a GPU build uses: libdevice (math
functions, linked into the kernels by MLIR) and ptxas (PTX -> SASS).

Found in a CUDA toolkit (CUDA_HOME, CUDA_PATH, /usr/local/cuda, ptxas on
PATH) or, with no toolkit installed, in NVIDIA's `nvidia-cuda-nvcc` wheel
(`pip install numba-mlir-gpu[cuda]`), which holds both in the toolkit's own
layout, the place numba-cuda also looks. Neither needs a GPU or a driver.
"""
from __future__ import annotations

import functools
import glob
import os
import shutil
from dataclasses import dataclass
from typing import Optional

LIBDEVICE = os.path.join("nvvm", "libdevice", "libdevice.10.bc")


@dataclass(frozen=True)
class Toolkit:
    libdevice_root: Optional[str]   # a folder holding nvvm/libdevice (MLIR's `toolkit=`)
    ptxas: Optional[str]            # the ptxas executable

    def describe(self) -> str:
        return (f"libdevice from {self.libdevice_root or 'nowhere'}, "
                f"ptxas {self.ptxas or 'not found'}")


SYSTEM_ROOT = "/usr/local/cuda"


def _toolkit_roots() -> list[str]:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), SYSTEM_ROOT]
    on_path = shutil.which("ptxas")
    if on_path:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(on_path))))
    return [r for r in roots if r and os.path.isdir(r)] + _wheel_roots()


def _wheel_roots() -> list[str]:
    """nvidia-cuda-nvcc-cu12 installs nvidia/cuda_nvcc; the CUDA 13 wheels nvidia/cu13."""
    try:
        import nvidia    # a namespace package spread over the nvidia-* wheels
    except ImportError:
        return []
    found = []
    for base in getattr(nvidia, "__path__", []):
        found += sorted(glob.glob(os.path.join(base, "cuda_nvcc"))) + \
            sorted(glob.glob(os.path.join(base, "cu[0-9]*")), reverse=True)
    return [f for f in found if os.path.isdir(f)]


@functools.lru_cache(maxsize=None)
def _find(environment: tuple) -> Toolkit:
    libdevice = ptxas = None
    for root in _toolkit_roots():
        if libdevice is None and os.path.exists(os.path.join(root, LIBDEVICE)):
            libdevice = root
        candidate = os.path.join(root, "bin", "ptxas")
        if ptxas is None and os.access(candidate, os.X_OK):
            ptxas = candidate
    return Toolkit(libdevice, ptxas)


def find_toolkit() -> Toolkit:
    """libdevice and ptxas, each from the first place that has it (looked up
    again when CUDA_HOME, CUDA_PATH or PATH change)."""
    return _find(tuple(os.environ.get(k) for k in ("CUDA_HOME", "CUDA_PATH", "PATH"))
                 + (SYSTEM_ROOT,))
