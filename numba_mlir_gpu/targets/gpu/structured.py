"""Reductions along an axis (the generics of lowering/structured.py) as GPU
kernels, by the schedules of schedules.py.

A line that is contiguous in memory (the reduced axis is the source's last,
unit-stride axis) is folded by a block: its threads stride the line with
coalesced loads, several in flight each, and combine their partial folds
with shuffles (reduce.block_combine); blocks take lines grid-stride. When
lines are shorter than a warp, or strided, each output element is a thread
that folds a piece of its line (neighbouring outputs are neighbouring in
memory along the other axes, so the loads coalesce across threads); lines
are cut into pieces so that enough threads work, and a second loop folds
each output's pieces in order. Which of the two runs is decided at launch
from the line length when the layout allows both. Every combining order
depends on sizes only, so results are the same bits on every run.
"""
from __future__ import annotations

from ..._mlir import arith, gpu, ir, memref, scf
from ...lowering.build import cmpi, const_index
from ...lowering.loops import delinearize, flat_parallel, product
from ...lowering.structured import AxisReduction, generics
from . import schedules
from .chunks import block_threads
from .reduce import block_combine, declare_barrier_marker, shared_bytes, strided_fold


def schedule_reductions(module: ir.Module) -> None:
    """Replace every generic of lowering/structured.py in `module` by
    kernels (a pipeline stage, before buffer deallocation)."""
    found = generics(module)
    if found:
        declare_barrier_marker(module)
    for op in found:
        red = AxisReduction.of(op)
        with ir.InsertionPoint(op), op.location:
            extents, length = red.out_extents(), red.length()
            if _contiguous_lines(red):
                branch = scf.IfOp(cmpi("uge", length, const_index(schedules.WARP)), [],
                                  has_else=True)
                with ir.InsertionPoint(branch.then_block):
                    _lines_by_blocks(red, extents, length)
                    scf.YieldOp([])
                with ir.InsertionPoint(branch.else_block):
                    _lines_in_pieces(red, extents, length)
                    scf.YieldOp([])
            else:
                _lines_in_pieces(red, extents, length)
        op.erase()


def _contiguous_lines(red: AxisReduction) -> bool:
    ty = ir.MemRefType(red.source.type)
    if red.axis != ty.rank - 1:
        return False
    if ty.layout == ir.AffineMapAttr.get(ir.AffineMap.get_identity(ty.rank)):
        return True
    strides, _ = ty.get_strides_and_offset()
    return strides[-1] == 1


def _lines_by_blocks(red: AxisReduction, extents: list, length: ir.Value) -> None:
    """Block b folds lines b, b + grid, ...; thread t folds elements t,
    t + threads, ... of a line, LINE_UNROLL at a time; thread 0 stores."""
    lines = product(extents)
    threads = block_threads(length, schedules.LINE_MAX_THREADS)
    grid = arith.MaxUIOp(const_index(1), arith.MinUIOp(
        lines, const_index(schedules.LINE_MAX_BLOCKS)).result).result
    one = const_index(1)
    shared = arith.ConstantOp(ir.IntegerType.get_signless(32),
                              shared_bytes(len(red.outs))).result
    launch = gpu.LaunchOp((grid, one, one), (threads, one, one),
                          dynamic_shared_memory_size=shared)
    args = launch.regions[0].blocks[0].arguments
    block, thread, grid_size, block_size = args[0], args[3], args[6], args[9]
    partial = red.partial_folds()
    with ir.InsertionPoint(launch.regions[0].blocks[0]):
        loop = scf.ForOp(block, lines, grid_size)
        with ir.InsertionPoint(loop.body):
            indices = delinearize(loop.induction_variable, extents)
            mine = strided_fold(thread, length, block_size, partial.identity_values(),
                                lambda k, accs: red.step_at(indices, k, accs),
                                schedules.LINE_UNROLL)
            total = block_combine([partial], mine, thread, block_size)
            first = scf.IfOp(cmpi("eq", thread, const_index(0)))
            with ir.InsertionPoint(first.then_block):
                red.store_outs(partial.combine_values(red.load_outs(indices), total), indices)
                scf.YieldOp([])
            scf.YieldOp([])
        gpu.TerminatorOp()


def _lines_in_pieces(red: AxisReduction, extents: list, length: ir.Value) -> None:
    """A thread per (piece, output element), the pieces' folds in a buffer,
    then a loop per output element folding its pieces in order."""
    outputs = product(extents)
    wanted = arith.CeilDivUIOp(const_index(schedules.COLUMN_THREADS),
                               arith.MaxUIOp(outputs, const_index(1)).result).result
    most = arith.MaxUIOp(const_index(1), arith.CeilDivUIOp(
        length, const_index(schedules.COLUMN_MIN_PIECE)).result).result
    pieces = arith.MaxUIOp(const_index(1), arith.MinUIOp(wanted, most).result).result
    piece = arith.CeilDivUIOp(length, pieces).result
    partial = red.partial_folds()
    count = arith.MulIOp(pieces, outputs).result
    folds = [memref.AllocOp(ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ty),
                            [count], []).result for ty in red.acc_types]

    def fold_piece(t):
        p = arith.DivUIOp(t, outputs).result
        indices = delinearize(arith.RemUIOp(t, outputs).result, extents)
        lo = arith.MinUIOp(arith.MulIOp(p, piece).result, length).result
        hi = arith.MinUIOp(arith.AddIOp(lo, piece).result, length).result
        for value, buffer in zip(red.fold_line(indices, partial.identity_values(), lo, hi), folds):
            memref.StoreOp(value, buffer, [t])
    flat_parallel(count, fold_piece)

    def fold_pieces(o):
        indices = delinearize(o, extents)
        loop = scf.ForOp(const_index(0), pieces, const_index(1), red.load_outs(indices))
        with ir.InsertionPoint(loop.body):
            at = arith.AddIOp(arith.MulIOp(loop.induction_variable, outputs).result, o).result
            scf.YieldOp(partial.combine_values(list(loop.inner_iter_args),
                                               [memref.LoadOp(b, [at]).result for b in folds]))
        red.store_outs(list(loop.results), indices)
    flat_parallel(outputs, fold_pieces)
