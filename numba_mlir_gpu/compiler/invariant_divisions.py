"""Integer divisions and remainders that do not change in a loop, computed
before it (CPU pipeline).

LLVM speculates a division only by a non-zero constant. One whose operands do
not change in a loop but which sits under a condition there (`A[7 % n, 0]`
behind an `if`) stays in the loop, and LLVM's loop vectorizer then computes
it only where lane 0's condition holds (a `pred.urem.if` block) and gathers
through the result for every lane whose condition holds: a read through
poison, which segfaulted (progen seed 20261127671, docs/testing.md).

Our divisions cannot trap: rules/scalars._int_divisor gives each the
divisor `select(b == 0 [or a == MIN and b == -1], 1, b)`. Such a division,
with the pure computations of its operands (and reads of variable slots the
loop does not write), is moved in front of the innermost loop its operands
do not depend on; computing it there when the condition is false changes
nothing.
"""
from __future__ import annotations

from .._mlir import ir
from .deallocation import defined_in, nested_in, operations
from .nonnegative import defining_op, integer_constant

DIVISIONS = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
             "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui")
LOOPS = ("scf.for", "scf.while", "scf.parallel")
# pure computations a guarded divisor is made of
_PURE = ("arith.constant", "arith.select", "arith.cmpi", "arith.ori", "arith.andi",
         "arith.xori", "arith.addi", "arith.subi", "arith.muli", "arith.maxsi",
         "arith.minsi", "arith.maxui", "arith.minui", "arith.index_cast", "arith.extsi",
         "arith.extui", "arith.trunci", "arith.shli", "arith.shrsi", "arith.shrui")


def _is_cmp_eq(value, operand, constant) -> bool:
    op = defining_op(value)
    if op is None or op.name != "arith.cmpi" or op.attributes["predicate"].value != 0:
        return False
    a, b = op.operands
    return (a == operand and integer_constant(b) == constant) or \
        (b == operand and integer_constant(a) == constant)


def _guarded(division) -> bool:
    """Is the divisor `select(guard, 1, b)` with a guard that covers every
    trap of this division?"""
    dividend, divisor = division.operands
    select = defining_op(divisor)
    if select is None or select.name != "arith.select" or integer_constant(select.operands[1]) != 1:
        return False
    guard, b = select.operands[0], select.operands[2]
    if _is_cmp_eq(guard, b, 0):
        # b != 0; a signed division may still overflow, unless the dividend is not MIN
        if not division.name.endswith(("si",)):
            return True
        value = integer_constant(dividend)
        width = dividend.type.width if isinstance(dividend.type, ir.IntegerType) else 64
        return value is not None and value != -2 ** (width - 1)
    either = defining_op(guard)
    if either is None or either.name != "arith.ori":
        return False
    zero, overflow = either.operands
    if not _is_cmp_eq(zero, b, 0):
        zero, overflow = overflow, zero
    both = defining_op(overflow)
    if not _is_cmp_eq(zero, b, 0) or both is None or both.name != "arith.andi":
        return False
    return any(_is_cmp_eq(v, b, -1) for v in both.operands)


def _cone(op, loop, cone: list) -> bool:
    """Collect the pure operations inside `loop` that `op`'s operands come
    from (operands first); False if one of them is not pure or depends on
    something that changes in the loop."""
    for value in op.operands:
        if not defined_in(value, loop):
            continue
        source = defining_op(value)
        if source is None or source.regions or not (
                source.name in _PURE or _unchanged_slot_read(source, loop)):
            return False
        if source not in cone:
            if not _cone(source, loop, cone):
                return False
            cone.append(source)
    return True


def _unchanged_slot_read(op, loop) -> bool:
    """A read of a variable's slot (a 0-d `memref.alloca` made outside
    `loop`) that nothing in `loop` writes: the same value on every iteration
    (a divisor the lowering left in its slot, as `n` of a nested prange)."""
    if op.name != "memref.load" or len(op.operands) != 1:
        return False
    slot = op.operands[0]
    made = defining_op(slot)
    if made is None or made.name != "memref.alloca" or nested_in(made, loop):
        return False
    for use in slot.uses:
        user = use.owner.operation
        if user.name != "memref.load" and nested_in(user, loop):
            return False        # stored, or handed on, inside the loop
    return True


def _innermost_loop(op):
    parent = op.parent
    while parent is not None and parent.name not in LOOPS:
        parent = parent.parent
    return parent


def hoist_invariant_divisions(module: ir.Module) -> None:
    for division in operations(module, lambda op: op.name in DIVISIONS):
        while True:     # out of every loop it does not depend on, innermost first
            loop = _innermost_loop(division)
            if loop is None or not _guarded(division):
                break
            cone: list = []
            if not _cone(division, loop, cone):
                break
            for op in cone + [division]:
                op.move_before(loop)
