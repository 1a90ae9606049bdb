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

from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher

from .._version import __version__
from ..targets.choice import choose_target
from .fallback import fallback_allowed
from .pipeline import MLIRGPUPipeline


class MLIRFunctionCache(FunctionCache):
    """FunctionCache whose index key names the package and the target."""

    def __init__(self, py_func, pipeline: type):
        super().__init__(py_func)
        self._pipeline = pipeline

    def _index_key(self, sig, codegen):
        pipeline = self._pipeline
        target = choose_target(pipeline.target).name
        fallback = fallback_allowed({"numba_mlir_gpu_fallback": pipeline.fallback})
        return super()._index_key(sig, codegen) + (
            ("numba_mlir_gpu", __version__, target, fallback, pipeline.unsupported_loops),)


def _install() -> None:
    """Dispatcher.enable_caching, for dispatchers of our pipeline, makes an
    MLIRFunctionCache (numba.njit(pipeline_class=...) calls it on its own)."""
    general = Dispatcher.enable_caching
    if getattr(general, "_numba_mlir_gpu", False):
        return

    def enable_caching(self):
        pipeline = getattr(getattr(self, "_compiler", None), "pipeline_class", None)
        if isinstance(pipeline, type) and issubclass(pipeline, MLIRGPUPipeline):
            self._cache = MLIRFunctionCache(self.py_func, pipeline)
        else:
            general(self)

    enable_caching._numba_mlir_gpu = True
    enable_caching.__doc__ = general.__doc__
    Dispatcher.enable_caching = enable_caching


_install()
