"""Divisions by a loop-invariant divisor, in kernels: one IEEE reciprocal per
thread, then three operations per division, with the same bits.

`out[i, j] /= total` in a row loop divides every element by the same value.
An IEEE division (div.rn.f64) is a subroutine of about 20 instructions
(reciprocal estimate, Newton steps, a check for a slow path), and row
kernels are issue-bound: in the row softmax's SASS the division loop took
37 instructions per element, the exp loop 16.

Markstein's theorem (Cornea, Harrison and Tang, "Scientific Computing on
Itanium-based Systems", Thm. 8.10; Muller et al., "Handbook of
Floating-Point Arithmetic", 2nd ed., Thm. 4.10): with y = RN(1/b), the
correctly rounded reciprocal, and q within one ulp of a/b, the residual
r = a - b*q is exact in one FMA and RN(q + r*y) = RN(a/b). With
q = RN(a*y) (within one ulp), the quotient is

    q = a * y;  r = fma(-q, b, a);  a / b = fma(r, y, q)

provided nothing over- or underflows: here when |a| and |b| lie in
[2^-E, 2^E] (E = 400 for float64, 40 for float32; then a/b, y, q and the
residual, at least |a| * 2^-p, are normal numbers). Other dividends (zero,
inf, NaN, tiny or huge ones) and divisors out of range take the division
itself, in a branch (LLVM keeps the branch: a division is too costly to
speculate). Divisions with fast-math flags are left to LLVM.
"""
from __future__ import annotations

from .._mlir import arith, ir, math, memref, scf
from ..lowering.fastmath import operation_flags
from .deallocation import defined_in, inside, nested_in, operations

_LOOPS = frozenset({"scf.for", "scf.while", "scf.parallel"})
_FUNCTIONS = frozenset({"func.func", "gpu.func", "gpu.module", "builtin.module"})
_RANGE_EXPONENT = {64: 400, 32: 40}


def reciprocal_division_in_kernels(module: ir.Module, in_kernels_only: bool = True) -> None:
    """Rewrite each arith.divf of a GPU module (any, with `in_kernels_only`
    false: for tests on the CPU) whose divisor does not change in a loop
    around the division."""
    reciprocals: list = []      # (divisor or its slot, loop, (reciprocal, in range))
    for op in operations(module, lambda op: op.name == "arith.divf"):
        if _has_fastmath(op) or not isinstance(op.results[0].type, (ir.F32Type, ir.F64Type)):
            continue
        if in_kernels_only and not inside(op, "gpu.module"):
            continue
        divisor = op.operands[1]
        slot = _variable_slot(divisor)
        loop = _outermost_invariant_loop(op, divisor, slot)
        if loop is None:
            continue
        source = divisor if slot is None else slot
        found = next((r for d, l, r in reciprocals if d == source and l == loop), None)
        if found is None:
            found = _reciprocal(divisor, slot, loop)
            reciprocals.append((source, loop, found))
        _divide_with(op, *found)


def _has_fastmath(op) -> bool:
    return bool(operation_flags(op) & {"fast", "arcp", "afn", "reassoc"})


def _variable_slot(value: ir.Value):
    """The rank-0 memref.alloca `value` is loaded from (a variable the
    lowering keeps in memory; LLVM makes it a register later), when every
    other use of the slot is a plain load or store; else None."""
    load = value.owner
    if isinstance(load, ir.Block) or load.name != "memref.load":
        return None
    slot = load.operands[0]
    alloca = slot.owner
    if isinstance(alloca, ir.Block) or alloca.name != "memref.alloca" or \
            ir.MemRefType(slot.type).rank != 0:
        return None
    for use in slot.uses:
        user = use.owner
        if user.name == "memref.load" or (user.name == "memref.store" and use.operand_number == 1):
            continue
        return None
    return slot


def _outermost_invariant_loop(op, divisor: ir.Value, slot):
    """The outermost loop around `op` in which the divisor keeps its value
    (defined outside it; a slot: stored nowhere in it), or None."""
    stores = [] if slot is None else \
        [use.owner for use in slot.uses if use.owner.name == "memref.store"]
    found, parent = None, op.parent
    while parent is not None and parent.name not in _FUNCTIONS:
        if parent.name in _LOOPS:
            if slot is None and defined_in(divisor, parent):
                break
            if slot is not None and (defined_in(slot, parent)
                                     or any(nested_in(store, parent) for store in stores)):
                break
            found = parent
        parent = parent.parent
    return found


def _constant(ty: ir.Type, value: float) -> ir.Value:
    return arith.ConstantOp(ty, ir.FloatAttr.get(ty, value)).result


def _in_range(value: ir.Value, exponent: int) -> ir.Value:
    """2^-exponent <= |value| <= 2^exponent (false for NaN)."""
    ty = value.type
    size = math.AbsFOp(value).result
    low = arith.CmpFOp(arith.CmpFPredicate.OGE, size, _constant(ty, 2.0 ** -exponent)).result
    high = arith.CmpFOp(arith.CmpFPredicate.OLE, size, _constant(ty, 2.0 ** exponent)).result
    return arith.AndIOp(low, high).result


def _reciprocal(divisor: ir.Value, slot, loop) -> tuple:
    """(RN(1/divisor), is the divisor in range), computed before `loop`
    (a slot is read there)."""
    ty = divisor.type
    with ir.InsertionPoint(loop), loop.location:
        if slot is not None:
            divisor = memref.LoadOp(slot, []).result
        reciprocal = arith.DivFOp(_constant(ty, 1.0), divisor).result
        usable = _in_range(divisor, _RANGE_EXPONENT[ty.width])
    return reciprocal, usable


def _divide_with(op, reciprocal: ir.Value, usable: ir.Value) -> None:
    dividend, divisor = op.operands[0], op.operands[1]
    ty = dividend.type
    with ir.InsertionPoint(op), op.location:
        fast = arith.AndIOp(usable, _in_range(dividend, _RANGE_EXPONENT[ty.width])).result
        branch = scf.IfOp(fast, [ty], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            estimate = arith.MulFOp(dividend, reciprocal).result
            residual = math.FmaOp(arith.NegFOp(estimate).result, divisor, dividend).result
            scf.YieldOp([math.FmaOp(residual, reciprocal, estimate).result])
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([arith.DivFOp(dividend, divisor).result])
    op.results[0].replace_all_uses_with(branch.results[0])
    op.erase()
