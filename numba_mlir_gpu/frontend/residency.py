"""Host arrays kept on the GPU across the loops of a fallback function.

Each parallel loop of a fallback function is its own MLIR function, which
would copy every NumPy array it touches to the GPU and back on each call.
An array that the host code only passes along (its definition, its shape,
its return) is instead copied to device memory once, when the host code
defines it, handed to every loop as a device array, and copied back (if a
loop may write it) and freed when the function returns or raises: as often
as the whole-function path copies it. An array the host code reads or
writes between the loops (or hands to a call) keeps the per-loop copies,
which keep the host's view of it current.

The device copy is an NRT-owned array (its MemInfo frees it with the GPU
runtime's `nmg_free`), held in a stack slot of the host function. A
definition run again (in a host loop) first releases the previous copy.
An exception raised by a function Numba's host code calls leaves the copy
to the next call of that definition, or unreleased (as Numba's own
lowering leaves its arrays when a callee raises).
"""
from __future__ import annotations

from llvmlite import ir as llir
from numba.core import cgutils, ir, types
from numba.core.ir_utils import find_callname, guard
from numba.np.arrayobj import populate_array

from ..runtime.device_arrays import DeviceArrayType
from .wrapper import MANAGE_MEMORY

_I8P = llir.IntType(8).as_pointer()
_I64 = llir.IntType(64)

# Host expressions that read an array's metadata (its struct), not its memory.
METADATA = {"shape", "ndim", "size", "dtype", "strides", "itemsize", "layout"}


def device_type(ty: types.Array) -> DeviceArrayType:
    return DeviceArrayType(ty.dtype, ty.ndim, ty.layout)


def resident_candidates(func_ir, typemap, loop_inputs: list[set], loop_assigned: set,
                        parfors: list) -> set[str]:
    """C-contiguous NumPy arrays that some loop reads or writes and that the
    host code (statements outside the loops) defines once, as an argument or
    a new array, and otherwise only reads the metadata of (`x.shape`,
    `np.empty_like(x)`) or returns (alone or in a tuple)."""
    used_by_loops = set().union(*loop_inputs) if loop_inputs else set()
    names = {n for n in used_by_loops
             if isinstance(typemap.get(n), types.Array)
             and not isinstance(typemap[n], DeviceArrayType)
             and typemap[n].layout == "C" and n not in loop_assigned}
    definitions: dict[str, int] = {}
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if any(stmt is p for p in parfors):
                continue
            if isinstance(stmt, ir.Assign) and stmt.target.name in names:
                definitions[stmt.target.name] = definitions.get(stmt.target.name, 0) + 1
                if not _fresh(func_ir, stmt.value):
                    names.discard(stmt.target.name)     # may alias another array
            for var in stmt.list_vars():
                if var.name in names and not _passes_along(func_ir, stmt, var.name):
                    names.discard(var.name)
    return {n for n in names if definitions.get(n) == 1}


# NumPy functions that read only an array's shape and dtype
_SHAPE_ONLY = {("empty_like", "numpy"), ("zeros_like", "numpy"), ("ones_like", "numpy"),
               ("full_like", "numpy"), ("len", "builtins")}


# NumPy functions that return a new array (never a view of an argument)
_ALLOCATORS = {(name, "numpy") for name in (
    "empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like", "full_like",
    "copy", "arange", "linspace")}


def _fresh(func_ir, value) -> bool:
    """Is this definition an argument or a new array? A copy of another
    variable or a view (`b = a`, `a.reshape(...)`) would share its host
    memory with an array that has no device copy, or another one."""
    if isinstance(value, ir.Arg):
        return True
    return isinstance(value, ir.Expr) and value.op == "call" and \
        guard(find_callname, func_ir, value) in _ALLOCATORS


def _passes_along(func_ir, stmt, name: str) -> bool:
    if isinstance(stmt, ir.Del):
        return True
    if not isinstance(stmt, ir.Assign):
        return False
    if stmt.target.name == name:
        return True           # its definition: reads nothing of its own
    value = stmt.value
    if not isinstance(value, ir.Expr):
        return False
    if value.op == "getattr":
        return value.attr in METADATA
    if value.op == "call":
        return guard(find_callname, func_ir, value) in _SHAPE_ONLY and \
            value.args[0].name == name and all(a.name != name for a in value.args[1:])
    if value.op == "build_tuple":
        return _only_returned(func_ir, stmt.target.name)
    return value.op == "cast"      # the value a Return returns


def _only_returned(func_ir, name: str) -> bool:
    """Is variable `name` only cast and returned (the host copies are
    current at a Return)?"""
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Del) or not any(v.name == name for v in stmt.list_vars()):
                continue
            if not (isinstance(stmt, ir.Assign) and (stmt.target.name == name or (
                    isinstance(stmt.value, ir.Expr) and stmt.value.op == "cast"))):
                return False
    return True


class DeviceMirrors:
    """The device copies of a host function's resident arrays (name -> may a
    loop write it), made and released by the host lowering (HostLower)."""

    def __init__(self, resident: dict[str, bool]):
        self.resident = resident
        self._slots: dict[str, tuple] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.resident

    def type_of(self, lowerer, name: str) -> DeviceArrayType:
        return device_type(lowerer.typeof(name))

    def load(self, lowerer, name: str):
        twin, _ = self._slot(lowerer, name)
        return lowerer.builder.load(twin)

    def make(self, lowerer, name: str) -> None:
        """The device copy of `name`, just defined: any previous copy
        released, device memory allocated and filled from the host array."""
        builder, context = lowerer.builder, lowerer.context
        self.release(lowerer, name)
        ty = lowerer.typeof(name)
        host = context.make_array(ty)(context, builder, lowerer.loadvar(name))
        itemsize = context.get_abi_sizeof(context.get_data_type(ty.dtype))
        nbytes = builder.mul(host.nitems, llir.Constant(_I64, itemsize))
        # at least a byte: an empty array still gets a pointer to free
        size = builder.select(builder.icmp_unsigned("==", nbytes, nbytes.type(0)),
                              nbytes.type(1), nbytes)
        data = _runtime(builder, "nmg_alloc_device", _I8P, [_I64], [size])
        host_data = builder.bitcast(host.data, _I8P)
        with builder.if_then(cgutils.is_not_null(builder, data)):
            # a failed allocation is recorded: the next loop's call raises it
            _runtime(builder, "nmg_memcpy", llir.VoidType(), [_I8P, _I8P, _I64],
                     [data, host_data, nbytes])
        manage = cgutils.get_or_insert_function(
            builder.module, llir.FunctionType(_I8P, [_I8P, _I8P]), MANAGE_MEMORY)
        free = cgutils.get_or_insert_function(
            builder.module, llir.FunctionType(llir.VoidType(), [_I8P]), "nmg_free")
        meminfo = builder.call(manage, [data, builder.bitcast(free, _I8P)])
        twin = context.make_array(self.type_of(lowerer, name))(context, builder)
        populate_array(twin, data=builder.bitcast(data, host.data.type), shape=host.shape,
                       strides=host.strides, itemsize=host.itemsize, meminfo=meminfo)
        twin_slot, host_slot = self._slot(lowerer, name)
        builder.store(twin._getvalue(), twin_slot)
        builder.store(host_data, host_slot)

    def release_all(self, lowerer) -> None:
        """Before the function returns or raises: each copy read back into
        its host array (when a loop may have written it) and freed."""
        for name in self.resident:
            self.release(lowerer, name)

    def release(self, lowerer, name: str) -> None:
        """`name`'s copy read back (when written) and freed, if it has one."""
        builder, context = lowerer.builder, lowerer.context
        twin_slot, host_slot = self._slot(lowerer, name)
        devty = self.type_of(lowerer, name)
        value = builder.load(twin_slot)
        twin = context.make_array(devty)(context, builder, value)
        with builder.if_then(cgutils.is_not_null(builder, twin.meminfo)):
            if self.resident[name]:
                itemsize = context.get_abi_sizeof(context.get_data_type(devty.dtype))
                nbytes = builder.mul(twin.nitems, llir.Constant(_I64, itemsize))
                _runtime(builder, "nmg_memcpy", llir.VoidType(), [_I8P, _I8P, _I64],
                         [builder.load(host_slot), builder.bitcast(twin.data, _I8P), nbytes])
            context.nrt.decref(builder, devty, value)
            builder.store(value.type(None), twin_slot)

    def _slot(self, lowerer, name: str) -> tuple:
        if name not in self._slots:
            llty = lowerer.context.get_value_type(self.type_of(lowerer, name))
            self._slots[name] = (cgutils.alloca_once(lowerer.builder, llty, zfill=True),
                                 cgutils.alloca_once(lowerer.builder, _I8P, zfill=True))
        return self._slots[name]


def _runtime(builder, name: str, restype, argtypes: list, args: list):
    fn = cgutils.get_or_insert_function(builder.module, llir.FunctionType(restype, argtypes),
                                        name)
    return builder.call(fn, args)
