"""Scalar reductions of a GPU parallel loop as tree reductions.

One explicit `gpu.launch`, no atomics, so the combining order depends only
on the trip count and results are the same bits on every run:

1. `blocks` x THREADS threads. Thread `t` folds iterations t, t + stride, ...
   (a grid-stride loop, coalesced) into its accumulator, starting from the
   reduction's identity. The block then combines its threads: a butterfly of
   warp shuffles, each warp's value through shared memory, and a second
   butterfly over the warps. Thread 0 writes the block's value to
   `partial[block]`.
2. The host copies `partial` (one cuMemcpy ordered after the launch) into
   a stack buffer and folds `partial[0:blocks]` pairwise in a fixed order. A second, one-block kernel would cost a dependent launch on
   the GPU's timeline; the copy is needed either way.

`blocks` is min(MAX_BLOCKS, ceil(trips / THREADS)), at least 1, so an empty
loop yields the identity.

Barriers are emitted as calls of a private marker function: buffer
deallocation (compiler/passes.py) refuses `gpu.barrier`, which declares no memory
effects, while an opaque call keeps loads and stores from moving across it.
`compiler.passes.barriers_from_markers` turns the calls into barriers afterwards.
"""
from __future__ import annotations

from typing import Callable

from ..._mlir import arith, complex_dialect, func, gpu, ir, memref, scf
from ...lowering.build import (cmpi, const_index, declare_function, load_value, memory_type,
                               select, stack_copy, store_value, value_buffer)
from ...lowering.loops import accumulator_types, combine_each, identities
from . import schedules
from .early_loads import mark_independent, tag_copy

THREADS = schedules.REDUCE_THREADS
WARP = schedules.WARP
MAX_BLOCKS = schedules.REDUCE_BLOCKS
UNROLL = schedules.REDUCE_UNROLL

BARRIER_MARKER = "_numba_mlir_gpu_barrier"

_SLOT_BYTES = 16                       # widest scalar accumulator (complex128)
MAX_WARPS = 32                         # of a block that block_combine combines (1024 threads)


def tree_reduce(module: ir.Module, total: ir.Value, reductions,
                step: Callable[[ir.Value, list], list]) -> list[ir.Value]:
    """Fold `step(k, accs)` over k in [0, total) on the GPU; returns the
    combined value of each reduction (not yet combined with its initial value)."""
    declare_barrier_marker(module)
    blocks = arith.MinUIOp(
        const_index(MAX_BLOCKS),
        arith.MaxUIOp(const_index(1),
                      arith.CeilDivUIOp(total, const_index(THREADS)).result).result).result
    partials = [value_buffer([MAX_BLOCKS], ty) for ty in accumulator_types(reductions)]

    def per_block(block_id, thread_id, grid_size):
        stride = arith.MulIOp(grid_size, const_index(THREADS)).result
        first = arith.AddIOp(arith.MulIOp(block_id, const_index(THREADS)).result,
                             thread_id).result
        accs = strided_fold(first, total, stride, identities(reductions), step)
        return block_id, block_combine(reductions, accs, thread_id, const_index(THREADS))
    _launch(blocks, partials, per_block)

    # all MAX_BLOCKS slots are copied; those past `blocks` are never read
    return _pairwise_on_host([stack_copy(p) for p in partials], blocks, reductions)


def _pairwise_on_host(buffers: list[ir.Value], count: ir.Value, reductions) -> list[ir.Value]:
    """The values at 0 of `buffers` (one per accumulated value) after folding
    positions 0:count pairwise in place: each level combines the upper half
    into the lower (`v[i] = v[i] + v[i + half]`), so a float sum's rounding
    error grows with log2(count), not count. count >= 1."""
    value_types = accumulator_types(reductions)

    def load_all(i):
        return [load_value(b, [i], ty) for b, ty in zip(buffers, value_types)]
    n = count
    for _ in range(MAX_BLOCKS.bit_length()):          # enough levels for any count
        half = arith.CeilDivUIOp(n, const_index(2)).result
        pairs = scf.ForOp(const_index(0), arith.SubIOp(n, half).result, const_index(1))
        with ir.InsertionPoint(pairs.body):
            i = pairs.induction_variable
            upper = load_all(arith.AddIOp(i, half).result)
            for value, b in zip(combine_each(reductions, load_all(i), upper), buffers):
                store_value(value, b, [i])
            scf.YieldOp([])
        n = half
    return load_all(const_index(0))


def _launch(grid: ir.Value, partials, body) -> None:
    """A 1-d launch of `grid` x THREADS; `body(block, thread, grid)` returns
    (slot, values) and thread 0 stores the values to `partials[slot]`."""
    shared = arith.ConstantOp(ir.IntegerType.get_signless(32),
                              shared_bytes(len(partials))).result
    one = const_index(1)
    launch = gpu.LaunchOp((grid, one, one), (const_index(THREADS), one, one),
                          dynamic_shared_memory_size=shared)
    args = launch.regions[0].blocks[0].arguments
    with ir.InsertionPoint(launch.regions[0].blocks[0]):
        slot, values = body(args[0], args[3], args[6])
        first_thread = scf.IfOp(cmpi("eq", args[3], const_index(0)))
        with ir.InsertionPoint(first_thread.then_block):
            for value, p in zip(values, partials):
                store_value(value, p, [slot])
            scf.YieldOp([])
        gpu.TerminatorOp()


def strided_fold(first, total, stride, initial: list, step, unroll: int = UNROLL,
                 independent: bool = False) -> list:
    """`accs = step(k, accs)` for k = first, first + stride, ... < total, in
    that order, from `initial`: `unroll` iterations per trip of a main loop
    (so that a thread has that many independent loads in flight), then the
    rest one by one. Returns the final accumulators. `independent`: the
    iterations are those of a parallel loop, whose loads may be issued
    before other iterations' stores (early_loads.py)."""
    # count = ceil((total - first) / stride), 0 when first >= total
    remaining = arith.SubIOp(arith.MaxUIOp(total, first).result, first).result
    count = arith.CeilDivUIOp(remaining, stride).result
    unrolled = arith.MulIOp(arith.DivUIOp(count, const_index(unroll)).result,
                            const_index(unroll)).result
    span = arith.MulIOp(stride, const_index(unroll)).result
    main_stop = arith.AddIOp(first, arith.MulIOp(unrolled, stride).result).result

    def trip(k, accs):
        for u in range(unroll):
            start = len(loop.body.operations)
            accs = step(k, accs)
            if independent:
                tag_copy(list(loop.body.operations)[start:], u)
            if u + 1 < unroll:
                k = arith.AddIOp(k, stride).result
        return accs
    loop = scf.ForOp(first, main_stop, span, initial)
    if independent:
        mark_independent(loop.operation)
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(trip(loop.induction_variable, list(loop.inner_iter_args)))
    rest = scf.ForOp(main_stop, total, stride, list(loop.results))
    with ir.InsertionPoint(rest.body):
        scf.YieldOp(step(rest.induction_variable, list(rest.inner_iter_args)))
    return list(rest.results)


def block_combine(reductions, values: list, thread: ir.Value, threads: ir.Value) -> list:
    """The values of the reductions (flattened, in the order of their
    `names`) combined over the threads of the block, in every thread.

    The block has `threads` threads, a multiple of the warp size up to
    MAX_WARPS warps. A butterfly of xor shuffles combines each warp (every
    lane ends with the warp's value); lane 0 of each warp stores it in
    shared memory; after a barrier every thread reads warp `lane mod p`, p
    the least power of two >= warps (the identities where there is no such
    warp: a butterfly pairs lanes by xor, so with 3 warps and no padding
    lane 0 got 2 * w0 + w1 + w2), and a second butterfly, over p lanes,
    combines the warps. The pattern depends only on the block size, so the
    result is the same bits on every run. A barrier at the end lets the
    slots be used again."""
    lane = arith.RemUIOp(thread, const_index(WARP)).result
    warp = arith.DivUIOp(thread, const_index(WARP)).result
    warps = arith.DivUIOp(threads, const_index(WARP)).result
    values = _butterfly(reductions, values, WARP)
    slots = [_shared_slots(i, memory_type(v.type)) for i, v in enumerate(values)]
    first_lane = scf.IfOp(cmpi("eq", lane, const_index(0)))
    with ir.InsertionPoint(first_lane.then_block):
        for value, slot in zip(values, slots):
            store_value(value, slot, [warp])
        scf.YieldOp([])
    barrier()
    lanes = power_of_two_at_least(warps)
    which = arith.RemUIOp(lane, lanes).result
    present = cmpi("ult", which, warps)
    identities = [v for red in reductions for v in red.identity_values()]
    values = [select(present, load_value(slot, [which], v.type), identity)
              for slot, v, identity in zip(slots, values, identities)]
    values = _butterfly(reductions, values, MAX_WARPS, active=lanes)
    barrier()
    return values


def power_of_two_at_least(count: ir.Value) -> ir.Value:
    """The least power of two >= `count`, for counts up to MAX_WARPS."""
    power, p = const_index(1), 1
    while p < MAX_WARPS:
        more = cmpi("ugt", count, power)
        power = arith.SelectOp(more, arith.ShLIOp(power, const_index(1)).result, power).result
        p *= 2
    return power


def shared_bytes(values: int) -> int:
    """Dynamic shared memory a block_combine of `values` values uses."""
    return _SLOT_BYTES * MAX_WARPS * values


def _butterfly(reductions, values: list, width: int, active: ir.Value = None) -> list:
    """Combine `values` across groups of `width` lanes with xor shuffles;
    with `active`, a power of two up to `width`, only over groups of
    `active` lanes (the steps of larger offsets are skipped)."""
    i32 = ir.IntegerType.get_signless(32)
    offset = width // 2
    while offset:
        others = [_shuffle_xor(v, arith.ConstantOp(i32, offset).result,
                               arith.ConstantOp(i32, WARP).result) for v in values]
        combined = combine_each(reductions, values, others)
        if active is not None:
            step = cmpi("ult", const_index(offset), active)
            combined = [select(step, c, v) for c, v in zip(combined, values)]
        values = combined
        offset //= 2
    return values


def _shuffle_xor(value: ir.Value, offset: ir.Value, width: ir.Value) -> ir.Value:
    """gpu.shuffle takes 32- and 64-bit values; narrower integers are widened,
    complex values shuffled part by part."""
    ty = value.type
    if isinstance(ty, ir.ComplexType):
        real, imag = (_shuffle_xor(part, offset, width) for part in (
            complex_dialect.ReOp(value).result, complex_dialect.ImOp(value).result))
        return complex_dialect.CreateOp(ty, real, imag).result
    narrow = isinstance(ty, ir.IntegerType) and ty.width < 32
    if narrow:
        value = arith.ExtUIOp(ir.IntegerType.get_signless(32), value).result
    shuffled = gpu.ShuffleOp(value, offset, width, gpu.ShuffleMode.XOR).shuffleResult
    return arith.TruncIOp(ty, shuffled).result if narrow else shuffled


def _shared_slots(index: int, element: ir.Type) -> ir.Value:
    """MAX_WARPS slots of workgroup memory for value `index`."""
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    raw = gpu.DynamicSharedMemoryOp(
        ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
                          memory_space=space)).result
    return memref.ViewOp(ir.MemRefType.get([MAX_WARPS], element, memory_space=space), raw,
                         const_index(index * _SLOT_BYTES * MAX_WARPS), []).result


def barrier() -> None:
    func.CallOp([], BARRIER_MARKER, [])


def declare_barrier_marker(module: ir.Module) -> None:
    declare_function(module, BARRIER_MARKER, [], [])
