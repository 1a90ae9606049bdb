"""Scatter updates into a small array (a histogram) through a private copy
per block in shared memory.

With few elements and many iterations, the atomics of `counts[keys[i]] += 1`
on global memory queue on the same addresses. Here each block clears its
own copy of the array in shared memory, its threads run the iterations
grid-stride (PRIVATE_UNROLL at a time) with the body's atomic updates going
to that copy, and after a barrier the block adds its copy into the array,
one global atomic per element it touched. Only additions are privatised
(integers exactly; a float sum's order then varies with timing, as with any
atomics), and only while the copies fit in PRIVATE_SHARED_BYTES, which the
host checks before the launch (parallel/parfors.py keeps the plain loop for
the other case).
"""
from __future__ import annotations

from typing import Callable

from ..._mlir import arith, gpu, ir, memref, scf
from ...lowering.arrays import shape_of
from ...lowering.atomics import atomic_rmw
from ...lowering.build import cmpi, const_index
from ...lowering.loops import delinearize, product
from ...lowering.values import ArrayValue
from . import schedules
from .reduce import barrier, declare_barrier_marker, strided_fold

_WORKGROUP = "#gpu.address_space<workgroup>"


def copy_bytes(arrays: list) -> ir.Value:
    """Shared memory for one block's copies (each 8-byte aligned)."""
    total = const_index(0)
    for array in arrays:
        itemsize = _element_bytes(array)
        size = arith.MulIOp(product(shape_of(array)), const_index(itemsize)).result
        aligned = arith.MulIOp(arith.CeilDivUIOp(size, const_index(8)).result,
                               const_index(8)).result
        total = arith.AddIOp(total, aligned).result
    return total


def fits(arrays: list) -> ir.Value:
    return cmpi("ule", copy_bytes(arrays), const_index(schedules.PRIVATE_SHARED_BYTES))


def privatized_loop(lw, total: ir.Value, arrays: list, kinds: list,
                    body: Callable[[ir.Value, list], None]) -> None:
    """`body(k, copies)` for k in [0, total), `copies` the block's shared
    copies of `arrays` (ArrayValues to bind in their place); the copies are
    added into `arrays` at the end with atomic_rmw `kinds` ("addi"/"addf")."""
    declare_barrier_marker(lw.mlower.module)
    threads = const_index(schedules.PRIVATE_THREADS)
    blocks = arith.MinUIOp(const_index(schedules.PRIVATE_BLOCKS), arith.MaxUIOp(
        const_index(1), arith.CeilDivUIOp(total, threads).result).result).result
    shared = arith.IndexCastOp(ir.IntegerType.get_signless(32), copy_bytes(arrays)).result
    one = const_index(1)
    launch = gpu.LaunchOp((blocks, one, one), (threads, one, one),
                          dynamic_shared_memory_size=shared)
    args = launch.regions[0].blocks[0].arguments
    block, thread, grid, block_size = args[0], args[3], args[6], args[9]
    lw.parallel_depth += 1
    try:
        with ir.InsertionPoint(launch.regions[0].blocks[0]):
            copies = _shared_copies(arrays)
            for copy in copies:
                _strided(thread, block_size, shape_of(copy), lambda ix, c=copy: memref.StoreOp(
                    _zero(ir.MemRefType(c.memref.type).element_type), c.memref, ix))
            barrier()
            first = arith.AddIOp(arith.MulIOp(block, block_size).result, thread).result
            stride = arith.MulIOp(grid, block_size).result

            def step(k, accs):
                body(k, copies)
                return []
            strided_fold(first, total, stride, [], step, schedules.PRIVATE_UNROLL)
            barrier()
            for copy, array, kind in zip(copies, arrays, kinds):
                _strided(thread, block_size, shape_of(copy),
                         lambda ix, c=copy, a=array, k=kind: _add_into(c, a, k, ix))
            gpu.TerminatorOp()
    finally:
        lw.parallel_depth -= 1


def _shared_copies(arrays: list) -> list:
    raw = gpu.DynamicSharedMemoryOp(ir.MemRefType.get(
        [ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
        memory_space=ir.Attribute.parse(_WORKGROUP))).result
    copies, offset = [], const_index(0)
    for array in arrays:
        extents = shape_of(array)
        element = ir.MemRefType(array.memref.type).element_type
        view = memref.ViewOp(ir.MemRefType.get(
            [ir.ShapedType.get_dynamic_size()] * len(extents), element,
            memory_space=ir.Attribute.parse(_WORKGROUP)), raw, offset, extents).result
        copies.append(ArrayValue(view, array.type.copy(layout="C")))
        size = arith.MulIOp(product(extents), const_index(_element_bytes(array))).result
        offset = arith.AddIOp(offset, arith.MulIOp(arith.CeilDivUIOp(
            size, const_index(8)).result, const_index(8)).result).result
    return copies


def _strided(thread, threads, extents: list, emit) -> None:
    """emit(indices) for the elements of `extents`, thread t taking t,
    t + threads, ..."""
    loop = scf.ForOp(thread, product(extents), threads)
    with ir.InsertionPoint(loop.body):
        emit(delinearize(loop.induction_variable, extents))
        scf.YieldOp([])


def _add_into(copy: ArrayValue, array: ArrayValue, kind: str, indices: list) -> None:
    value = memref.LoadOp(copy.memref, indices).result
    if kind == "addf":          # always: adding +0.0 turns a -0.0 into +0.0
        atomic_rmw(kind, value, array, indices)
        return
    branch = scf.IfOp(cmpi("ne", value, _zero(value.type)))
    with ir.InsertionPoint(branch.then_block):
        atomic_rmw(kind, value, array, indices)
        scf.YieldOp([])


def _zero(ty: ir.Type) -> ir.Value:
    if isinstance(ty, ir.IntegerType):
        return arith.ConstantOp(ty, 0).result
    return arith.ConstantOp(ty, ir.FloatAttr.get(ty, 0.0)).result


def _element_bytes(array: ArrayValue) -> int:
    element = ir.MemRefType(array.memref.type).element_type
    return max(1, element.width // 8) if hasattr(element, "width") else 8
