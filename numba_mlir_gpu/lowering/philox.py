"""Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
3", SC'11; the generator of cuRAND's and JAX's counter-based streams) as MLIR
arith on i32 values.

A counter-based generator is a keyed bijection of a 128-bit counter: the
block for counter c under key k depends on nothing else, so a draw can be
computed wherever it is needed (a GPU thread, a CPU worker, host code) with
no state to carry between draws. The same ops run on both targets, so a
seeded program draws the same blocks on the CPU and on the GPU.
"""
from __future__ import annotations

from .._mlir import arith, ir

# The round multipliers and the Weyl key increments of Random123.
PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
ROUNDS = 10


def i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def const_u32(value: int) -> ir.Value:
    value &= 0xFFFFFFFF
    if value >= 2 ** 31:            # MLIR integer attributes are signless
        value -= 2 ** 32
    return arith.ConstantOp(i32(), ir.IntegerAttr.get(i32(), value)).result


def philox4x32_10(counter: list[ir.Value], key: list[ir.Value]) -> list[ir.Value]:
    """The four i32 words of Philox4x32-10 of `counter` (4 i32) under `key`
    (2 i32), as Random123's `philox4x32(ctr, key)`."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    m0, m1 = const_u32(PHILOX_M0), const_u32(PHILOX_M1)
    w0, w1 = const_u32(PHILOX_W0), const_u32(PHILOX_W1)
    for r in range(ROUNDS):
        if r:                       # the key is bumped between rounds
            k0 = arith.AddIOp(k0, w0).result
            k1 = arith.AddIOp(k1, w1).result
        # mulhilo: the 64-bit product's low and high words
        product0 = arith.MulUIExtendedOp(m0, c0)
        product1 = arith.MulUIExtendedOp(m1, c2)
        lo0, hi0 = product0.low, product0.high
        lo1, hi1 = product1.low, product1.high
        c0 = arith.XOrIOp(arith.XOrIOp(hi1, c1).result, k0).result
        c1 = lo1
        c2 = arith.XOrIOp(arith.XOrIOp(hi0, c3).result, k1).result
        c3 = lo0
    return [c0, c1, c2, c3]


def split_i64(value: ir.Value) -> list[ir.Value]:
    """The low and high i32 words of an i64."""
    i64 = ir.IntegerType.get_signless(64)
    high = arith.ShRUIOp(value, arith.ConstantOp(i64, 32).result).result
    return [arith.TruncIOp(i32(), value).result, arith.TruncIOp(i32(), high).result]


def join_i64(low: ir.Value, high: ir.Value) -> ir.Value:
    """The i64 whose low and high words are `low` and `high` (i32)."""
    i64 = ir.IntegerType.get_signless(64)
    wide_high = arith.ShLIOp(arith.ExtUIOp(i64, high).result,
                             arith.ConstantOp(i64, 32).result).result
    return arith.OrIOp(wide_high, arith.ExtUIOp(i64, low).result).result
