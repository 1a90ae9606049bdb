"""The Numba side of a compiled function: a small LLVM function in Numba's
own calling convention that calls the JIT-ed MLIR entry.

Numba's dispatcher, type-based overload cache, Python wrapper and calls from
other Numba functions all go through this function, so ours behaves like
any Numba-compiled function. Arrays the MLIR code returns become NRT-owned
(a MemInfo whose destructor frees them with the target's allocator).
"""
from __future__ import annotations

import ctypes
import functools

from llvmlite import ir as llir
from numba.core import cgutils, lowering, types
from numba.core.runtime import _nrt_python
from numba.np.arrayobj import populate_array

from ..compiler.jit import array_destructor_symbol
from ..lowering.types import flat_types, is_fortran, is_optional_array, is_static
from ..lowering.values import ReturnPlan
from ..runtime.device import FAILURE_FAULT, FAILURE_LAUNCH, FAILURE_OUT_OF_MEMORY
from ..runtime.device_arrays import DeviceArrayType

_I8P = llir.IntType(8).as_pointer()
_I64 = llir.IntType(64)


MANAGE_MEMORY = "numba_mlir_gpu_NRT_manage_memory"


@functools.lru_cache(maxsize=None)
def _register_nrt_manage_memory() -> None:
    """NRT's `MemInfo *manage_memory(void *data, void (*dtor)(void *))` (third
    entry of the NRT_api_functions table) as a symbol Numba's linker resolves
    in each process (an address baked into the wrapper would defeat caching)."""
    from llvmlite import binding as ll
    get_api = ctypes.CFUNCTYPE(ctypes.c_void_p)(_nrt_python.c_helpers["get_api"])
    table = ctypes.cast(get_api(), ctypes.POINTER(ctypes.c_void_p))
    ll.add_symbol(MANAGE_MEMORY, table[2])


_register_nrt_manage_memory()

# Failures the GPU runtime records (runtime/device.py), raised after the call.
_GPU_FAILURES = {
    FAILURE_OUT_OF_MEMORY: (MemoryError, (
        "numba-mlir-gpu: out of GPU memory (a device allocation failed)",)),
    FAILURE_LAUNCH: (RuntimeError, ("numba-mlir-gpu: a GPU kernel launch failed",)),
    FAILURE_FAULT: (RuntimeError, (
        "numba-mlir-gpu: a GPU kernel faulted (CUDA reported an error at the next "
        "synchronisation or copy; an index far outside an array does this: compile with "
        "boundscheck=True to get an IndexError naming the array). CUDA leaves this "
        "process's GPU context unusable",)),
}


class CompileOnlyError(RuntimeError):
    """Calling a function compiled for the 'compile-only' target."""


def _memref_struct(ndim: int) -> llir.LiteralStructType:
    dims = llir.ArrayType(_I64, ndim)
    return llir.LiteralStructType([_I8P, _I8P, _I64, dims, dims])


def _is_memref_descriptor(ty) -> bool:
    """A memref descriptor (pointers first), not a complex number's struct."""
    return isinstance(ty, llir.LiteralStructType) and ty.elements[0] == _I8P


class EntryCalls:
    """Calls of JIT-ed MLIR entries from code Numba lowers (a mixin of
    `lowering.Lower`): the whole function's entry (EntryCallLower), or one
    loop's (fallback.HostLower)."""

    def call_entry(self, compiled, argtypes, args, restype):
        """`compiled`'s entry called on `args` (Numba values of `argtypes`);
        returns its result as a Numba value of `restype`, an exception it
        signals raised in the caller's calling convention."""
        builder = self.builder
        jitted, plan = compiled.jitted, compiled.plan
        flat_args = []
        for ty, value in zip(argtypes, args):
            self._flatten_argument(ty, value, flat_args)
        result_types = self._result_llvm_types(restype, plan)
        if len(result_types) == 1:
            result_ty = result_types[0]
        else:
            result_ty = llir.LiteralStructType(result_types)
        slots = []
        for value in flat_args:
            slot = cgutils.alloca_once(builder, value.type)
            builder.store(value, slot)
            slots.append(builder.bitcast(slot, _I8P))
        result_slot = cgutils.alloca_once(builder, result_ty)
        slots.append(builder.bitcast(result_slot, _I8P))
        packed = cgutils.alloca_once(builder, _I8P, size=max(len(slots), 1))
        for i, slot in enumerate(slots):
            builder.store(slot, builder.gep(packed, [llir.Constant(llir.IntType(32), i)]))
        fnty = llir.FunctionType(llir.VoidType(), [_I8P.as_pointer()])
        entry = cgutils.get_or_insert_function(builder.module, fnty, jitted.symbol)
        builder.call(entry, [packed])
        loaded = builder.load(result_slot)
        if len(result_types) == 1:
            results = [loaded]
        else:
            results = [builder.extract_value(loaded, i) for i in range(len(result_types))]
        if jitted.gpu and self._results_read_on_host(restype, plan):
            self._call_runtime("nmg_sync", llir.FunctionType(llir.VoidType(), []), [])
        self._raise_on_status(compiled, results[0], results[1:])
        return self._rebuild(restype, iter(results[1:]), iter(plan.array_origins),
                             list(zip(argtypes, args)), jitted.gpu)

    def _call_runtime(self, name: str, fnty, args):
        fn = cgutils.get_or_insert_function(self.builder.module, fnty, name)
        return self.builder.call(fn, args)

    def _results_read_on_host(self, restype, plan: ReturnPlan) -> bool:
        """Arrays the function allocates and the caller reads on the host:
        the kernels writing them must have finished (everything else is
        ordered on the default stream, or waited for inside the function)."""
        origins = iter(plan.array_origins)
        return any(isinstance(t, types.Array) and next(origins) is None
                   and not isinstance(t, DeviceArrayType) for t in flat_types(restype))

    # -- arguments -------------------------------------------------------------

    def _flatten_argument(self, ty, value, out: list) -> None:
        builder = self.builder
        if isinstance(ty, types.BaseTuple):
            for i, item_ty in enumerate(ty.types):
                self._flatten_argument(item_ty, builder.extract_value(value, i), out)
        elif isinstance(ty, types.Array):
            ary = self.context.make_array(ty)(self.context, builder, value)
            data = builder.bitcast(ary.data, _I8P)
            itemsize = self.context.get_abi_sizeof(self.context.get_data_type(ty.dtype))
            out += [data, data, llir.Constant(_I64, 0)]
            out += cgutils.unpack_tuple(builder, ary.shape, ty.ndim)
            out += [builder.sdiv(s, llir.Constant(_I64, itemsize))
                    for s in cgutils.unpack_tuple(builder, ary.strides, ty.ndim)]
        elif is_static(ty):
            return          # compile-time values: the MLIR entry has no parameter
        elif is_optional_array(ty):     # (valid, the array: no memory, no extents for None)
            held = self.context.make_helper(builder, ty, value=value)
            valid = cgutils.as_bool_bit(builder, held.valid)
            out.append(valid)
            array = []
            self._flatten_argument(ty.type, held.data, array)
            out += [builder.select(valid, v, llir.Constant(v.type, None)) for v in array]
        elif isinstance(ty, types.Optional):     # an Optional scalar: (valid, value)
            held = self.context.make_helper(builder, ty, value=value)
            out += [cgutils.as_bool_bit(builder, held.valid), held.data]
        else:
            out.append(value)

    # -- results ---------------------------------------------------------------

    def _raise_on_status(self, compiled, status, results: list) -> None:
        """A non-zero status (or, on the GPU, a failure the runtime recorded)
        raises its exception, after freeing the arrays the call returned."""
        builder = self.builder
        gpu = compiled.jitted.gpu
        if not compiled.exceptions and not gpu:
            return
        zero = llir.Constant(status.type, 0)
        failure = zero
        if gpu:
            failure = self._call_runtime("nmg_take_failure", llir.FunctionType(status.type, []),
                                         [])
        failed = builder.or_(builder.icmp_unsigned("!=", status, zero),
                             builder.icmp_unsigned("!=", failure, zero))
        with cgutils.if_unlikely(builder, failed):
            dtor_ty = llir.FunctionType(llir.VoidType(), [_I8P])
            dtor = cgutils.get_or_insert_function(builder.module, dtor_ty,
                                                  array_destructor_symbol(gpu))
            for value in results:
                if _is_memref_descriptor(value.type):
                    builder.call(dtor, [builder.extract_value(value, 0)])
            for code, (exc_class, exc_args) in _GPU_FAILURES.items() if gpu else ():
                is_code = builder.icmp_unsigned("==", failure, llir.Constant(status.type, code))
                with cgutils.if_unlikely(builder, is_code):
                    self.call_conv.return_user_exc(builder, exc_class, exc_args)
            for code, (exc_class, exc_args) in enumerate(compiled.exceptions, start=1):
                is_code = builder.icmp_unsigned("==", status, llir.Constant(status.type, code))
                with cgutils.if_unlikely(builder, is_code):
                    self.call_conv.return_user_exc(builder, exc_class, exc_args)
            self.call_conv.return_user_exc(builder, RuntimeError,
                                           ("numba-mlir-gpu: unknown error status",))

    def _result_llvm_types(self, restype, plan: ReturnPlan) -> list:
        origins = iter(plan.array_origins)
        result = [llir.IntType(32)]          # the status
        for ty in flat_types(restype):
            if isinstance(ty, types.Array):
                if next(origins) is None:
                    result.append(_memref_struct(ty.ndim))
            else:
                result.append(self.context.get_value_type(ty))
        return result

    def _rebuild(self, ty, results, origins, args, gpu: bool):
        builder, context = self.builder, self.context
        if isinstance(ty, types.BaseTuple):
            items = [self._rebuild(t, results, origins, args, gpu) for t in ty.types]
            return context.make_tuple(builder, ty, items)
        if isinstance(ty, types.NoneType):
            return context.get_dummy_value()
        if is_optional_array(ty):
            return self._optional_array(ty, results, origins, gpu)
        if isinstance(ty, types.Optional):          # an Optional scalar: (valid, value)
            held = cgutils.create_struct_proxy(ty)(context, builder)
            held.valid, held.data = next(results), next(results)
            return held._getvalue()
        if isinstance(ty, types.Array):
            origin = next(origins)
            if origin is not None:
                argty, value = args[origin]
                context.nrt.incref(builder, argty, value)
                return value
            return self._adopt_array(ty, next(results), gpu)
        return next(results)

    def _optional_array(self, ty: types.Optional, results, origins, gpu: bool):
        """An Optional(array) result: (valid, a new array the caller owns).
        The array of a None is an empty allocation (the function's copy of
        its placeholder), freed here; a value is adopted as an NRT array."""
        builder, context = self.builder, self.context
        valid, desc = next(results), next(results)
        next(origins)                # always a new array (function.py)
        held = cgutils.create_struct_proxy(ty)(context, builder)
        held.valid = valid
        with builder.if_else(valid) as (then, otherwise):
            with then:
                held.data = self._adopt_array(ty.type, desc, gpu)
            with otherwise:
                dtor = cgutils.get_or_insert_function(
                    builder.module, llir.FunctionType(llir.VoidType(), [_I8P]),
                    array_destructor_symbol(gpu))
                builder.call(dtor, [builder.extract_value(desc, 0)])
        return held._getvalue()

    def _adopt_array(self, ty: types.Array, desc, gpu: bool):
        """A Numba array (NRT-owned) over a memref the MLIR code allocated."""
        builder, context = self.builder, self.context
        allocated = builder.extract_value(desc, 0)
        aligned = builder.extract_value(desc, 1)
        offset = builder.extract_value(desc, 2)
        itemsize = context.get_abi_sizeof(context.get_data_type(ty.dtype))
        manage_ty = llir.FunctionType(_I8P, [_I8P, _I8P])
        manage = cgutils.get_or_insert_function(builder.module, manage_ty, MANAGE_MEMORY)
        dtor_ty = llir.FunctionType(llir.VoidType(), [_I8P])
        dtor = builder.bitcast(cgutils.get_or_insert_function(
            builder.module, dtor_ty, array_destructor_symbol(gpu)), _I8P)
        meminfo = builder.call(manage, [allocated, dtor])
        data = builder.gep(builder.bitcast(aligned, context.get_data_type(ty.dtype).as_pointer()),
                           [offset])
        shape = [builder.extract_value(desc, (3, i)) for i in range(ty.ndim)]
        strides = [builder.mul(builder.extract_value(desc, (4, i)), llir.Constant(_I64, itemsize))
                   for i in range(ty.ndim)]
        if is_fortran(ty):       # returned as its C-ordered buffer: transpose it back
            shape, strides = shape[::-1], strides[::-1]
        ary = context.make_array(ty)(context, builder)
        populate_array(ary, data=data, shape=shape, strides=strides,
                       itemsize=llir.Constant(_I64, itemsize), meminfo=meminfo)
        return ary._getvalue()


class EntryCallLower(EntryCalls, lowering.Lower):
    """Lowers the function as one call to the JIT-ed MLIR entry."""

    def __init__(self, context, library, fndesc, func_ir, metadata=None, *, compiled):
        super().__init__(context, library, fndesc, func_ir, metadata=metadata)
        self.compiled = compiled

    def lower_normal_function(self, fndesc):
        self.setup_function(fndesc)
        args = self.extract_function_arguments()
        if self.compiled.jitted is None:
            self.call_conv.return_user_exc(self.builder, CompileOnlyError, (
                f"{fndesc.qualname} was compiled with target 'compile-only': its GPU code "
                "was built (see numba_mlir_gpu.inspect_ptx) but nothing runs",))
            return
        retval = self.call_entry(self.compiled, fndesc.argtypes, args, fndesc.restype)
        if isinstance(fndesc.restype, types.Optional):   # None, or the value (boxed by Numba)
            self.call_conv.return_optional_value(self.builder, fndesc.restype, fndesc.restype,
                                                 retval)
            return
        self.call_conv.return_value(
            self.builder, self.context.get_return_value(self.builder, fndesc.restype, retval))
