"""Atomic read-modify-writes of one array element, for updates that
iterations running at the same time may make to the same element.

Where one of `memref.atomic_rmw`'s kinds computes exactly what Numba
computes (integer addition, bitwise or/and/xor, integer min/max, float
addition), that op is used: both targets turn it into one instruction
(LLVM `atomicrmw`, PTX `atom.`). Any other update (multiplication, float
min/max with their NaN rules, mixed types) is a compare-and-swap loop on
the element's bits. MLIR 22 has no op for it that we can use: atomic_rmw
has no multiplication kind, `generic_atomic_rmw` lowers for integers only
(through `llvm.cmpxchg`), and buffer deallocation refuses both it and
`llvm.cmpxchg`. So the loop is ours, and its one compare-and-exchange is a
call of a marker function, which compiler/atomics.py replaces by
`llvm.cmpxchg` after deallocation.
"""
from __future__ import annotations

from typing import Callable

from numba.core import types

from .._mlir import arith, func, ir, memref, scf
from .build import cmpi, declare_function
from .values import ArrayValue

# Marker functions: @<prefix><memref type>(memref, indices..., expected,
# new) -> the bits found (the swap happened when they equal `expected`).
COMPARE_EXCHANGE_MARKER = "_numba_mlir_gpu_compare_exchange"


def atomic_rmw(kind: str, value: ir.Value, array: ArrayValue, indices: list) -> None:
    """array[indices] = array[indices] <kind> value (an `arith.AtomicRMWKind`
    name), as one atomic operation; booleans as bytes."""
    if isinstance(array.type.dtype, types.Boolean):
        value = arith.ExtUIOp(ir.IntegerType.get_signless(8), value).result
    memref.AtomicRMWOp(getattr(arith.AtomicRMWKind, kind), value, array.memref, indices)


def update_atomically(module: ir.Module, array: ArrayValue, indices: list,
                      update: Callable[[ir.Value], ir.Value]) -> None:
    """array[indices] = update(array[indices]) atomically. `update` maps the
    element's current value (i1 for booleans) to the new one; it is emitted
    once, in a loop that runs it again from the value another thread left
    when the exchange finds the element changed. The first guess is a plain
    load (the exchange checks it), as in CUDA's own atomic loops."""
    dtype = array.type.dtype
    element = ir.MemRefType(array.memref.type).element_type
    bits = ir.IntegerType.get_signless(8 if isinstance(dtype, types.Boolean) else dtype.bitwidth)
    marker = _declare_marker(module, array.memref.type, len(indices), bits)
    guess = _to_bits(memref.LoadOp(array.memref, indices).result, bits)
    loop = scf.WhileOp([bits], [guess])
    before = loop.before.blocks.append(bits)
    with ir.InsertionPoint(before):
        expected = before.arguments[0]
        current = _from_bits(expected, element)
        if isinstance(dtype, types.Boolean):
            current = arith.TruncIOp(ir.IntegerType.get_signless(1), current).result
        new = update(current)
        if isinstance(dtype, types.Boolean):
            new = arith.ExtUIOp(element, new).result
        found = func.CallOp([bits], marker, [array.memref, *indices, expected,
                                             _to_bits(new, bits)]).result
        scf.ConditionOp(cmpi("ne", found, expected), [found])
    after = loop.after.blocks.append(bits)
    with ir.InsertionPoint(after):
        scf.YieldOp([after.arguments[0]])


def _declare_marker(module: ir.Module, memref_type: ir.Type, rank: int, bits: ir.Type) -> str:
    return declare_function(module, f"{COMPARE_EXCHANGE_MARKER}{memref_type}",
                            [memref_type] + [ir.IndexType.get()] * rank + [bits, bits], [bits])


def _to_bits(value: ir.Value, bits: ir.Type) -> ir.Value:
    return value if value.type == bits else arith.BitcastOp(bits, value).result


def _from_bits(value: ir.Value, element: ir.Type) -> ir.Value:
    return value if value.type == element else arith.BitcastOp(element, value).result
