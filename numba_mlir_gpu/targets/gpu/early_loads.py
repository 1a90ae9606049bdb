"""Loads of independent iterations issued early: several loads in flight per
thread where a loop's iterations both read and write memory.

strided_fold runs `unroll` iterations per trip of its main loop so that a
thread has that many loads in flight. That only happens when the loads can
be issued together. In a row kernel's `out[i, j] = exp(x[i, j] - top)` each
copy's load follows the previous copy's store, which may alias it as far as
LLVM and ptxas know, so the thread waits for each load in turn (the SASS of
the row softmax: LDG, EX2, STG, LDG, ...): a trip costs `unroll` memory
latencies instead of one.

The iterations of a parallel loop (a prange, a parfor of an array
expression, an inner loop that parallel/inner_loops.py proved independent)
write distinct elements and read a written array only at the element they
write, with arrays of different names taken not to overlap: the promise
that lets their iterations run on different threads at all. So a load of
one copy may move above another copy's stores. `tag_copy` marks, at build
time, the memory operations of each copy with its number; after the
variables' slots have become SSA values (mem2reg), `issue_loads_early`
moves each tagged load of such a trip, with the pure operations that
compute its address, up to the start of the trip or the first point where
its own copy (or an untagged operation) may have written memory.
"""
from __future__ import annotations

from ..._mlir import ir

COPY_ATTR = "numba_mlir_gpu.copy"
LOOP_ATTR = "numba_mlir_gpu.independent_copies"

_READS = frozenset({"memref.load"})
_WRITES = frozenset({"memref.store", "memref.atomic_rmw", "memref.generic_atomic_rmw"})
# no memory effects and no undefined behaviour that depends on where they run
# (a trip's top-level operations all run, moved or not)
_PURE_DIALECTS = ("arith.", "index.", "math.", "complex.")
_PURE = frozenset({"memref.dim", "memref.subview", "memref.reinterpret_cast", "memref.cast",
                   "memref.extract_strided_metadata", "memref.collapse_shape",
                   "memref.expand_shape", "affine.apply", "scf.yield"})


def mark_independent(loop: ir.Operation) -> None:
    loop.attributes[LOOP_ATTR] = ir.UnitAttr.get()


def tag_copy(ops: list, copy: int) -> None:
    """Mark the memory operations among `ops` (nested ones too) as copy
    number `copy` of an independent iteration."""
    tag = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), copy)

    def visit(op):
        if op.name in _READS or op.name in _WRITES:
            op.attributes[COPY_ATTR] = tag
        return ir.WalkResult.ADVANCE
    for op in ops:
        op.walk(visit)


def issue_loads_early(module: ir.Module) -> None:
    loops = []

    def visit(op):
        if op.name == "scf.for" and LOOP_ATTR in op.attributes:
            loops.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    for loop in loops:
        block = loop.regions[0].blocks[0]
        _schedule(block)
        del loop.attributes[LOOP_ATTR]
        _untag(block)


def _schedule(block: ir.Block) -> None:
    loads = [op.operation for op in block.operations
             if op.name in _READS and COPY_ATTR in op.attributes]
    unchanged = _unchanged_slots(block)
    for load in loads:
        if _is_stack_slot(load.operands[0]):
            continue
        ops = [op.operation for op in block.operations]
        position = {op: i for i, op in enumerate(ops)}
        slice_ = _address_slice(load, position, unchanged)
        if slice_ is None:
            continue
        earliest = _earliest(load, slice_, ops, position)
        moved = [op for op in sorted(slice_, key=position.get) + [load]
                 if position[op] >= earliest]
        anchor = next(op for op in ops[earliest:] if op not in moved)
        if position[anchor] > position[load]:
            continue        # already as early as it can be
        for op in moved:
            op.move_before(anchor)


def _earliest(load: ir.Operation, slice_: list, ops: list, position: dict) -> int:
    """The first position of the block that `load` and its address slice
    may move to: after the values they use, and after the last operation
    above the load that it may not pass."""
    earliest = 0
    for op in slice_ + [load]:
        for value in op.operands:
            owner = _defining_op(value)
            if owner is not None and owner in position and owner not in slice_:
                earliest = max(earliest, position[owner] + 1)
    copy = _copy_of(load)
    for i in range(position[load] - 1, earliest - 1, -1):
        if ops[i] not in slice_ and not _passable(ops[i], copy):
            return i + 1
    return earliest


def _untag(block: ir.Block) -> None:
    def visit(op):
        if COPY_ATTR in op.attributes:
            del op.attributes[COPY_ATTR]
        return ir.WalkResult.ADVANCE
    for op in block.operations:
        op.operation.walk(visit)


def _address_slice(load: ir.Operation, position: dict, unchanged: list):
    """The operations of the block that `load`'s operands are computed from,
    all pure or loads of a stack slot that the trip does not change, or
    None when some of them is neither."""
    found, work = [], list(load.operands)
    while work:
        owner = _defining_op(work.pop())
        if owner is None or owner not in position or owner in found:
            continue
        if not (_pure(owner) or owner.name in _READS and _is_unchanged_slot(owner, unchanged)):
            return None
        found.append(owner)
        work.extend(owner.operands)
    return found


def _is_unchanged_slot(load: ir.Operation, unchanged: list) -> bool:
    # not `_slot(...) in unchanged`: an Operation compared with None raises
    slot = _slot(load.operands[0])
    return slot is not None and slot in unchanged


def _passable(op: ir.Operation, copy: int) -> bool:
    """May a load of copy `copy` move above `op`? When `op` (with what it
    nests) has no effects but reads and writes of other copies."""
    ok = True

    def visit(inner):
        nonlocal ok
        name = inner.name
        if name in _WRITES:
            ok = _copy_of(inner) not in (None, copy) and not _is_stack_slot(_buffer(inner))
        elif not (name in _READS or _pure(inner) or name == "scf.if"):
            ok = False
        return ir.WalkResult.ADVANCE if ok else ir.WalkResult.INTERRUPT
    op.walk(visit)
    return ok


def _pure(op: ir.Operation) -> bool:
    return op.name.startswith(_PURE_DIALECTS) or op.name in _PURE


def _copy_of(op: ir.Operation):
    attr = op.attributes[COPY_ATTR] if COPY_ATTR in op.attributes else None
    return None if attr is None else ir.IntegerAttr(attr).value


def _defining_op(value: ir.Value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _buffer(op: ir.Operation) -> ir.Value:
    return next(v for v in op.operands if isinstance(v.type, ir.MemRefType))


_VIEWS = frozenset({"memref.subview", "memref.reinterpret_cast", "memref.cast",
                    "memref.collapse_shape", "memref.expand_shape"})


def _slot(memref: ir.Value):
    """The memref.alloca that `memref` views, if any: a buffer on the
    thread's stack (a variable slot that mem2reg left), which every copy
    uses."""
    owner = _defining_op(memref)
    while owner is not None and owner.name in _VIEWS:
        owner = _defining_op(owner.operands[0])
    return owner if owner is not None and owner.name == "memref.alloca" else None


def _is_stack_slot(memref: ir.Value) -> bool:
    return _slot(memref) is not None


def _unchanged_slots(block: ir.Block) -> list:
    """The stack slots that the block's operations only load from: within
    a trip, a load of one gives the same value wherever it is."""
    loaded, other = [], []

    def visit(op):
        for value in op.operands:
            slot = _slot(value) if isinstance(value.type, ir.MemRefType) else None
            if slot is not None:
                (loaded if op.name in _READS or op.name in _VIEWS else other).append(slot)
        return ir.WalkResult.ADVANCE
    for op in block.operations:
        op.operation.walk(visit)
    return [s for s in loaded if s not in other]
