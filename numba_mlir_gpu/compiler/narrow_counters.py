"""While-loop counters of kernels in 32 bits where the loop's own bound allows it.

Python's ints are 64-bit, so the counter of an escape-time loop (`while n <
max_iter and ...: n += 1`) is an i64, and on a GPU each 64-bit add and
compare is two instructions in the loop. In CuPy's version of the Mandelbrot
kernel of benchmarks/, `int n` instead of `long long n` took an H100 from
0.219 to 0.205 ms; nothing else in that loop is integer work.

A counter is a value an `scf.while` carries that starts at a constant, grows
by a positive constant once per trip (in either region), and that the loop
goes on with only while it is below a bound B defined outside the loop (the
loop's condition implies `counter < B`, or `<=`). Every value it takes then
lies between its start and max(start, B) + step, so when B is in range (a
check made once, before the loop) it never leaves i32 and no add wraps. The
loop is versioned on that check: the i32 copy, or the untouched i64 loop.
Other uses of the counter read it sign-extended; the loop's result too,
through an opaque copy: LLVM's loop strength reduction takes truncation to
i32 as free on NVPTX, and to serve that one sign extension after the loop it
turned the i32 counter back into an i64 one (an add with carry per trip).
"""
from __future__ import annotations

from dataclasses import dataclass

from .._mlir import arith, ir, llvm, scf
from ..lowering.build import cmpi, const_i64
from .deallocation import defined_in, inside, operations
from .nonnegative import defining_op, integer_constant

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_MAX_STEP = 1 << 16
_SLT, _SLE, _SGT, _SGE = 2, 3, 4, 5         # arith.CmpIPredicate
# counter < bound, as (predicate, the counter's operand): whether `=` is allowed too
_BELOW = {(_SLT, 0): False, (_SLE, 0): True, (_SGT, 1): False, (_SGE, 1): True}
_DEPTH = 8


@dataclass
class _Counter:
    position: int           # among the `before` region's arguments (and the loop's inits)
    forwarded: int          # among scf.condition's forwarded values (and the loop's results)
    increment: ir.Operation     # counter + step (arith.addi)
    compare: ir.Operation       # counter < bound (or <=), which the condition implies
    tested: int                 # the counter's operand of `compare`
    step: int

    @property
    def bound(self) -> ir.Value:
        return self.compare.operands[1 - self.tested]

    def highest_bound(self) -> int:
        """The largest bound for which every value stays in i32."""
        predicate = ir.IntegerAttr(self.compare.attributes["predicate"]).value
        return _I32_MAX - self.step + (0 if _BELOW[predicate, self.tested] else 1)


def narrow_while_counters(module: ir.Module, in_kernels_only: bool = True) -> None:
    """Each scf.while of a kernel (after outlining) with counters: versioned,
    its counters in i32 where their bounds fit. `in_kernels_only=False`
    (tests, JIT-ed on the CPU): every scf.while, and no PTX copy."""
    def wanted(op) -> bool:
        return op.name == "scf.while" and (not in_kernels_only or inside(op, "gpu.module"))
    for loop in operations(module, wanted):
        counters = _counters(loop)
        if counters:
            _version(loop, counters, opaque=in_kernels_only)


def _counters(loop: ir.Operation) -> list[_Counter]:
    before, after = (region.blocks[0] for region in loop.regions)
    forwarded = list(_last(before).operands)[1:]
    yielded = list(_last(after).operands)
    found, i64 = [], ir.IntegerType.get_signless(64)
    for p, argument in enumerate(before.arguments):
        start = integer_constant(loop.operands[p])
        if argument.type != i64 or start is None or not _I32_MIN <= start <= _I32_MAX - _MAX_STEP:
            continue
        for q, value in enumerate(forwarded):
            counter = _counter_at(loop, p, q, value, yielded[p])
            if counter:
                found.append(counter)
                break
    return found


def _counter_at(loop, p: int, q: int, value: ir.Value, yielded: ir.Value):
    """The counter that `before` argument p is, forwarded at q (as `value`,
    passed back to p as `yielded`), in either shape: incremented in `before`
    (x = counter + step tested and forwarded, then passed back as it is: the
    shape of CPython's rotated `while` loops) or in `do` (the counter tested
    and forwarded, counter + step passed back); None if it is neither."""
    before, after = (region.blocks[0] for region in loop.regions)
    shapes = ((defining_op(value), before.arguments[p], yielded, after.arguments[q]),
              (defining_op(yielded), after.arguments[q], value, before.arguments[p]))
    for add, counter, passed, unchanged in shapes:
        step = _step_of(add, counter)
        if step is not None and add.parent == loop and passed == unchanged:
            return _tested(loop, value, _Counter(p, q, add, None, 0, step))
    return None


def _step_of(add, counter: ir.Value):
    """The positive constant step of `add` = counter + step, or None."""
    if add is None or add.name != "arith.addi" or add.operands[0] != counter:
        return None
    step = integer_constant(add.operands[1])
    return step if step is not None and 0 < step <= _MAX_STEP else None


def _tested(loop, x: ir.Value, counter: _Counter):
    """`counter` with the test `x < bound` (or <=) that the loop's condition
    implies, the bound defined outside the loop; None without one."""
    condition = _last(loop.regions[0].blocks[0]).operands[0]
    for use in x.uses:
        compare = use.owner.operation
        if compare.name != "arith.cmpi":
            continue
        predicate = ir.IntegerAttr(compare.attributes["predicate"]).value
        tested = use.operand_number
        if ((predicate, tested) in _BELOW and not defined_in(compare.operands[1 - tested], loop)
                and _implies(condition, compare.results[0], 0)):
            counter.compare, counter.tested = compare, tested
            return counter
    return None


def _implies(value: ir.Value, test: ir.Value, depth: int) -> bool:
    """Does `value` being non-zero mean that `test` holds?"""
    if value == test:
        return True
    op = defining_op(value)
    if op is None or depth > _DEPTH:
        return False
    name, depth = op.name, depth + 1
    if name == "arith.andi":
        return any(_implies(v, test, depth) for v in op.operands)
    if name in ("arith.extui", "arith.extsi", "arith.trunci"):
        return _implies(op.operands[0], test, depth)
    if name == "arith.select":        # c ? v : 0
        return integer_constant(op.operands[2]) == 0 and _implies(op.operands[0], test, depth)
    if name == "scf.if" and len(op.regions[1].blocks):    # if c { v } else { 0 }
        k = list(op.results).index(value)
        return (integer_constant(_last(op.regions[1].blocks[0]).operands[k]) == 0
                and _implies(op.operands[0], test, depth))
    return False


def _version(loop: ir.Operation, counters: list[_Counter], opaque: bool) -> None:
    """if every bound fits { the loop, its counters in i32 } else { a copy of it }."""
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    with ir.InsertionPoint(loop), loop.location:
        fits = None
        for c in counters:
            low = cmpi("sge", c.bound, const_i64(_I32_MIN))
            high = cmpi("sle", c.bound, const_i64(c.highest_bound()))
            both = arith.AndIOp(low, high).result
            fits = both if fits is None else arith.AndIOp(fits, both).result
        branch = scf.IfOp(fits, [r.type for r in loop.results], has_else=True)
    for old, new in zip(loop.results, branch.results):
        old.replace_all_uses_with(new)
    with ir.InsertionPoint(branch.else_block), loop.location:
        scf.YieldOp(list(loop.clone().results))
    branch.then_block.append(loop)
    with ir.InsertionPoint(loop), loop.location:
        bounds = [arith.TruncIOp(i32, c.bound).result for c in counters]
    with ir.InsertionPoint(branch.then_block), loop.location:
        yield_ = scf.YieldOp(list(loop.results))
    for c, bound in zip(counters, bounds):
        _narrow(loop, c, bound, i32)
        with ir.InsertionPoint(yield_), loop.location:
            result = loop.results[c.forwarded]
            yield_.operands[c.forwarded] = arith.ExtSIOp(
                i64, _opaque_copy(result) if opaque else result).result


def _narrow(loop: ir.Operation, c: _Counter, bound32: ir.Value, i32: ir.Type) -> None:
    """The counter's cycle in i32: the loop's init, the two block arguments,
    the increment and the loop's result; every other reader gets an extsi."""
    before, after = (region.blocks[0] for region in loop.regions)
    values = [before.arguments[c.position], after.arguments[c.forwarded],
              c.increment.results[0]]
    cycle = {(c.increment, 0), (c.compare, c.tested), (_last(before), c.forwarded + 1),
             (_last(after), c.position)}
    for value in values:
        _widen_other_uses(value, cycle)
    with ir.InsertionPoint(loop), loop.location:
        loop.operands[c.position] = arith.ConstantOp(
            i32, integer_constant(loop.operands[c.position])).result
    with ir.InsertionPoint(c.increment), c.increment.location:
        c.increment.operands[1] = arith.ConstantOp(i32, c.step).result
    c.compare.operands[1 - c.tested] = bound32
    for value in values + [loop.results[c.forwarded]]:
        value.set_type(i32)


def _widen_other_uses(value: ir.Value, cycle: set) -> None:
    """Readers of `value` outside the counter's cycle read extsi(value)."""
    others = [(use.owner.operation, use.operand_number) for use in value.uses
              if (use.owner.operation, use.operand_number) not in cycle]
    if not others:
        return
    op = defining_op(value)
    point = ir.InsertionPoint.after(op) if op is not None else \
        ir.InsertionPoint.at_block_begin(value.owner)
    with point, ir.Location.unknown():
        wide = arith.ExtSIOp(value.type, value).result
    for owner, number in others:
        owner.operands[number] = wide


def _opaque_copy(value: ir.Value) -> ir.Value:
    """`value` through a PTX move, which LLVM cannot see through."""
    return llvm.InlineAsmOp(value.type, [value], "mov.b32 $0, $1;", "=r,r").result


def _last(block: ir.Block) -> ir.Operation:
    return list(block.operations)[-1].operation
