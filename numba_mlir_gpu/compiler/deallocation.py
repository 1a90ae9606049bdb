"""Lowering of `bufferization.dealloc` for the general case.

Upstream `bufferization-lower-deallocations` handles a dealloc of several
memrefs, or one with retained values, through a helper that keeps
conditions in `memref<?xi1>`; MLIR 22 can no longer lower i1 memrefs to
LLVM (it asserts). This rewrite emits the same semantics with scalars
(the number of operands per dealloc is small), before the upstream pass
handles what is left.
"""
from __future__ import annotations

from .._mlir import arith, ir, memref, scf
from ..lowering.loops import copy_elements


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


def copies_of_views_as_loops(module: ir.Module) -> None:
    """`memref.copy` with a strided (view) side -> a loop nest of loads and
    stores. Buffer deallocation clones views this way; finalize-memref-to-llvm
    would call `memrefCopy` from libmlir_c_runner_utils, which needs libMLIR
    at run time and is not loaded beside the GPU runtime. Contiguous copies
    stay memcpys (and on the GPU, cuMemcpy: runtime/placement.py)."""
    copies = []

    def visit(op):
        if op.name == "memref.copy" and any(_strided(v.type) for v in op.operands):
            copies.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    for op in copies:
        source, target = op.operands
        with ir.InsertionPoint(op), op.location:
            index = ir.IndexType.get()
            extents = [memref.DimOp(source, arith.ConstantOp(index, axis).result).result
                       for axis in range(ir.MemRefType(source.type).rank)]
            copy_elements(source, target, extents)
        op.erase()


def _strided(ty: ir.Type) -> bool:
    """Not what finalize-memref-to-llvm copies with a memcpy: the identity
    layout, or a static shape laid out contiguously in row-major order."""
    mty = ir.MemRefType(ty)
    layout = mty.layout
    if isinstance(layout, ir.AffineMapAttr):
        return layout.value != ir.AffineMap.get_identity(mty.rank)
    if not mty.has_static_shape or not isinstance(layout, ir.StridedLayoutAttr):
        return True
    expected = 1
    for extent, stride in reversed(list(zip(mty.shape, layout.strides))):
        if extent != 1 and stride != expected:
            return True
        expected *= extent
    return False


def fresh_results_not_cloned(module: ir.Module) -> None:
    """Drop the clone ownership-based deallocation puts before returning an
    array it cannot prove the function owns, where the array is one the
    function made.

    lift-cf-to-scf joins a function's normal return and its error returns
    (exceptions.py: a status and empty placeholders) into `scf.if` and
    `scf.index_switch` ops, and the deallocation takes a value yielded from
    outside a region as not owned by it: every returned array came back
    copied, on each call. Where the value is, on every path, an allocation
    of this function, a callee's result (owned by the caller) or poison
    (the error paths'), the function owns it: it is returned as it is, and
    the function's last dealloc retains it instead of its clone."""
    for op in operations(module, lambda op: op.name == "scf.if" and len(op.results) == 1):
        value = _cloned_unless_owned(op)
        if value is not None and _fresh(value):
            op.results[0].replace_all_uses_with(value)
            op.erase()


def inside(op, name: str) -> bool:
    """Is `op` nested in an operation named `name` (say "gpu.module")?"""
    parent = op.parent
    while parent is not None:
        if parent.name == name:
            return True
        parent = parent.parent
    return False


def nested_in(op, ancestor) -> bool:
    """Is `op` nested (at any depth) in the operation `ancestor`?"""
    parent = op.parent
    while parent is not None:
        if parent == ancestor:
            return True
        parent = parent.parent
    return False


def defined_in(value: ir.Value, ancestor) -> bool:
    """Is `value` made by `ancestor` or inside it (a result, or an argument
    of one of its blocks)?"""
    owner = value.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner
    return op == ancestor or nested_in(op, ancestor)


def operations(module: ir.Module, wanted) -> list:
    """The operations of `module` for which `wanted(op)` holds (collected
    first, so that the caller may replace them)."""
    found = []

    def visit(op):
        if wanted(op):
            found.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return found


def _cloned_unless_owned(op):
    """v for `scf.if %owned { yield v } else { yield clone(v) }`, else None."""
    then_ops = list(op.regions[0].blocks[0].operations)
    if not len(op.regions[1].blocks):
        return None
    else_ops = list(op.regions[1].blocks[0].operations)
    if len(then_ops) != 1 or len(else_ops) != 2 or else_ops[0].name != "bufferization.clone":
        return None
    value = then_ops[0].operands[0]
    if else_ops[0].operands[0] != value or else_ops[1].operands[0] != else_ops[0].results[0]:
        return None
    return value


def _fresh(value: ir.Value, depth: int = 0) -> bool:
    """Is `value`, on every path, a new array of this function (or poison)?"""
    if depth > 32 or not isinstance(value, ir.OpResult):
        return False
    op = value.owner
    if op.name in ("memref.alloc", "func.call", "ub.poison"):
        return True
    if op.name == "memref.cast":
        return _fresh(op.operands[0], depth + 1)
    if op.name == "arith.select":
        return all(_fresh(v, depth + 1) for v in op.operands[1:])
    if op.name in ("scf.if", "scf.index_switch"):
        index = value.result_number
        return all(len(region.blocks) and _fresh(
            list(region.blocks[0].operations)[-1].operands[index], depth + 1)
            for region in op.regions)
    return False

