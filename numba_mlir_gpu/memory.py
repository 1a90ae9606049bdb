"""Arrays that already live on the GPU: anything with `__cuda_array_interface__`.

numba.cuda device arrays, CuPy arrays and PyTorch CUDA tensors are typed as
`DeviceArrayType` (an Array whose data pointer is a device pointer) and are
passed to compiled code in place, with no copy. They are unboxed through a
NumPy view of the device pointer (never dereferenced on the host), which
keeps the original object alive for the duration of the call.
"""
from __future__ import annotations

import abc

import numpy as np
from numba.core import types
from numba.core.boxing import unbox_array
from numba.core.datamodel import models, register_default
from numba.core.extending import typeof_impl, unbox
from numba.core.typing.typeof import Purpose


class DeviceArrayType(types.Array):
    """A NumPy-like array in GPU memory (typed like an Array, data on device)."""

    def __init__(self, dtype, ndim, layout, readonly=False, aligned=True):
        name = f"device_array({dtype}, {ndim}d, {layout})"
        super().__init__(dtype, ndim, layout, readonly=readonly, name=name, aligned=aligned)

    def copy(self, dtype=None, ndim=None, layout=None, readonly=None):
        # Arrays derived from a device array (empty_like, ...) are new
        # allocations: plain arrays in memory both sides can reach.
        return types.Array(dtype or self.dtype, self.ndim if ndim is None else ndim,
                           layout or self.layout,
                           readonly=self.mutable is False if readonly is None else readonly)

    @property
    def box_type(self):
        return np.ndarray


register_default(DeviceArrayType)(models.ArrayModel)


class CudaArrayLike(abc.ABC):
    """Classes exposing `__cuda_array_interface__` (checked structurally, so
    no GPU library has to be imported to register them)."""

    @classmethod
    def __subclasshook__(cls, other):
        if cls is CudaArrayLike and any("__cuda_array_interface__" in vars(k)
                                        for k in other.__mro__):
            return True
        return NotImplemented


def _interface(obj) -> dict | None:
    try:
        return obj.__cuda_array_interface__
    except (AttributeError, RuntimeError, TypeError):
        return None       # e.g. a PyTorch tensor on the CPU


def _layout(shape, strides, itemsize) -> str:
    if strides is None:
        return "C"
    c_strides, acc = [], itemsize
    for extent in reversed(shape):
        c_strides.insert(0, acc)
        acc *= extent
    return "C" if tuple(strides) == tuple(c_strides) else "A"


@typeof_impl.register(CudaArrayLike)
def typeof_cuda_array(val, c):
    desc = _interface(val)
    if desc is None:
        return None
    dtype = np.dtype(desc["typestr"])
    from numba.np import numpy_support
    return DeviceArrayType(numpy_support.from_dtype(dtype), len(desc["shape"]),
                           _layout(desc["shape"], desc.get("strides"), dtype.itemsize),
                           readonly=bool(desc["data"][1]))


class _DeviceBuffer:
    """Presents a device buffer through `__array_interface__` so that NumPy
    can describe it; holds the owner alive."""

    def __init__(self, owner, desc):
        self.owner = owner
        self.__array_interface__ = {
            "shape": tuple(desc["shape"]), "typestr": np.dtype(desc["typestr"]).str,
            "data": (desc["data"][0] or 0, False), "strides": desc.get("strides"),
            "version": 3,
        }


def device_view(obj) -> np.ndarray:
    """A NumPy array whose data pointer is `obj`'s device pointer."""
    return np.asarray(_DeviceBuffer(obj, obj.__cuda_array_interface__))


@unbox(DeviceArrayType)
def unbox_device_array(typ, obj, c):
    fn = c.pyapi.unserialize(c.pyapi.serialize_object(device_view))
    view = c.pyapi.call_function_objargs(fn, [obj])
    c.pyapi.decref(fn)
    native = unbox_array(types.Array(typ.dtype, typ.ndim, typ.layout), view, c)
    c.pyapi.decref(view)
    return native


__all__ = ["DeviceArrayType", "Purpose"]
