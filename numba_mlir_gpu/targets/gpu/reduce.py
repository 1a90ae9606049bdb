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
`compiler.passes.barriers_from_markers` turns the calls into `gpu.barrier` afterwards.
"""
from __future__ import annotations

from typing import Callable

from ..._mlir import arith, func, gpu, ir, memref, scf
from ...lowering.build import cmpi, const_index, stack_copy

THREADS = 256
WARP = 32
# Enough blocks to fill an H100/H200 (132 SMs x 8 blocks of 256 threads) in
# one wave; a constant, so the combining order never depends on the device.
MAX_BLOCKS = 1024
# Iterations per trip of a thread's loop: independent loads in flight
# (np.sum of 2^26 float32 on an H100: 128 us with 4, 122 us with 8).
UNROLL = 8

BARRIER_MARKER = "_numba_mlir_gpu_barrier"

_SLOT_BYTES = 8                        # widest scalar accumulator
_WARPS = THREADS // WARP


def tree_reduce(module: ir.Module, total: ir.Value, reductions,
                step: Callable[[ir.Value, list], list]) -> list[ir.Value]:
    """Fold `step(k, accs)` over k in [0, total) on the GPU; returns the
    combined value of each reduction (not yet combined with its initial value)."""
    declare_barrier_marker(module)
    blocks = arith.MinUIOp(
        const_index(MAX_BLOCKS),
        arith.MaxUIOp(const_index(1),
                      arith.CeilDivUIOp(total, const_index(THREADS)).result).result).result
    partials = [memref.AllocOp(ir.MemRefType.get([MAX_BLOCKS], r.mlir_type), [], []).result
                for r in reductions]

    def per_block(block_id, thread_id, grid_size):
        stride = arith.MulIOp(grid_size, const_index(THREADS)).result
        first = arith.AddIOp(arith.MulIOp(block_id, const_index(THREADS)).result,
                             thread_id).result
        accs = _strided_fold(first, total, stride, reductions, step)
        return block_id, _block_combine(reductions, accs, thread_id)
    _launch(blocks, reductions, partials, per_block)

    # all MAX_BLOCKS slots are copied; those past `blocks` are never read
    return [_pairwise_on_host(stack_copy(p), blocks, r) for p, r in zip(partials, reductions)]


def _pairwise_on_host(values: ir.Value, count: ir.Value, reduction) -> ir.Value:
    """values[0] after folding values[0:count] pairwise in place: each level
    adds the upper half onto the lower (`v[i] = v[i] + v[i + half]`), so a
    float sum's rounding error grows with log2(count), not count. count >= 1."""
    n = count
    for _ in range(MAX_BLOCKS.bit_length()):          # enough levels for any count
        half = arith.CeilDivUIOp(n, const_index(2)).result
        pairs = scf.ForOp(const_index(0), arith.SubIOp(n, half).result, const_index(1))
        with ir.InsertionPoint(pairs.body):
            i = pairs.induction_variable
            upper = memref.LoadOp(values, [arith.AddIOp(i, half).result]).result
            memref.StoreOp(reduction.combine(memref.LoadOp(values, [i]).result, upper),
                           values, [i])
            scf.YieldOp([])
        n = half
    return memref.LoadOp(values, [const_index(0)]).result


def _launch(grid: ir.Value, reductions, partials, body) -> None:
    """A 1-d launch of `grid` x THREADS; `body(block, thread, grid)` returns
    (slot, values) and thread 0 stores the values to `partials[slot]`."""
    shared_bytes = arith.ConstantOp(ir.IntegerType.get_signless(32),
                                    _SLOT_BYTES * _WARPS * len(reductions)).result
    one = const_index(1)
    launch = gpu.LaunchOp((grid, one, one), (const_index(THREADS), one, one),
                          dynamic_shared_memory_size=shared_bytes)
    args = launch.regions[0].blocks[0].arguments
    with ir.InsertionPoint(launch.regions[0].blocks[0]):
        slot, values = body(args[0], args[3], args[6])
        first_thread = scf.IfOp(cmpi("eq", args[3], const_index(0)))
        with ir.InsertionPoint(first_thread.then_block):
            for value, p in zip(values, partials):
                memref.StoreOp(value, p, [slot])
            scf.YieldOp([])
        gpu.TerminatorOp()


def _plain_fold(first, stop, stride, reductions, step) -> list:
    loop = scf.ForOp(first, stop, stride, [r.identity_value() for r in reductions])
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(step(loop.induction_variable, list(loop.inner_iter_args)))
    return list(loop.results)


def _strided_fold(first, total, stride, reductions, step) -> list:
    """Iterations first, first + stride, ... < total, in that order, UNROLL
    per trip of the main loop and the rest one by one."""
    if UNROLL == 1:
        return _plain_fold(first, total, stride, reductions, step)
    # count = ceil((total - first) / stride), 0 when first >= total
    remaining = arith.SubIOp(arith.MaxUIOp(total, first).result, first).result
    count = arith.CeilDivUIOp(remaining, stride).result
    unrolled = arith.MulIOp(arith.DivUIOp(count, const_index(UNROLL)).result,
                            const_index(UNROLL)).result
    span = arith.MulIOp(stride, const_index(UNROLL)).result
    main_stop = arith.AddIOp(first, arith.MulIOp(unrolled, stride).result).result

    def trip(k, accs):
        for u in range(UNROLL):
            accs = step(k, accs)
            if u + 1 < UNROLL:
                k = arith.AddIOp(k, stride).result
        return accs
    loop = scf.ForOp(first, main_stop, span, [r.identity_value() for r in reductions])
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(trip(loop.induction_variable, list(loop.inner_iter_args)))
    rest = scf.ForOp(main_stop, total, stride, list(loop.results))
    with ir.InsertionPoint(rest.body):
        scf.YieldOp(step(rest.induction_variable, list(rest.inner_iter_args)))
    return list(rest.results)


def _block_combine(reductions, accs, thread_id) -> list:
    """The block's combined value of each reduction, valid in thread 0:
    a butterfly within each warp, then one over the warps' values."""
    lane = arith.RemUIOp(thread_id, const_index(WARP)).result
    warp = arith.DivUIOp(thread_id, const_index(WARP)).result
    accs = [_butterfly(r, acc, WARP) for r, acc in zip(reductions, accs)]
    buffers = [_shared_slots(i, r.mlir_type) for i, r in enumerate(reductions)]
    first_lane = scf.IfOp(cmpi("eq", lane, const_index(0)))
    with ir.InsertionPoint(first_lane.then_block):
        for acc, buf in zip(accs, buffers):
            memref.StoreOp(acc, buf, [warp])
        scf.YieldOp([])
    barrier()
    # Every thread reads a warp's value (lane mod WARPS); lanes 0..WARPS-1 of
    # each warp then combine the WARPS values in the same fixed pattern.
    which = arith.RemUIOp(lane, const_index(_WARPS)).result
    values = [memref.LoadOp(buf, [which]).result for buf in buffers]
    return [_butterfly(r, v, _WARPS) for r, v in zip(reductions, values)]


def _butterfly(reduction, value: ir.Value, width: int) -> ir.Value:
    """Combine `value` across groups of `width` lanes with xor shuffles."""
    i32 = ir.IntegerType.get_signless(32)
    offset = width // 2
    while offset:
        other = _shuffle_xor(value, arith.ConstantOp(i32, offset).result,
                             arith.ConstantOp(i32, WARP).result)
        value = reduction.combine(value, other)
        offset //= 2
    return value


def _shuffle_xor(value: ir.Value, offset: ir.Value, width: ir.Value) -> ir.Value:
    """gpu.shuffle takes 32- and 64-bit values; narrower integers are widened."""
    ty = value.type
    narrow = isinstance(ty, ir.IntegerType) and ty.width < 32
    if narrow:
        value = arith.ExtUIOp(ir.IntegerType.get_signless(32), value).result
    shuffled = gpu.ShuffleOp(value, offset, width, gpu.ShuffleMode.XOR).shuffleResult
    return arith.TruncIOp(ty, shuffled).result if narrow else shuffled


def _shared_slots(index: int, element: ir.Type) -> ir.Value:
    """WARPS slots of workgroup memory for reduction `index`."""
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    raw = gpu.DynamicSharedMemoryOp(
        ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
                          memory_space=space)).result
    return memref.ViewOp(ir.MemRefType.get([_WARPS], element, memory_space=space), raw,
                         const_index(index * _SLOT_BYTES * _WARPS), []).result


def barrier() -> None:
    func.CallOp([], BARRIER_MARKER, [])


def declare_barrier_marker(module: ir.Module) -> None:
    if BARRIER_MARKER in ir.SymbolTable(module.operation):
        return
    with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
        decl = func.FuncOp(BARRIER_MARKER, ir.FunctionType.get([], []))
        decl.attributes["sym_visibility"] = ir.StringAttr.get("private")
