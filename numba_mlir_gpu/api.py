"""The user-facing helpers: a target-bound `njit` and inspection of what a
signature compiled to."""
from __future__ import annotations

import functools
from typing import Optional

import numba
from numba.core.dispatcher import Dispatcher

from .compiler import CompiledFunction
from .compiler.fp64 import FP64_MODES
from .frontend.dispatch import with_device_shortcut
from .frontend.fallback import UNSUPPORTED_LOOPS, CompiledPath, FallbackFunction
from .frontend.pipeline import PRANGE, MLIRGPUPipeline, pinned_pipeline
from .runtime.streams import check_option
from .targets.choice import TARGETS


@functools.lru_cache(maxsize=None)
def pipeline_for(target: Optional[str], fallback: Optional[bool] = None,
                 unsupported_loops: Optional[str] = None, prange: str = "parallel",
                 fp64: Optional[str] = None) -> type:
    """MLIRGPUPipeline, or a subclass pinned to a target and fallback options.
    `prange="flags"` runs the prange loops of a function compiled without
    `parallel=True` serially, as stock Numba does (the library shim's default)."""
    if target is not None and target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    if unsupported_loops not in (None,) + UNSUPPORTED_LOOPS:
        raise ValueError(f"unsupported_loops must be one of {', '.join(UNSUPPORTED_LOOPS)}, "
                         f"not {unsupported_loops!r}")
    if prange not in PRANGE:
        raise ValueError(f"prange must be one of {', '.join(PRANGE)}, not {prange!r}")
    if fp64 not in (None,) + FP64_MODES:
        raise ValueError(f"fp64 must be one of {', '.join(FP64_MODES)}, not {fp64!r}")
    settings = {"target": target, "fallback": fallback, "unsupported_loops": unsupported_loops,
                "prange": prange, "fp64": None if fp64 == "native" else fp64}
    return pinned_pipeline(tuple((k, v) for k, v in settings.items()
                                 if v != getattr(MLIRGPUPipeline, k)))


def njit(*args, target: Optional[str] = None, fallback: Optional[bool] = None,
         unsupported_loops: Optional[str] = None, fp64: Optional[str] = None,
         stream: Optional[str] = None, **options):
    """`numba.njit` through MLIRGPUPipeline; `target` ("cpu", "gpu",
    "compile-only") overrides $NUMBA_MLIR_GPU_TARGET and device detection.
    `fallback=False` (or $NUMBA_MLIR_GPU_FALLBACK=0) makes host code our
    lowering does not support an error instead of Numba-lowered host code
    around MLIR loops; `unsupported_loops="cpu"` runs parallel loops it
    cannot compile with Numba's CPU parfor lowering, with a warning (default:
    $NUMBA_MLIR_GPU_UNSUPPORTED_LOOPS, else "error").
    `fp64="truncate"` runs float64 arithmetic in GPU kernels as float32
    (arrays keep float64 storage); "auto" does so on GPUs whose float64 rate
    is below 1/8 of float32's (compiler/fp64.py).
    `stream` (GPU): "current" (the default) runs each call on the caller's
    current CuPy or PyTorch stream, "default" always on the legacy default
    stream; a call can also pass `stream=` (a stream object or handle).
    The dispatcher calls compiled code on CuPy arrays directly (dispatch.py)."""
    check_option(stream)
    options["pipeline_class"] = pipeline_for(target, fallback, unsupported_loops, fp64=fp64)
    made = numba.njit(*args, **options)
    if isinstance(made, Dispatcher):
        return with_device_shortcut(made, stream)
    return lambda fn: with_device_shortcut(made(fn), stream)


def compiled_function(dispatcher, signature=None) -> CompiledFunction | FallbackFunction:
    """What one compiled signature of `dispatcher` is made of: the whole
    function's MLIR, or (fallback) its parallel loops'."""
    return _metadata(dispatcher, signature)["numba_mlir_gpu"]


def inspect_path(dispatcher, signature=None) -> CompiledPath:
    """Which path a signature took (the whole function through MLIR, or
    Numba-lowered host code around MLIR loops), why, and per loop."""
    return _metadata(dispatcher, signature)["numba_mlir_gpu_path"]


def _metadata(dispatcher, signature) -> dict:
    overloads = dispatcher.overloads
    if signature is None:
        if len(overloads) != 1:
            raise ValueError(f"{dispatcher.py_func.__name__} has {len(overloads)} compiled "
                             "signatures; pass one of: "
                             + ", ".join(str(s) for s in dispatcher.signatures))
        (cres,) = overloads.values()
    else:
        key = tuple(signature.args) if hasattr(signature, "args") else tuple(signature)
        cres = overloads[key]
    if cres.metadata.get("numba_mlir_gpu") is None:
        raise ValueError("this signature was not compiled by MLIRGPUPipeline")
    return cres.metadata


def inspect_mlir(dispatcher, signature=None, stage: str = "input") -> str:
    """The MLIR of a signature: stage "input" (as lowered from Numba) or
    "lowered" (after the pass pipeline); its first line, a comment, says
    which path the signature took."""
    compiled = compiled_function(dispatcher, signature)
    if stage == "input":
        text = compiled.input_mlir
    elif stage == "lowered":
        text = compiled.lowered_mlir
    else:
        raise ValueError("stage must be 'input' or 'lowered'")
    return f"// {inspect_path(dispatcher, signature).summary()}\n{text}"


def inspect_ptx(dispatcher, signature=None) -> list[str]:
    """The PTX of the GPU kernels of a signature (empty on the CPU target),
    each led by a comment saying which path the signature took."""
    line = f"// {inspect_path(dispatcher, signature).summary()}\n"
    return [line + text for text in compiled_function(dispatcher, signature).ptx]
