"""How parallel loops become kernel launches (GPU pipeline stages).

`TileParallelLoops` replaces upstream's scf-parallel-loop-tiling: each outermost
1-d `scf.parallel` becomes blocks x threads, and each thread runs
`elements` iterations, `threads` apart (so every copy of a load is coalesced
across the warp). The copies of a loop-free body are interleaved op by op,
so a thread has `elements` independent loads in flight instead of one; prange
promises that iterations are independent, so the order between copies is free.
A body with an inner loop keeps one iteration per thread (its copies would run
one after the other anyway, with `elements` times the registers); branches
without loops, such as the status check after a call that may raise, are
cloned whole.
A block whose iterations are all in range runs the copies unguarded; only
the last block checks bounds, one iteration at a time.

Streams are not this module's business: runtime/placement.py puts every
launch on the default stream when the module is JIT-ed.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._mlir import arith, ir, scf


@dataclass(frozen=True)
class TileParallelLoops:
    threads: int = 256
    elements: int = 4

    def __call__(self, module) -> None:
        loops = []

        def visit(op):
            if op.name == "scf.parallel" and not _nested_in_parallel(op):
                loops.append(op)
            return ir.WalkResult.ADVANCE
        module.operation.walk(visit)
        for loop in loops:
            self.tile(loop)

    def tile(self, loop: ir.Operation) -> None:
        if len(loop.operands) != 3 or len(loop.results) != 0:
            return      # n-d or with reductions: never emitted for the GPU; left untiled
        lower, upper, step = loop.operands
        body = _LoopBody(loop, lower, step)
        elements = self.elements if body.loop_free else 1
        with ir.InsertionPoint(loop), loop.location:
            trips = arith.CeilDivUIOp(arith.SubIOp(upper, lower).result, step).result
            tile = _index(self.threads * elements)
            outer, b = _parallel(arith.CeilDivUIOp(trips, tile).result)     # blocks
            with ir.InsertionPoint(outer):
                inner, t = _parallel(_index(self.threads))                   # threads
                with ir.InsertionPoint(inner):
                    first = arith.AddIOp(arith.MulIOp(b, tile).result, t).result
                    if elements == 1:
                        _guarded(first, trips, body.emit)
                    else:
                        self.several_per_thread(body, b, first, trips, tile, elements)
                    scf.ReduceOp([], 0)
                scf.ReduceOp([], 0)
        loop.erase()

    def several_per_thread(self, body: "_LoopBody", b, first, trips, tile, elements: int):
        """Iterations first, first + threads, ...: all of them, interleaved, when
        the block is full; else one by one, each bounds-checked."""
        end = arith.MulIOp(arith.AddIOp(b, _index(1)).result, tile).result
        full = arith.CmpIOp(arith.CmpIPredicate.ule, end, trips).result
        branch = scf.IfOp(full, [], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            body.emit(*[arith.AddIOp(first, _index(u * self.threads)).result if u else first
                        for u in range(elements)])
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            tail = scf.ForOp(_index(0), _index(elements), _index(1))
            with ir.InsertionPoint(tail.body):
                offset = arith.MulIOp(tail.induction_variable, _index(self.threads)).result
                _guarded(arith.AddIOp(first, offset).result, trips, body.emit)
                scf.YieldOp([])
            scf.YieldOp([])


class _LoopBody:
    """The body of a 1-d scf.parallel, cloned at other iteration numbers."""

    def __init__(self, loop: ir.Operation, lower: ir.Value, step: ir.Value):
        block = loop.regions[0].blocks[0]
        self.iv = block.arguments[0]
        self.ops = list(block.operations)[:-1]          # without scf.reduce
        self.lower, self.step = lower, step

    @property
    def loop_free(self) -> bool:
        return not any(_has_loop(op) for op in self.ops)

    def emit(self, *trips: ir.Value) -> None:
        """One copy per trip number k (iteration lower + k * step),
        interleaved op by op: op j of every copy before op j+1 of any."""
        maps = [{self.iv: arith.AddIOp(self.lower, arith.MulIOp(k, self.step).result).result}
                for k in trips]
        for op in self.ops:
            for mapping in maps:
                new = op.clone()
                _remap(new, mapping)
                for old, value in zip(op.results, new.results):
                    mapping[old] = value


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _parallel(upper: ir.Value):
    """A 1-d scf.parallel over [0, upper) with an empty body; returns the body
    block (its scf.reduce still to be added) and the induction variable."""
    loop = scf.ParallelOp([], [_index(0)], [upper], [_index(1)], [])
    block = loop.regions[0].blocks.append(ir.IndexType.get())
    return block, block.arguments[0]


def _guarded(k: ir.Value, trips: ir.Value, emit) -> None:
    inside = arith.CmpIOp(arith.CmpIPredicate.ult, k, trips).result
    branch = scf.IfOp(inside, [])
    with ir.InsertionPoint(branch.then_block):
        emit(k)
        scf.YieldOp([])


def _remap(op: ir.Operation, mapping: dict) -> None:
    """Uses of the original body's values inside a clone (nested ops too)."""
    def visit(inner):
        for i, value in enumerate(inner.operands):
            if value in mapping:
                inner.operands[i] = mapping[value]
        return ir.WalkResult.ADVANCE
    op.walk(visit)


# ops whose regions may run more than once; an execute_region's blocks may branch back
_LOOPS = frozenset({"scf.for", "scf.while", "scf.parallel", "scf.execute_region"})


def _has_loop(op: ir.Operation) -> bool:
    found = False

    def visit(inner):
        nonlocal found
        found = found or inner.name in _LOOPS
        return ir.WalkResult.INTERRUPT if found else ir.WalkResult.ADVANCE
    op.walk(visit)
    return found


def _nested_in_parallel(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None:
        if parent.name == "scf.parallel":
            return True
        parent = parent.parent
    return False
