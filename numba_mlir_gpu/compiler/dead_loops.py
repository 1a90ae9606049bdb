"""Loops whose results nothing uses, erased before the first canonicalize.

An inner `range` loop whose values are never read (a `continue` in its
body makes the body a multi-block `scf.execute_region`) is dead, and the
canonicalizer erases it: MLIR's RewriterBase::eraseOp then asserted that an
operation of that region still had uses, and the process aborted (seed
20261127554 of the CPU campaign, tests/test_generated_programs.py).
Erasing the loop here, as one `Operation.erase`, drops the region's
references before it frees them, so there is nothing to assert.

Only loops that provably do nothing but compute: every operation inside
reads at most (arith, math, index, cf, scf, `memref.load`/`dim`/`alloca`);
the loop's results feed only such computations, which nothing else uses.
"""
from __future__ import annotations

from .._mlir import ir
from .deallocation import nested_in, operations

LOOPS = ("scf.for", "scf.while")
_PURE_PREFIXES = ("arith.", "math.", "index.", "cf.", "scf.")
_READS = ("memref.load", "memref.dim", "memref.alloca")


def _computes_only(op) -> bool:
    name = op.name
    return name.startswith(_PURE_PREFIXES) or name in _READS


def _body_computes_only(loop) -> bool:
    ok = [True]

    def visit(op):
        if op != loop and not _computes_only(op):
            ok[0] = False
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    loop.walk(visit, ir.WalkOrder.PRE_ORDER)
    return ok[0]


def _dead_cone(loop) -> list | None:
    """The computations fed by `loop`'s results, if nothing but them uses
    those results and theirs; else None."""
    cone, pending = [], [loop]
    while pending:
        op = pending.pop()
        for result in op.results:
            for use in result.uses:
                user = use.owner
                user = user.operation
                # yielded, branched on, stored, passed to a region: not dead
                if user.regions or not _computes_only(user) \
                        or user.name.startswith(("cf.", "scf.")):
                    return None
                if user not in cone:
                    cone.append(user)
                    pending.append(user)
    return cone


def erase_dead_loops(module: ir.Module) -> None:
    # outer loops before the loops inside them (a post-order walk, reversed)
    loops = operations(module, lambda op: op.name in LOOPS)[::-1]
    # the loops enclosing each, known before anything is erased (an erased
    # operation must not be touched again); `loops` keeps the ids unique
    enclosing = [{id(other) for other in loops[:i] if nested_in(loop, other)}
                 for i, loop in enumerate(loops)]
    erased: set = set()
    for loop, outer in zip(loops, enclosing):   # outer loops first: they take their inner ones
        if outer & erased or not _body_computes_only(loop):
            continue
        cone = _dead_cone(loop)
        if cone is None:
            continue
        for user in _users_first(cone):
            user.erase()
        erased.add(id(loop))
        loop.erase()


def _users_first(cone: list) -> list:
    """`cone` ordered so that each operation comes before the ones it uses
    (they are in one block or nested regions: reverse order of discovery
    from the loop is not enough when two paths meet)."""
    ordered, placed = [], set()

    def place(op):
        key = id(op)
        if key in placed:
            return
        for result in op.results:
            for use in result.uses:
                owner = use.owner
                place(owner.operation)
        placed.add(key)
        ordered.append(op)
    for op in cone:
        place(op)
    return ordered
