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

from numba.core import types

from .._mlir import arith, ir, memref, scf
from ..lowering.arrays import allocate, load_element, shape_of, store_element
from ..lowering.build import (const_i64, const_index, load_value, stack_copy, store_value, to_i64,
                              to_index, value_buffer)
from ..lowering.casts import cast, truth
from ..lowering.loops import chunk_bounds, chunked_partials, delinearize, flat_parallel, product
from ..lowering.values import ArrayValue
from .folds import sequential_fold
from .reduction import Reduction

# Chunks of every scan: 32 KiB of float64 starts on the host stack.
SCAN_CHUNKS = 4096


class ChunkedScan:
    """Passes 1 and 2 at construction (`grand_total` is then known, e.g. to
    size the output of np.nonzero); pass 3 is `rescan`."""

    def __init__(self, total: ir.Value, reduction: Reduction,
                 fold: Callable[[ir.Value, list], list]):
        self.total, self.reduction = total, reduction
        (partials,) = chunked_partials(total, SCAN_CHUNKS, [reduction], fold)
        host = stack_copy(partials)
        loop = scf.ForOp(const_index(0), const_index(SCAN_CHUNKS), const_index(1),
                         [reduction.identity_value()])
        with ir.InsertionPoint(loop.body):
            chunk, running = loop.induction_variable, loop.inner_iter_args[0]
            chunk_total = load_value(host, [chunk], reduction.mlir_type)
            store_value(running, host, [chunk])
            scf.YieldOp([reduction.combine(running, chunk_total)])
        self.grand_total = loop.results[0]
        self.starts = value_buffer([SCAN_CHUNKS], reduction.mlir_type)
        memref.CopyOp(host, self.starts)

    def rescan(self, step: Callable[[ir.Value, ir.Value], ir.Value]) -> None:
        """In parallel over the chunks: `running = step(k, running)` for each
        k of the chunk in order, starting from the chunk's start."""
        def chunk(t):
            lo, hi = chunk_bounds(t, self.total, SCAN_CHUNKS)
            loop = scf.ForOp(lo, hi, const_index(1),
                             [load_value(self.starts, [t], self.reduction.mlir_type)])
            with ir.InsertionPoint(loop.body):
                scf.YieldOp([step(loop.induction_variable, loop.inner_iter_args[0])])
        flat_parallel(const_index(SCAN_CHUNKS), chunk)


def scans_in_parallel(lw) -> bool:
    """Scans split into chunks only at the top level; inside a parallel
    body (one GPU thread, one CPU task) they run in order."""
    return lw.parallel_depth == 0


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

    if not scans_in_parallel(lw):
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
