"""Negative-index wrap-around dropped where the index cannot be negative.

`x[j]` with a signed `j` is lowered as Python indexes: `j < 0 ? j + n : j`
(lowering/indexing.element_indices). Where `j` is a loop counter, a thread
or block id, an extent, or sums and products of those, the select is dead,
but LLVM cannot see it once the counters of a block's cooperative loops
(start: the thread id, step: the block size) are 64-bit arithmetic: each
element access of a row kernel kept five integer instructions for it, in
kernels that are issue-bound (row softmax on an H100: 66% of the SMs'
issue rate, 24% of DRAM bandwidth). MLIR's int-range-optimizations proves
few of them, since sums of unbounded values may wrap.

Here a value is non-negative when it is a non-negative constant, a GPU id
or size, a memref extent, a zero-extended value, a loop counter whose lower
bound and step are non-negative, or the sum, product, quotient, remainder,
min or max of such values. Sums and products are taken not to overflow: they are array
indices, far below 2^63, as for prange's own counters.
"""
from __future__ import annotations

from .._mlir import ir
from .deallocation import operations

# extui widens: its top bit is 0. Unsigned division is not here: a 64-bit
# dividend read as signed may be negative, and x // 1 keeps it so.
_SIZES = frozenset({"gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim",
                    "gpu.global_id", "gpu.lane_id", "memref.dim", "arith.extui"})
_OF_OPERANDS = frozenset({"arith.addi", "arith.muli", "arith.divsi", "arith.ceildivsi",
                          "arith.floordivsi", "arith.remsi", "arith.minsi", "arith.maxsi",
                          "arith.minui", "arith.divui", "arith.ceildivui", "arith.remui",
                          "arith.index_cast", "arith.index_castui", "arith.extsi",
                          "arith.select"})
_SLT = 2      # arith.CmpIPredicate.slt
_DEPTH = 32


def drop_wraparound_of_nonnegative_indices(module: ir.Module) -> None:
    for select in operations(module, _is_wraparound):
        value = select.operands[2]
        if _non_negative(value, {}, 0):
            select.results[0].replace_all_uses_with(value)
            select.erase()


def defining_op(value: ir.Value):
    """The operation that defines `value`, or None for a block argument."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _is_wraparound(op) -> bool:
    """select(v < 0, _, v)."""
    if op.name != "arith.select":
        return False
    compare = defining_op(op.operands[0])
    if compare is None or compare.name != "arith.cmpi":
        return False
    return (ir.IntegerAttr(compare.attributes["predicate"]).value == _SLT
            and compare.operands[0] == op.operands[2]
            and integer_constant(compare.operands[1]) == 0)


def _non_negative(value: ir.Value, seen: dict, depth: int) -> bool:
    if value in seen:
        return seen[value]
    if depth > _DEPTH:
        return False
    seen[value] = False         # a cycle (through a loop's carried value) proves nothing
    seen[value] = _decide(value, seen, depth + 1)
    return seen[value]


def _decide(value: ir.Value, seen: dict, depth: int) -> bool:
    owner = defining_op(value)
    if owner is None:
        return _counter(ir.BlockArgument(value), value.owner, seen, depth)
    name = owner.name
    if name == "arith.constant":
        number = integer_constant(value)
        return number is not None and number >= 0
    if name in _SIZES:
        return True
    if name == "arith.maxsi":
        return any(_non_negative(v, seen, depth) for v in owner.operands)
    if name == "arith.select":
        return all(_non_negative(v, seen, depth) for v in owner.operands[1:])
    if name in _OF_OPERANDS:
        return all(_non_negative(v, seen, depth) for v in owner.operands)
    return False


def _counter(argument: ir.BlockArgument, block: ir.Block, seen: dict, depth: int) -> bool:
    """A gpu.launch's ids and sizes; the counter of an scf.for or
    scf.parallel whose lower bound and step are non-negative."""
    parent = block.owner
    if parent is None:
        return False
    parent = parent.operation
    name, position = parent.name, argument.arg_number
    if name == "gpu.launch":
        return position < 12
    if name == "scf.for" and position == 0:
        lower, _, step = list(parent.operands)[:3]
        return _non_negative(lower, seen, depth) and _non_negative(step, seen, depth)
    if name == "scf.parallel":
        count = len(block.arguments)
        operands = list(parent.operands)
        if position < count and len(operands) >= 3 * count:
            lower, step = operands[position], operands[2 * count + position]
            return _non_negative(lower, seen, depth) and _non_negative(step, seen, depth)
    return False


def integer_constant(value: ir.Value):
    """The integer an arith.constant defines, or None."""
    owner = defining_op(value)
    if owner is None or owner.name != "arith.constant":
        return None
    attribute = owner.attributes["value"]
    return attribute.value if isinstance(attribute, ir.IntegerAttr) else None
