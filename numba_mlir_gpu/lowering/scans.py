"""Deterministic parallel scans over a flat index space: np.cumsum and
np.cumprod of a whole array, and the positions np.nonzero writes to.

SCAN_CHUNKS contiguous chunks, on both targets:

1. in parallel, each chunk folds its elements (`loops.chunked_partials`);
2. the host copies the chunks' totals into a stack buffer and turns them, in
   chunk order, into each chunk's starting value (an exclusive scan); the
   last running value is the grand total;
3. the starting values go back in one copy and, in parallel, each chunk
   rescans its elements from its start.

How values are associated depends only on the element count, so results are
the same bits on every run and on both targets (and exact for integers). On
the GPU both passes are kernels; the partials and starts stay in device
memory and cross the bus as two small cuMemcpys (runtime/placement.py).
"""
from __future__ import annotations

import operator
from typing import Callable

import numpy as np
from numba.core import types

from .._mlir import arith, ir, memref, scf
from .arrays import allocate, load_element, shape_of, store_element
from .build import const_i64, const_index, stack_copy, to_i64, to_index
from .casts import cast, truth
from .errors import UnsupportedConstructError
from .loops import chunk_bounds, chunked_partials, delinearize, flat_parallel, parallel_for, product
from .parfors import Reduction
from .reductions import (AxisLines, array_operand, axis_value, call_operands, flat_index,
                         sequential_fold)
from .registry import call_rules, method_rules
from .values import ArrayValue, TupleValue

# Chunks of every scan: 32 KiB of float64 starts on the host stack.
SCAN_CHUNKS = 4096


class ChunkedScan:
    """Passes 1 and 2 at construction (`grand_total` is then known, e.g. to
    size the output of np.nonzero); pass 3 is `rescan`."""

    def __init__(self, total: ir.Value, reduction: Reduction,
                 fold: Callable[[ir.Value, list], list]):
        self.total = total
        (partials,) = chunked_partials(total, SCAN_CHUNKS, [reduction], fold)
        host = stack_copy(partials)
        loop = scf.ForOp(const_index(0), const_index(SCAN_CHUNKS), const_index(1),
                         [reduction.identity_value()])
        with ir.InsertionPoint(loop.body):
            chunk, running = loop.induction_variable, loop.inner_iter_args[0]
            chunk_total = memref.LoadOp(host, [chunk]).result
            memref.StoreOp(running, host, [chunk])
            scf.YieldOp([reduction.combine(running, chunk_total)])
        self.grand_total = loop.results[0]
        self.starts = memref.AllocOp(ir.MemRefType.get([SCAN_CHUNKS], reduction.mlir_type),
                                     [], []).result
        memref.CopyOp(host, self.starts)

    def rescan(self, step: Callable[[ir.Value, ir.Value], ir.Value]) -> None:
        """In parallel over the chunks: `running = step(k, running)` for each
        k of the chunk in order, starting from the chunk's start."""
        def chunk(t):
            lo, hi = chunk_bounds(t, self.total, SCAN_CHUNKS)
            loop = scf.ForOp(lo, hi, const_index(1), [memref.LoadOp(self.starts, [t]).result])
            with ir.InsertionPoint(loop.body):
                scf.YieldOp([step(loop.induction_variable, loop.inner_iter_args[0])])
        flat_parallel(const_index(SCAN_CHUNKS), chunk)


def _parallel(lw) -> bool:
    """Scans split into chunks only at the top level; inside a parallel
    body (one GPU thread, one CPU task) they run in order."""
    return lw.parallel_depth == 0


# -- nonzero -----------------------------------------------------------------------

def nonzero(lw, args, sig, expr):
    """np.nonzero(a) / np.where(a) / a.nonzero()."""
    array = args[0]
    result_ty = types.unliteral(sig.return_type)
    if len(args) != 1 or not isinstance(array, ArrayValue) or \
            not isinstance(result_ty, types.BaseTuple):
        raise UnsupportedConstructError(f"np.nonzero of {', '.join(map(str, sig.args))}", expr.loc)
    return TupleValue(nonzero_indices(lw, array, list(result_ty.types), expr.loc), result_ty)


def nonzero_indices(lw, array: ArrayValue, result_types: list, loc) -> list[ArrayValue]:
    """The indices of the non-zero elements of `array`, one array of
    `result_types` per dimension: counted per chunk, then each chunk writes
    the indices of its elements from its starting position (row-major order,
    as NumPy). Inside a parallel body, two passes in order."""
    dtype = array.type.dtype
    extents = shape_of(array)
    i64 = ir.IntegerType.get_signless(64)
    count = Reduction("count", types.int64, operator.add, 0)

    def is_set(indices) -> ir.Value:
        return truth(load_element(array, indices), dtype)

    def write(indices, position, outputs) -> ir.Value:
        branch = scf.IfOp(is_set(indices), [i64], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            for out, index in zip(outputs, indices):
                store_element(cast(to_i64(index), types.int64, out.type.dtype), out,
                              [to_index(position)])
            scf.YieldOp([count.combine(position, const_i64(1))])
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([position])
        return branch.results[0]

    if not _parallel(lw):
        lw.target.check_element_access(lw, array, loc)
        (n,) = sequential_fold(extents, [const_i64(0)], lambda ix, accs: [
            count.combine(accs[0], arith.ExtUIOp(i64, is_set(ix)).result)])
        outputs = [allocate(lw, ty, [to_index(n)], bounds=[product(extents)])
                   for ty in result_types]
        sequential_fold(extents, [const_i64(0)], lambda ix, accs: [write(ix, accs[0], outputs)])
        return outputs
    scan = ChunkedScan(product(extents), count, lambda k, accs: [
        count.combine(accs[0], arith.ExtUIOp(i64, is_set(delinearize(k, extents))).result)])
    outputs = [allocate(lw, ty, [to_index(scan.grand_total)]) for ty in result_types]
    scan.rescan(lambda k, position: write(delinearize(k, extents), position, outputs))
    return outputs


call_rules.register(np.nonzero)(nonzero)
method_rules.register((types.Array, "nonzero"))(nonzero)


# -- cumsum / cumprod -----------------------------------------------------------------

def _running(combine_op, identity: int, name: str):
    """np.cumsum / np.cumprod: over the flattened array, a chunked scan; with
    `axis=` (cumsum), a parallel loop over the lines, each scanned in order."""
    def rule(lw, args, sig, expr):
        operands = call_operands(lw, args, sig, expr, ("a", "axis", "dtype"))
        array = array_operand(operands, f"np.{name}", expr)
        result_ty = types.unliteral(sig.return_type)
        acc_ty = result_ty.dtype
        step = Reduction(name, acc_ty, combine_op, identity)
        if "axis" in operands:
            axis = axis_value(lw, operands["axis"], array, expr, (
                ValueError, f"axis is out of bounds for array of dimension {array.type.ndim}"))
        if "axis" in operands and array.type.ndim > 1:
            return _along_axis(lw, array, axis, result_ty, step)
        extents = shape_of(array)
        out = allocate(lw, result_ty, [product(extents)])

        def value(indices) -> ir.Value:
            return cast(load_element(array, indices), array.type.dtype, acc_ty)

        def emit(k, indices, running) -> ir.Value:
            total = step.combine(running, value(indices))
            store_element(total, out, [k])
            return total
        if not _parallel(lw):
            lw.target.check_element_access(lw, array, expr.loc)
            sequential_fold(extents, [step.identity_value()], lambda ix, accs: [
                emit(to_index(flat_index(ix, extents)), ix, accs[0])])
            return out
        scan = ChunkedScan(product(extents), step, lambda k, accs: [
            step.combine(accs[0], value(delinearize(k, extents)))])
        scan.rescan(lambda k, running: emit(k, delinearize(k, extents), running))
        return out
    return rule


def _along_axis(lw, array: ArrayValue, axis: ir.Value, result_ty, step: Reduction):
    line = AxisLines(lw, array, axis)
    out = allocate(lw, result_ty, shape_of(array))

    def scan(indices):
        loop = scf.ForOp(const_index(0), line.length, const_index(1), [step.identity_value()])
        with ir.InsertionPoint(loop.body):
            at = line.element(indices, loop.induction_variable)
            value = cast(load_element(array, at), array.type.dtype, step.type)
            total = step.combine(loop.inner_iter_args[0], value)
            store_element(total, out, at)
            scf.YieldOp([total])
    parallel_for(lw, line.out_extents, scan)
    return out


call_rules.register(np.cumsum)(_running(operator.add, 0, "cumsum"))
call_rules.register(np.cumprod)(_running(operator.mul, 1, "cumprod"))
