"""Lowering of `bufferization.dealloc` for the general case.

Upstream `bufferization-lower-deallocations` handles a dealloc of several
memrefs, or one with retained values, through a helper that keeps
conditions in `memref<?xi1>`; MLIR 22 can no longer lower i1 memrefs to
LLVM (it asserts). This rewrite emits the same semantics with scalars
(the number of operands per dealloc is small), before the upstream pass
handles what is left.
"""
from __future__ import annotations

from ._mlir import arith, ir, memref, scf


def _pointer(value: ir.Value) -> ir.Value:
    return memref.ExtractAlignedPointerAsIndexOp(value).result


def _eq(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.CmpIOp(arith.CmpIPredicate.eq, a, b).result


def _any(values: list, false: ir.Value) -> ir.Value:
    result = false
    for value in values:
        result = arith.OrIOp(result, value).result
    return result


def lower_general_deallocs(module: ir.Module) -> None:
    """Rewrite every `bufferization.dealloc` that has several memrefs or
    retained values:

      * memref i is freed when its condition holds, it aliases no retained
        value and no earlier memref that is freed under its own condition;
      * retained value j is owned afterwards when some memref aliasing it
        was owned (its condition held).
    """
    found = []

    def visit(op):
        if op.name == "bufferization.dealloc":
            found.append(op.opview)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    for op in found:
        memrefs, conds, retained = list(op.memrefs), list(op.conditions), list(op.retained)
        if len(memrefs) <= 1 and not retained:
            continue           # the simple case: upstream lowers it well
        with ir.InsertionPoint(op), op.location:
            i1 = ir.IntegerType.get_signless(1)
            false = arith.ConstantOp(i1, ir.IntegerAttr.get(i1, 0)).result
            true = arith.ConstantOp(i1, ir.IntegerAttr.get(i1, 1)).result
            pointers = [_pointer(m) for m in memrefs]
            kept = [_pointer(r) for r in retained]
            for i, (m, cond, p) in enumerate(zip(memrefs, conds, pointers)):
                aliased = [_eq(p, r) for r in kept]
                aliased += [arith.AndIOp(conds[k], _eq(p, pointers[k])).result for k in range(i)]
                keep = _any(aliased, false)
                free = arith.AndIOp(cond, arith.XOrIOp(keep, true).result).result
                branch = scf.IfOp(free)
                with ir.InsertionPoint(branch.then_block):
                    memref.DeallocOp(m)
                    scf.YieldOp([])
            owned = [_any([arith.AndIOp(c, _eq(p, r)).result for c, p in zip(conds, pointers)],
                          false) for r in kept]
        for result, value in zip(op.results, owned):
            result.replace_all_uses_with(value)
        op.operation.erase()
