"""A prange row kept in registers across the inner loops of its iteration
(the plan: parallel/row_access.py).

While a block runs one iteration of a prange body, element j of each inner
loop goes to thread j mod threads, as its step r = j // threads of
ROW_CACHE_SLOTS unrolled steps (schedules.py). A thread keeps the elements
of the cached arrays it has touched in a private array of ROW_CACHE_SLOTS
values indexed by r, with a flag saying whether slot r holds the element
yet; all indices are constants after the unrolling, so LLVM keeps both in
registers, and the flags fold away. A read finds its slot or loads from
memory and fills it; a write stores to memory and to the slot. The slots
are emptied at the start of each iteration.

It runs when every inner loop starts at 0 or later and stops at
threads * ROW_CACHE_SLOTS or earlier, and the host found no array written
in the body sharing memory with a cached one; otherwise the same body runs
with its inner loops strided over the threads (chunks.BlockCooperation).

Off by default (ROW_CACHE_SLOTS = 0) until its kernels have run on a GPU;
`NUMBA_MLIR_GPU_SCHEDULE=ROW_CACHE_SLOTS=16` turns it on.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from numba.core import ir as nir

from ..._mlir import arith, ir, memref, scf
from ...lowering.arrays import load_element, store_element
from ...lowering.build import cmpi, const_i64, const_index, to_i64, to_index
from ...lowering.indexing import element_indices
from ...lowering.overlap import spans_intersect
from ...lowering.registry import stmt_rules
from ...lowering.types import scalar_type
from ...parallel.row_access import RowAccessPlan
from . import schedules



def slots() -> int:
    """ROW_CACHE_SLOTS (schedules.py) as it is when a function compiles; 0: off."""
    return schedules.ROW_CACHE_SLOTS


@dataclass
class RowCacheRequest:
    """A plan and what the host computed for it before the launch."""
    plan: RowAccessPlan
    disjoint: ir.Value          # i1: no written array meets a cached one
    bounds: list                # (start, stop) i64 of each inner loop

    @classmethod
    def on_host(cls, lw, plan: RowAccessPlan, bounds: list, loc) -> "RowCacheRequest":
        disjoint = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
        for name in plan.cached:
            cached = lw.read(nir.Var(None, name, loc))
            for other in plan.others_written(name):
                meets = spans_intersect(cached, lw.read(nir.Var(None, other, loc)))
                disjoint = arith.AndIOp(disjoint, _not(meets)).result
        return cls(plan, disjoint, bounds)

    def fits(self, threads: ir.Value) -> ir.Value:
        """i1, in the kernel: the cache can hold every inner loop's row."""
        ok = self.disjoint
        reach = to_i64(arith.MulIOp(threads, const_index(slots())).result)
        zero = const_i64(0)
        for start, stop in self.bounds:
            ok = arith.AndIOp(ok, cmpi("sge", start, zero)).result
            ok = arith.AndIOp(ok, cmpi("sle", stop, reach)).result
        return ok


class RowCache:
    """The slots of one block's threads while a cached body is emitted."""

    def __init__(self, lw, request: RowCacheRequest, entry: ir.Block,
                 thread: ir.Value, threads: ir.Value):
        self.lw, self.plan = lw, request.plan
        self.thread, self.threads = thread, threads
        self.slot = None            # the unrolled step being emitted
        self.slots = slots()
        self.values, self.filled = {}, {}
        byte = ir.IntegerType.get_signless(8)
        with ir.InsertionPoint.at_block_begin(entry), ir.Location.unknown():
            for name, ty in self.plan.cached.items():
                self.values[name] = memref.AllocaOp(
                    ir.MemRefType.get([self.slots], scalar_type(ty.dtype)), [], []).result
                self.filled[name] = memref.AllocaOp(ir.MemRefType.get([self.slots], byte),
                                                    [], []).result
        empty = arith.ConstantOp(byte, 0).result
        for flags in self.filled.values():
            for r in range(self.slots):
                memref.StoreOp(empty, flags, [const_index(r)])

    def covers(self, nest) -> bool:
        return nest is not None and len(nest.vars) == 1 and nest.vars[0] in self.plan.loops

    def steps(self, nest, step: Callable[[ir.Value, list], list], accs: list) -> list:
        """`accs = step(k, accs)` for this thread's iterations k of the inner
        loop `nest` (j = start + k = r * threads + thread), unrolled."""
        start, trips = to_index(nest.starts[0]), nest.trips[0]
        types_ = [a.type for a in accs]
        for r in range(self.slots):
            j = arith.AddIOp(arith.MulIOp(const_index(r), self.threads).result, self.thread).result
            k = arith.SubIOp(j, start).result
            # j < start wraps k around to a huge unsigned value
            mine = cmpi("ult", k, trips)
            branch = scf.IfOp(mine, types_, has_else=True)
            with ir.InsertionPoint(branch.then_block):
                self.slot = r
                try:
                    scf.YieldOp(step(k, accs))
                finally:
                    self.slot = None
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp(accs)
            accs = list(branch.results)
        return accs

    # -- the statements of the plan -------------------------------------------------

    def rules(self) -> dict:
        rules = {key: self._load for key in self.plan.loads}
        rules.update({key: self._store for key in self.plan.stores})
        return rules

    def _load(self, lw, stmt: nir.Assign) -> None:
        if self.slot is None:
            return stmt_rules.get(type(stmt))(lw, stmt)
        name = stmt.value.value.name
        array, indices = self._element(lw, name, stmt.value.index)
        r = const_index(self.slot)
        values, filled = self.values[name], self.filled[name]
        held = cmpi("ne", memref.LoadOp(filled, [r]).result,
                    arith.ConstantOp(ir.IntegerType.get_signless(8), 0).result)
        branch = scf.IfOp(held, [scalar_type(array.type.dtype)], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp([memref.LoadOp(values, [r]).result])
        with ir.InsertionPoint(branch.else_block):
            value = load_element(array, indices)
            self._keep(name, value)
            scf.YieldOp([value])
        lw.write(stmt.target.name, branch.results[0], array.type.dtype)

    def _store(self, lw, stmt: nir.SetItem) -> None:
        if self.slot is None:
            # the plan admits only inner loops that run as steps (row_access.py)
            raise RuntimeError(f"row cache: {stmt} outside the steps of an inner loop")
        name = stmt.target.name
        array, indices = self._element(lw, name, stmt.index)
        value = lw.read_as(stmt.value, array.type.dtype)
        store_element(value, array, indices)
        self._keep(name, value)

    def _element(self, lw, name: str, index: nir.Var):
        array = lw.read(nir.Var(None, name, index.loc))
        indices = element_indices(lw, array, lw.read(index), lw.typeof(index.name), index.loc)
        return array, indices

    def _keep(self, name: str, value: ir.Value) -> None:
        r = const_index(self.slot)
        memref.StoreOp(value, self.values[name], [r])
        memref.StoreOp(arith.ConstantOp(ir.IntegerType.get_signless(8), 1).result,
                       self.filled[name], [r])


def _not(flag: ir.Value) -> ir.Value:
    return arith.XOrIOp(flag, arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result).result
