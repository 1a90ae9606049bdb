"""The user-facing helpers: a target-bound `njit` and inspection of what a
signature compiled to."""
from __future__ import annotations

import functools
from typing import Optional

import numba
from numba.core.dispatcher import Dispatcher

from .compiler import CompiledFunction
from .frontend.dispatch import with_device_shortcut
from .frontend.pipeline import MLIRGPUPipeline
from .targets.choice import TARGETS


@functools.lru_cache(maxsize=None)
def pipeline_for(target: Optional[str]) -> type:
    """MLIRGPUPipeline, or a subclass pinned to one target."""
    if target is None:
        return MLIRGPUPipeline
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    return type(f"MLIRGPUPipeline_{target.replace('-', '_')}", (MLIRGPUPipeline,),
                {"target": target})


def njit(*args, target: Optional[str] = None, **options):
    """`numba.njit` through MLIRGPUPipeline; `target` ("cpu", "gpu",
    "compile-only") overrides $NUMBA_MLIR_GPU_TARGET and device detection.
    The dispatcher calls compiled code on CuPy arrays directly (dispatch.py)."""
    options["pipeline_class"] = pipeline_for(target)
    made = numba.njit(*args, **options)
    if isinstance(made, Dispatcher):
        return with_device_shortcut(made)
    return lambda fn: with_device_shortcut(made(fn))


def compiled_function(dispatcher, signature=None) -> CompiledFunction:
    """What one compiled signature of `dispatcher` is made of."""
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
    compiled = cres.metadata.get("numba_mlir_gpu")
    if compiled is None:
        raise ValueError("this signature was not compiled by MLIRGPUPipeline")
    return compiled


def inspect_mlir(dispatcher, signature=None, stage: str = "input") -> str:
    """The MLIR of a signature: stage "input" (as lowered from Numba) or
    "lowered" (after the pass pipeline)."""
    compiled = compiled_function(dispatcher, signature)
    if stage == "input":
        return compiled.input_mlir
    if stage == "lowered":
        return compiled.lowered_mlir
    raise ValueError("stage must be 'input' or 'lowered'")


def inspect_ptx(dispatcher, signature=None) -> list[str]:
    """The PTX of the GPU kernels of a signature (empty on the CPU target)."""
    return compiled_function(dispatcher, signature).ptx
