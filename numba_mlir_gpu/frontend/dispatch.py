"""A shorter way from a call to compiled code, for calls on CuPy arrays.

Numba's C dispatcher types each argument by its fingerprint; it cannot
fingerprint a CuPy array (CuPy's buffer export raises, twice) and then asks
Python. On the H100 host that costs about 2.2 us per CuPy argument, as much
as our kernel launch. `numba_mlir_gpu.njit` returns Numba's own dispatcher
with one more step in front: when every argument is a CuPy array (or a
Python or NumPy number) of a type already in the dispatcher's `overloads`,
the compiled entry point is called directly. Anything else (new types,
keywords, omitted arguments, other objects) goes to Numba's dispatcher, which
compiles, converts and raises as usual. The entry point is the one Numba's
dispatcher would pick: an exact match of the argument types.

Three more jobs of this dispatcher:

* The device (runtime/devices.py): on a machine with several GPUs, a call
  whose GPU arrays live on device N runs with N's primary context current
  (and the previous context back after it); arrays on two devices are an
  error. NumPy-only calls run on the current device.
* The stream (runtime/streams.py): each call sets the calling thread's
  stream for the GPU runtime (njit's `stream=` option, or a `stream=`
  keyword of the call, else the caller's current CuPy or PyTorch stream)
  and puts the previous one back after it. It is chosen here, per call and
  per thread, and not at compile time, so one compiled function serves any
  stream and a cached function never names one.
* Pickling (Dask, multiprocessing): Numba's dispatcher pickles its Python
  function, locals and target options but not its pipeline class, nor
  whether it caches; without them an unpickled function would compile
  through Numba's own lowering, uncached. This one pickles both, and the
  stream option.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from numba.core import types
from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher

from ..runtime.device_arrays import _CUPY_TYPES, _TYPES
from ..runtime.cuda import current_device, device_count, primary_context, swap_context
from ..runtime.devices import data_device, several_devices
from ..runtime.streams import (check_option, given_stream, set_thread_stream, stream_handle,
                                thread_stream)
from .pipeline import pinned_pipeline

# Numbers typed as numba.typeof types them (Python ints are not here: their
# type depends on their size).
_SCALARS = {float: types.float64, bool: types.boolean, np.bool_: types.boolean,
            **{np.dtype(t).type: getattr(types, t)
               for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                         "uint64", "float32", "float64")}}


class DeviceArrayDispatcher(CPUDispatcher):
    """Numba's CPU dispatcher, typing CuPy arrays and numbers itself first,
    running each call on its stream, pickling its pipeline."""

    stream_option: Optional[str] = None     # njit(stream=...): None is "current"
    # no GPU in this process, or pinned to the CPU target: no stream, no device
    # (worked out on the first call; each check costs microseconds per call)
    _host_only: Optional[bool] = None

    def __call__(self, *args, **kws):
        stream = self.stream_option
        if kws and "stream" in kws and "stream" not in self._compiler.pysig.parameters:
            stream = kws.pop("stream")
        host_only = self._host_only
        if host_only is None:
            host_only = self._host_only = (
                device_count() == 0
                or getattr(self._compiler.pipeline_class, "target", None) == "cpu")
        if host_only:      # CuPy-typed arguments (none seen yet: none to look for)
            return self._call(args, kws) if _CUPY_TYPES else CPUDispatcher.__call__(
                self, *args, **kws)
        if not several_devices():
            return self._on_stream(stream, None, args, kws)
        device = data_device(args + tuple(kws.values()))
        if device is None or device == current_device():
            return self._on_stream(stream, device, args, kws)
        previous = swap_context(primary_context(device))
        try:
            return self._on_stream(stream, device, args, kws)
        finally:
            swap_context(previous)

    def _on_stream(self, stream, device: Optional[int], args: tuple, kws: dict):
        handle = stream_handle(stream, device)
        if isinstance(stream, (str, int, type(None))):
            if handle == thread_stream():
                return self._call(args, kws)
            stream = None
        # a stream object given to the call: the arrays it returns keep it
        # alive until they are freed on it (device_arrays.FreedOnItsStream)
        previous, previous_given = set_thread_stream(handle), given_stream(stream)
        try:
            return self._call(args, kws)
        finally:
            set_thread_stream(previous)
            given_stream(previous_given)

    def _call(self, args: tuple, kws: dict):
        if not kws:
            key = []
            for value in args:
                cls = type(value)
                if cls in _CUPY_TYPES:
                    ty = _TYPES.get((value.dtype, value.ndim, value._c_contiguous, False))
                else:
                    ty = _SCALARS.get(cls)
                if ty is None:
                    break
                key.append(ty)
            else:
                compiled = self.overloads.get(tuple(key))
                if compiled is not None:
                    return compiled.entry_point(*args)
        return super().__call__(*args, **kws)

    # -- pickling (Numba's ReduceMixin protocol) -------------------------------

    def _reduce_states(self) -> dict:
        states = super()._reduce_states()
        pipeline = self._compiler.pipeline_class
        # a class pipeline_for made is sent as its settings (see pinned_pipeline)
        states["pipeline"] = getattr(pipeline, "_pinned", pipeline)
        states["cached"] = not isinstance(self._cache, NullCache)
        states["stream_option"] = self.stream_option
        return states

    @classmethod
    def _rebuild(cls, uuid, py_func, locals, targetoptions, can_compile, sigs,
                 pipeline=None, cached=False, stream_option=None):
        try:
            return cls._memo[uuid]
        except KeyError:
            pass
        if isinstance(pipeline, tuple):
            pipeline = pinned_pipeline(pipeline)
        self = cls(py_func, locals, targetoptions, pipeline_class=pipeline)
        self.stream_option = stream_option
        if cached:
            self.enable_caching()
        self._set_uuid(uuid)
        for sig in sigs:
            self.compile(sig)
        self._can_compile = can_compile
        return self


def with_device_shortcut(dispatcher, stream: Optional[str] = None):
    """`dispatcher` (a CPUDispatcher, as numba.njit makes) as a
    DeviceArrayDispatcher, running on `stream` (njit's option)."""
    if type(dispatcher) is CPUDispatcher:
        dispatcher.__class__ = DeviceArrayDispatcher
    if isinstance(dispatcher, DeviceArrayDispatcher):
        dispatcher.stream_option = check_option(stream)
    return dispatcher
