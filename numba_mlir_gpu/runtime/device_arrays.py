"""Arrays that already live on the GPU: anything with `__cuda_array_interface__`.

numba.cuda device arrays, CuPy arrays and PyTorch CUDA tensors are typed as
`DeviceArrayType` (an Array whose data pointer is a device pointer) and are
passed to compiled code in place, with no copy. Unboxing reads the pointer,
shape and strides straight into Numba's array struct (CuPy arrays through
their own attributes, which is cheaper than building the interface dict);
the original object is the struct's parent, so returning the argument gives
back the same object. Arrays a GPU function computes from device arrays are
returned on the device too: a CuPy array when CuPy is importable, else an
object exposing `__cuda_array_interface__`.
"""
from __future__ import annotations

import abc

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.datamodel import models, register_default
from numba.core.extending import NativeValue, box, typeof_impl, unbox
from numba.np.arrayobj import populate_array
from numba.core.typing.typeof import Purpose

from .streams import set_thread_stream, stream_object, thread_stream


class DeviceArrayType(types.Array):
    """A NumPy-like array in GPU memory (typed like an Array, data on device)."""

    def __init__(self, dtype, ndim, layout, readonly=False, aligned=True):
        name = f"device_array({dtype}, {ndim}d, {layout})"
        super().__init__(dtype, ndim, layout, readonly=readonly, name=name, aligned=aligned)
        self._hash = hash(self.key)

    def __hash__(self):
        # Numba's dispatcher hashes each argument's type on every call
        # (Dispatcher.typeof_pyval); Type.__hash__ rebuilds the key tuple.
        return self._hash

    def copy(self, dtype=None, ndim=None, layout=None, readonly=None):
        # Arrays derived from a device array (empty_like, ...) are new
        # allocations: plain arrays in memory both sides can reach.
        return types.Array(dtype or self.dtype, self.ndim if ndim is None else ndim,
                           layout or self.layout,
                           readonly=self.mutable is False if readonly is None else readonly)

    @property
    def box_type(self):
        return np.ndarray


# Numba's own rewrites (array expressions into one fused loop) take only
# types defined inside Numba ("internal"); a device array is an array to them.
DeviceArrayType._is_internal = True

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


_CUPY_TYPES: set = set()


def _is_cupy(cls) -> bool:
    if cls in _CUPY_TYPES:
        return True
    if cls.__name__ == "ndarray" and cls.__module__.split(".")[0] == "cupy":
        _CUPY_TYPES.add(cls)
        return True
    return False


_TYPES: dict = {}


def _cupy_key(val) -> tuple:
    """The `_TYPES` key of a CuPy array, from its own attributes (building
    the interface dict costs more)."""
    contiguous = getattr(val, "_c_contiguous", None)   # CuPy's C attribute
    if contiguous is None:
        contiguous = val.flags.c_contiguous
    return val.dtype, val.ndim, contiguous, False


@typeof_impl.register(CudaArrayLike)
def typeof_cuda_array(val, c):
    if _is_cupy(type(val)):
        key = _cupy_key(val)
    else:
        desc = _interface(val)
        if desc is None:
            return None
        dtype = np.dtype(desc["typestr"])
        key = (dtype, len(desc["shape"]),
               _layout(desc["shape"], desc.get("strides"), dtype.itemsize) == "C",
               bool(desc["data"][1]))
    try:
        return _TYPES[key]
    except KeyError:
        pass
    from numba.np import numpy_support
    dtype, ndim, contiguous, readonly = key
    ty = DeviceArrayType(numpy_support.from_dtype(np.dtype(dtype)), ndim,
                         "C" if contiguous else "A", readonly=readonly)
    _TYPES[key] = ty
    return ty


def _install_fast_typing() -> None:
    """Numba's dispatcher types a CuPy argument in Python on every call (its
    C fingerprint does not know the class): `Dispatcher.typeof_pyval`, then
    `typeof`, a typing context and a `singledispatch` lookup, about 2 us an
    argument. Answer CuPy arrays of a known type from `_TYPES` first; the
    types there live for the process, which is what the dispatcher's
    `_types_active_call` would otherwise ensure."""
    from numba.core.dispatcher import Dispatcher
    general = Dispatcher.typeof_pyval
    if getattr(general, "_numba_mlir_gpu", False):
        return

    def typeof_pyval(self, val):
        if type(val) in _CUPY_TYPES:
            try:     # _cupy_key inlined: a Python call is a tenth of the saving
                ty = _TYPES.get((val.dtype, val.ndim, val._c_contiguous, False))
            except AttributeError:
                ty = None
            if ty is not None:
                return ty
        return general(self, val)

    typeof_pyval._numba_mlir_gpu = True
    typeof_pyval.__doc__ = general.__doc__
    Dispatcher.typeof_pyval = typeof_pyval


_install_fast_typing()


def device_fields(obj) -> tuple:
    """(data pointer, shape, strides in bytes or None when C-contiguous)."""
    if _is_cupy(type(obj)):
        return obj.data.ptr, obj.shape, obj.strides
    desc = obj.__cuda_array_interface__
    return desc["data"][0] or 0, desc["shape"], desc.get("strides")


@unbox(DeviceArrayType)
def unbox_device_array(typ, obj, c):
    """Numba's array struct over the device pointer, no meminfo (the caller
    owns the buffer for the duration of the call), parent = the object."""
    context, builder, pyapi = c.context, c.builder, c.pyapi
    fields = pyapi.call_function_objargs(_unpickled_once(c, device_fields), [obj])
    ary = context.make_array(typ)(context, builder)
    failed = cgutils.is_null(builder, fields)
    with builder.if_then(builder.not_(failed), likely=True):
        itemsize = context.get_abi_sizeof(context.get_data_type(typ.dtype))
        data = pyapi.long_as_voidptr(pyapi.tuple_getitem(fields, 0))
        shape_t = pyapi.tuple_getitem(fields, 1)
        shape = [pyapi.long_as_longlong(pyapi.tuple_getitem(shape_t, i))
                 for i in range(typ.ndim)]
        strides_t = pyapi.tuple_getitem(fields, 2)
        contiguous = _c_strides(builder, shape, itemsize)
        strides = []
        is_none = builder.icmp_unsigned("==", strides_t, pyapi.borrow_none())
        for i in range(typ.ndim):
            slot = cgutils.alloca_once_value(builder, contiguous[i])
            with builder.if_then(builder.not_(is_none)):
                builder.store(pyapi.long_as_longlong(pyapi.tuple_getitem(strides_t, i)), slot)
            strides.append(builder.load(slot))
        populate_array(ary, data=builder.bitcast(data, ary.data.type), shape=shape,
                       strides=strides, itemsize=context.get_constant(types.intp, itemsize),
                       meminfo=None, parent=obj)
        pyapi.decref(fields)
    return NativeValue(ary._getvalue(), is_error=failed)


def _unpickled_once(c, fn):
    """`fn`, unpickled on the first call in this process and kept in a global
    of the module (Numba's `unserialize` on every call costs a Python call and
    a copy of the pickle, per argument, per call)."""
    builder, pyapi = c.builder, c.pyapi
    name = f"numba_mlir_gpu_{fn.__name__}"
    slot = builder.module.globals.get(name)
    if slot is None:
        slot = ir.GlobalVariable(builder.module, pyapi.pyobj, name)
        slot.linkage = "internal"
        slot.initializer = ir.Constant(pyapi.pyobj, None)
    with builder.if_then(cgutils.is_null(builder, builder.load(slot)), likely=False):
        # the reference is kept for the life of the process
        builder.store(pyapi.unserialize(pyapi.serialize_object(fn)), slot)
    return builder.load(slot)


def _c_strides(builder, shape, itemsize: int) -> list:
    strides, acc = [], ir.Constant(ir.IntType(64), itemsize)
    for extent in reversed(shape):
        strides.insert(0, acc)
        acc = builder.mul(acc, extent)
    return strides


class FreedOnItsStream:
    """What a call's result array holds on to: Numba's MemInfo of its memory,
    released, when the last array over it dies, with the thread's stream set
    to the one the call ran on. The runtime frees device memory in the order
    of the thread's stream (nmg_free), which outside a call is the legacy
    default stream, and that does not wait for a non-blocking stream's
    kernels: one still reading the array raced with whatever the memory pool
    gave the memory to next (tests/test_streams.py). The stream's object
    (the call's `stream=` or the current CuPy or PyTorch stream) is kept
    until then: the stream dies with it. A stream passed as a number must
    outlive the arrays the call returns."""
    __slots__ = ("_meminfo", "_stream", "_stream_object")

    def __init__(self, meminfo):
        self._meminfo = meminfo
        self._stream = thread_stream()
        self._stream_object = stream_object(self._stream)

    def __del__(self):
        try:
            previous = set_thread_stream(self._stream)
        except Exception:       # noqa: BLE001  (interpreter shutdown: free as we can)
            self._meminfo = None
            return
        try:
            self._meminfo = None
        finally:
            set_thread_stream(previous)


def wrap_device_result(owner, ptr: int, shape: tuple, strides: tuple, dtype):
    """A fresh array on the GPU, handed to Python: `owner` (Numba's MemInfo)
    frees it, in the order of the call's stream, when the returned object dies."""
    owner = FreedOnItsStream(owner)
    nbytes = dtype.itemsize
    for extent in shape:
        nbytes *= extent
    try:
        import cupy
    except ImportError:
        return DeviceResult(owner, ptr, shape, strides, dtype)
    memory = cupy.cuda.UnownedMemory(ptr, max(nbytes, 1), owner)
    return cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(memory, 0), strides)


class DeviceResult:
    """A GPU array without CuPy: use it through `__cuda_array_interface__`
    (cupy.asarray, numba.cuda.as_cuda_array, torch.as_tensor)."""

    def __init__(self, owner, ptr, shape, strides, dtype):
        self._owner = owner
        self.shape, self.strides, self.dtype = tuple(shape), tuple(strides), np.dtype(dtype)
        self.__cuda_array_interface__ = {
            "shape": self.shape, "strides": self.strides, "typestr": self.dtype.str,
            # the stream the call ran on (1: the legacy default stream), for
            # consumers to order their work after it
            "data": (ptr, False), "version": 3, "stream": thread_stream() or 1,
        }

    def __repr__(self):
        return f"DeviceResult(shape={self.shape}, dtype={self.dtype})"


@box(DeviceArrayType)
def box_device_array(typ, val, c):
    """The argument object itself when the array is one; else a new device
    array owning the result's memory."""
    context, builder, pyapi = c.context, c.builder, c.pyapi
    ary = context.make_array(typ)(context, builder, val)
    result = cgutils.alloca_once(builder, pyapi.pyobj)
    has_parent = cgutils.is_not_null(builder, ary.parent)
    with builder.if_else(has_parent) as (passed_in, fresh):
        with passed_in:
            pyapi.incref(ary.parent)
            builder.store(ary.parent, result)
            context.nrt.decref(builder, typ, val)
        with fresh:
            owner = pyapi.nrt_meminfo_as_pyobject(ary.meminfo)   # takes the reference
            ptr = pyapi.long_from_ulonglong(builder.ptrtoint(ary.data, ir.IntType(64)))
            shape = pyapi.tuple_pack([pyapi.long_from_longlong(v) for v in
                                      cgutils.unpack_tuple(builder, ary.shape, typ.ndim)])
            strides = pyapi.tuple_pack([pyapi.long_from_longlong(v) for v in
                                        cgutils.unpack_tuple(builder, ary.strides, typ.ndim)])
            dtype = pyapi.unserialize(pyapi.serialize_object(np.dtype(str(typ.dtype))))
            fn = pyapi.unserialize(pyapi.serialize_object(wrap_device_result))
            obj = pyapi.call_function_objargs(fn, [owner, ptr, shape, strides, dtype])
            for tmp in (owner, ptr, shape, strides, dtype, fn):
                pyapi.decref(tmp)
            builder.store(obj, result)
    return builder.load(result)


def device_result_type(restype, origins, argtypes=()):
    """`restype` with each array on the GPU typed as a device array, so that
    it is boxed there: the arrays the function allocates (origin None), and
    device array arguments returned as they are (`a.ravel()` of a contiguous
    CuPy array is `a`; boxed as a NumPy array, it would point at device memory)."""
    if isinstance(restype, types.BaseTuple):
        return types.Tuple([device_result_type(t, origins, argtypes) for t in restype.types])
    if isinstance(restype, types.Array) and not isinstance(restype, DeviceArrayType):
        origin = next(origins)
        if origin is None or isinstance(argtypes[origin], DeviceArrayType):
            return DeviceArrayType(restype.dtype, restype.ndim, restype.layout,
                                   readonly=not restype.mutable)
        return restype
    if isinstance(restype, types.Array):
        next(origins)
    return restype


__all__ = ["DeviceArrayType", "DeviceResult", "Purpose"]
