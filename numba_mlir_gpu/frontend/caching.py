"""`cache=True`: Numba's on-disk cache, keyed also by what compiled the code.

Numba keys a cached overload by its signature, the machine and the
function's bytecode, not by the compiler pipeline. A function compiled by
Numba's own lowering and then decorated with ours (or compiled for the CPU
target, then run where the GPU target is chosen) would load the other's
code. Dispatchers whose pipeline is MLIRGPUPipeline get a cache whose key
adds this package, its version, the target the pipeline compiles for now
and its fallback settings.
"""
from __future__ import annotations

import os
import warnings

from numba.core import errors
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher

from .._version import __version__
from ..targets.choice import choose_target
from .fallback import fallback_allowed, unsupported_loops_setting
from .pipeline import MLIRGPUPipeline


class MLIRFunctionCache(FunctionCache):
    """FunctionCache whose index key names the package and the target."""

    def __init__(self, py_func, pipeline: type):
        super().__init__(py_func)
        self._pipeline = pipeline

    def load_overload(self, sig, target_context):
        """The cached overload, or None (compile again) when its index or data
        file cannot be read: truncated by a killed writer, corrupted, or from
        another version of a dependency. Numba's own cache raises there."""
        try:
            return super().load_overload(sig, target_context)
        except Exception as exc:  # noqa: BLE001  (any unreadable entry)
            self._warn_unreadable(exc, "compiling it again")
            return None

    def save_overload(self, sig, data):
        """Numba's save, which reads the index first: an unreadable index is
        replaced by a new one instead of failing the compilation."""
        try:
            super().save_overload(sig, data)
            return
        except Exception as exc:  # noqa: BLE001
            self._warn_unreadable(exc, "writing a new index")
        try:
            os.remove(self._cache_file._index_path)
            super().save_overload(sig, data)
        except Exception as exc:  # noqa: BLE001  (the function still runs, uncached)
            self._warn_unreadable(exc, "not caching this signature")

    def _warn_unreadable(self, exc: Exception, action: str) -> None:
        warnings.warn(errors.NumbaWarning(
            f"numba-mlir-gpu: the on-disk cache of {self._py_func.__qualname__} in "
            f"{self._cache_path} could not be read ({type(exc).__name__}: {exc}); {action}"))

    def _index_key(self, sig, codegen):
        pipeline = self._pipeline
        target = choose_target(pipeline.target).name
        fallback = fallback_allowed({"numba_mlir_gpu_fallback": pipeline.fallback})
        return super()._index_key(sig, codegen) + (
            ("numba_mlir_gpu", __version__, target, fallback,
             unsupported_loops_setting(pipeline.unsupported_loops),
             pipeline.prange, pipeline.fp64),)


def _install() -> None:
    """Dispatcher.enable_caching, for dispatchers of our pipeline, makes an
    MLIRFunctionCache (numba.njit(pipeline_class=...) calls it on its own)."""
    general = Dispatcher.enable_caching
    if getattr(general, "_numba_mlir_gpu", False):
        return

    def enable_caching(self):
        if is_ours(self):
            self._cache = MLIRFunctionCache(self.py_func, self._compiler.pipeline_class)
        else:
            general(self)

    enable_caching._numba_mlir_gpu = True
    enable_caching.__doc__ = general.__doc__
    Dispatcher.enable_caching = enable_caching


def is_ours(dispatcher) -> bool:
    """Is this a dispatcher of MLIRGPUPipeline (or a subclass)?"""
    pipeline = getattr(getattr(dispatcher, "_compiler", None), "pipeline_class", None)
    return isinstance(pipeline, type) and issubclass(pipeline, MLIRGPUPipeline)


_install()
