"""Which GPU a call runs on: the device of its data.

A call whose GPU arrays live on device N runs on device N: the dispatcher
(frontend/dispatch.py) makes N's primary context current for the call and
puts the previous one back after it. The GPU runtime then allocates from
N's pool, and loads each GPU binary into N's context on its first launch
there (runtime/device.py). Arrays on two devices in one call are an error.
A call with NumPy arrays only runs on the current device: that of the
thread's current context, which is CuPy's and the CUDA runtime's current
device (device 0 where none is current).

Only machines with several GPUs pay for any of this (`several_devices`).
"""
from __future__ import annotations

from typing import Iterable, Optional

from .cuda import device_count, pointer_device
from .device_arrays import _interface, _is_cupy


class MixedDevicesError(ValueError):
    """GPU arrays of one call live on different devices."""


def several_devices() -> bool:
    return device_count() > 1


def array_device(value) -> Optional[int]:
    """The device `value`'s data lives on, or None for anything that is not
    a GPU array (NumPy arrays, numbers)."""
    cls = type(value)
    if _is_cupy(cls):
        return value.data.device_id
    if cls.__module__.startswith("torch") and getattr(value, "is_cuda", False):
        return value.device.index
    if not hasattr(cls, "__cuda_array_interface__"):
        return None
    described = _interface(value)
    if described is None or not described["data"][0]:
        return None               # an empty array: no memory, any device will do
    return pointer_device(described["data"][0])


def data_device(values: Iterable) -> Optional[int]:
    """The one device of the GPU arrays among `values` (arguments, and the
    items of tuple and list arguments); None when there are none."""
    found: dict[int, int] = {}
    for position, value in enumerate(values):
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            device = array_device(item)
            if device is not None:
                found.setdefault(device, position)
    if len(found) > 1:
        where = ", ".join(f"argument {position} on device {device}"
                          for device, position in sorted(found.items()))
        raise MixedDevicesError(
            f"numba-mlir-gpu: the GPU arrays of one call must live on one device ({where}); "
            "copy them to one device first (e.g. cupy.asarray inside `with cupy.cuda.Device(n)`)")
    return next(iter(found), None)
