"""Building GPU code ahead of time, on a machine that needs no GPU or driver.

The function is compiled for the GPU target as at a first call, except that
the kernels are built for the listed architectures (SASS for each, PTX for
the newest: compiler/gpu_binaries.py) and nothing is JIT-ed or loaded: the
compile result goes straight to the folder (store.py). Numba's part of it
(the wrapper that converts arguments) must be machine code any x86-64 runs,
so the build runs in a process whose Numba targets the generic CPU
(`NUMBA_CPU_NAME=generic`); `build` starts one when this process does not.
"""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Iterable, Sequence

import numba
from numba.core import config, sigutils, types
from numba.core.dispatcher import Dispatcher

from ..api import pipeline_for
from ..compiler.driver import AHEAD_OF_TIME, AheadOfTime
from ..compiler.gpu_binaries import parse_archs
from ..frontend.pipeline import MLIRGPUPipeline
from ..runtime.device_arrays import DeviceArrayType
from .store import AheadOfTimeCache

DEFAULT_ARCHS = "sm_80,sm_90,sm_100"


@dataclass
class Built:
    function: str
    signature: str
    folder: str


def resolve(spec: str):
    """"package.module:function" -> the object (a dispatcher or a function)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{spec!r}: expected module:function")
    found = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found


def _user_pipeline(function) -> type:
    pipeline = getattr(getattr(function, "_compiler", None), "pipeline_class", None)
    if isinstance(pipeline, type) and issubclass(pipeline, MLIRGPUPipeline):
        return pipeline
    return MLIRGPUPipeline


def _gpu_pipeline(user: type) -> type:
    """The user's pipeline settings, pinned to the GPU target."""
    return pipeline_for("gpu", user.fallback, user.unsupported_loops, user.prange, user.fp64)


def _options(function) -> dict:
    """The dispatcher's own options (fastmath, boundscheck, error_model...)."""
    options = dict(getattr(function, "targetoptions", {}))
    for ours in ("pipeline_class", "cache", "nopython"):
        options.pop(ours, None)
    return options


def build_here(function, signatures: Sequence, archs: str, folder: str,
               link: Sequence[str] = (), device_arrays: bool = False) -> list[Built]:
    """Compile `function` for each signature into `folder`, in this process
    (whose Numba must target the generic CPU; `build` sees to it).
    `device_arrays`: the signatures' arrays are GPU arrays (CuPy, PyTorch,
    numba.cuda), which a signature string cannot name."""
    if str(config.CPU_NAME).lower() != "generic":
        raise RuntimeError("an ahead-of-time build needs NUMBA_CPU_NAME=generic in its process "
                           "(numba_mlir_gpu.aot.build and `python -m numba_mlir_gpu.aot` set it)")
    py_func = function.py_func if isinstance(function, Dispatcher) else function
    user = _user_pipeline(function)
    signatures = list(signatures) or list(getattr(function, "signatures", []))
    if not signatures:
        raise ValueError(f"no signature to build {py_func.__qualname__} for: give one, or "
                         "declare them on the decorator")
    links = tuple(os.path.abspath(p) for p in link)
    for path in links:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"device library {path!r} not found")
    pipeline, folder = _gpu_pipeline(user), os.path.abspath(folder)
    builder = numba.njit(pipeline_class=pipeline, **_options(function))(py_func)
    store = AheadOfTimeCache(py_func, pipeline, folder)
    built = []
    token = AHEAD_OF_TIME.set(AheadOfTime(parse_archs(archs), links))
    try:
        for sig in signatures:
            args, _ = sigutils.normalize_signature(sig)
            if device_arrays:
                args = [DeviceArrayType(a.dtype, a.ndim, a.layout, readonly=not a.mutable)
                        if isinstance(a, types.Array) else a for a in args]
            args = tuple(args)
            builder.compile(args)
            cres = builder.overloads[args]
            store.write(args, cres)
            built.append(Built(py_func.__qualname__, str(cres.signature), folder))
    finally:
        AHEAD_OF_TIME.reset(token)
    return built


def build(spec: str, signatures: Iterable[str] = (), archs: str = DEFAULT_ARCHS,
          folder: str = "aot", link: Sequence[str] = (), device_arrays: bool = False) -> str:
    """Build `spec` ("module:function") for `signatures` (Numba signature
    strings; none: the ones its decorator declares) and the architectures
    `archs` ("sm_80,sm_90") into `folder`, in a fresh process with no GPU
    needed; returns that process's report. Raises CalledProcessError with its
    output when the build fails."""
    command = [sys.executable, "-m", "numba_mlir_gpu.aot", spec, *signatures,
               "--arch", archs, "-o", folder] + [a for p in link for a in ("--link", p)] + \
        (["--device-arrays"] if device_arrays else [])
    done = subprocess.run(command, capture_output=True, text=True,
                          env=dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CPU_FEATURES=""))
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, command, done.stdout, done.stderr)
    return done.stdout
