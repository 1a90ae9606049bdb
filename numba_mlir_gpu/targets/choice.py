"""Which target compiled code runs on: the pipeline's option, else
$NUMBA_MLIR_GPU_TARGET, else the GPU when a CUDA device is present."""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Optional

from ..runtime import cuda

TARGETS = ("cpu", "gpu", "compile-only")
ENV_TARGET = "NUMBA_MLIR_GPU_TARGET"


class NoGPUWarning(UserWarning):
    """No CUDA device was found, so compiled functions run on the CPU."""


@dataclass(frozen=True)
class TargetChoice:
    name: str            # "cpu", "gpu" or "compile-only"

    @property
    def builds_gpu_code(self) -> bool:
        return self.name in ("gpu", "compile-only")

    @property
    def runs(self) -> bool:
        return self.name != "compile-only"


_warned_no_gpu = False


def choose_target(requested: Optional[str] = None) -> TargetChoice:
    """The explicit option, else $NUMBA_MLIR_GPU_TARGET, else the GPU when a
    CUDA device is present and the CPU (with one warning) when not."""
    global _warned_no_gpu
    name = requested or os.environ.get(ENV_TARGET, "").strip().lower() or None
    if name is not None:
        if name not in TARGETS:
            raise ValueError(f"unknown target {name!r}; expected one of {', '.join(TARGETS)}")
        return TargetChoice(name)
    if cuda.cuda_device_available():
        return TargetChoice("gpu")
    if not _warned_no_gpu:
        _warned_no_gpu = True
        warnings.warn("numba-mlir-gpu: no CUDA device found; compiled functions run on "
                      f"the CPU (set {ENV_TARGET}=cpu to silence this)", NoGPUWarning,
                      stacklevel=3)
    return TargetChoice("cpu")
