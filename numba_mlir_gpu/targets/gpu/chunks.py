"""Array reductions of a GPU prange loop (`acc += x[i]`): one block per chunk.

One `gpu.launch` of `chunks` blocks. Block `b` runs the contiguous chunk `b`
of the iterations, in order, on its private copy of each accumulator (started
at the identity). The threads of a block share each iteration
(`BlockCooperation`): every thread runs the body's scalar code (the same
values in every thread), while the element loops of the array operations
(`parallel_for`, parfors nested in the body) are spread over the threads,
with a barrier around each. Item assignments outside those loops are done
by thread 0 between barriers, so a read-modify-write happens once; calls of
functions that may write an array they are given are refused (lowering/calls.py).

`chunks` = min(MAX_CHUNKS, trips, PRIVATE_BYTES / bytes of one set of
copies), at least 1: it depends only on sizes, so the combining order, and
the bits of the result, never depend on the device or on timing.
parallel/array_reductions.py's fold_copies then folds the copies in chunk order.

Temporary arrays the body makes (`acc += w * x[i]`) are not allocated in
the kernel: each allocation becomes a buffer allocated before the launch,
with a slot per block (or per thread, for one made inside an element loop),
which the kernel uses (scratch.py says how slots are sized). One that cannot
be sized before the launch, or a call of a function that makes arrays,
raises NeedsDeviceHeap: without array accumulators the loop is lowered
again as a plain kernel on the device heap (heap.py); with them it is an
error naming its source line.
"""
from __future__ import annotations

from typing import Callable

from ..._mlir import arith, gpu, ir, scf
from ...lowering.build import cmpi, const_index
from ...lowering.loops import delinearize, product
from ...parallel.array_reductions import MAX_CHUNKS, run_chunk
from . import schedules
from .reduce import (MAX_WARPS, barrier, block_combine, declare_barrier_marker, power_of_two_at_least,
                     shared_bytes, strided_fold)
from .scratch import KernelIndices, Temporary, hoist_temporaries

# Memory for the private copies of one loop's accumulators, all chunks together.
PRIVATE_BYTES = 256 << 20
WARP = schedules.WARP
MAX_THREADS = schedules.BODY_MAX_THREADS
UNROLL = schedules.BODY_UNROLL
EARLY_LOADS = bool(schedules.BODY_EARLY_LOADS)


class BlockCooperation:
    """The threads of one block running the same iteration of a loop body."""

    def __init__(self, thread: ir.Value, threads: ir.Value):
        self.thread, self.threads = thread, threads
        self.free = True      # False inside a loop of ours: plain code there
        self.temporaries: list[Temporary] = []
        self.combined_values = 0    # the most values one fold combines (shared memory)

    def loop(self, extents: list, body: Callable[[list], None]) -> None:
        """`body(indices)` over the box `extents`, flat index k on thread
        k mod threads (UNROLL per trip of its loop); barriers before (earlier
        reads) and after (the writes)."""
        def step(k, accs):
            self._plain(lambda: body(delinearize(k, extents)))
            return []
        barrier()
        strided_fold(self.thread, product(extents), self.threads, [], step, UNROLL,
                     independent=EARLY_LOADS)
        barrier()

    def fold(self, extents: list, body: Callable[[list, list], list], reductions) -> list:
        """`body(indices, accumulators) -> accumulators` over the box
        `extents`, flat index k on thread k mod threads, each thread from the
        reductions' identities; then the partials combined across the block
        (reduce.block_combine), the result in every thread."""
        def step(k, accs):
            result = []
            self._plain(lambda: result.extend(body(delinearize(k, extents), accs)))
            return result
        barrier()
        start = [v for red in reductions for v in red.identity_values()]
        partial = strided_fold(self.thread, product(extents), self.threads, start, step,
                               UNROLL, independent=EARLY_LOADS)
        self.combined_values = max(self.combined_values, len(start))
        return block_combine(reductions, partial, self.thread, self.threads)

    def single(self, emit: Callable[[], None], lw) -> None:
        """`emit()` by thread 0 only, between barriers."""
        barrier()
        branch = scf.IfOp(cmpi("eq", self.thread, const_index(0)))
        with ir.InsertionPoint(branch.then_block):
            self._plain(emit)
            lw.errors.check_pending(lw)     # its checks stay inside the branch
            scf.YieldOp([])
        barrier()

    def allocated(self, value: ir.Value, loc, bounds: list | None = None) -> None:
        """A temporary array of the body: one per block, or one per thread
        when made inside one of our loops, where each thread runs its own
        part (scratch.py). A block's slot is reused by the next iteration (or
        the next run of an inner loop), and every thread writes some arrays
        itself (a mask's positions): a barrier first, so that no thread still
        reads the slot's previous array."""
        if self.free:
            barrier()
        self.temporaries.append(Temporary(value, loc, per_thread=not self.free, bounds=bounds))

    def _plain(self, emit) -> None:
        self.free = False
        try:
            emit()
        finally:
            self.free = True


def chunk_count(total: ir.Value, copy_bytes: ir.Value) -> ir.Value:
    """min(MAX_CHUNKS, total, PRIVATE_BYTES / copy_bytes), at least 1."""
    by_memory = arith.DivUIOp(const_index(PRIVATE_BYTES),
                              arith.MaxUIOp(copy_bytes, const_index(1)).result).result
    chunks = arith.MinUIOp(const_index(MAX_CHUNKS),
                           arith.MinUIOp(total, by_memory).result).result
    return arith.MaxUIOp(chunks, const_index(1)).result


def block_threads(elements: ir.Value, most: int | ir.Value = MAX_THREADS,
                  whole_powers: bool = False) -> ir.Value:
    """Threads per block: `elements` rounded up to warps (with
    `whole_powers`, to 1, 2, 4, ... warps while that stays within
    BODY_MAX_THREADS: the sizes specialize_block_size compiles for; wider
    blocks would need fewer registers than the general kernel may use),
    between one warp and `most`."""
    if isinstance(most, int):
        most = const_index(most)
    warps = arith.CeilDivUIOp(elements, const_index(WARP)).result
    if whole_powers:
        rounded = power_of_two_at_least(warps)
        fits = cmpi("ule", rounded, const_index(MAX_THREADS // WARP))
        warps = arith.SelectOp(fits, rounded, warps).result
    threads = arith.MulIOp(warps, const_index(WARP)).result
    return arith.MaxUIOp(const_index(WARP), arith.MinUIOp(threads, most).result).result


def most_threads(blocks: ir.Value) -> ir.Value:
    """The most threads a block of a body may have: BODY_MAX_THREADS, or
    more (up to a block's limit) when `blocks` such blocks would not fill
    the GPU (BODY_FILL_THREADS): few long rows want wide blocks."""
    to_fill = arith.CeilDivUIOp(const_index(schedules.BODY_FILL_THREADS),
                                arith.MaxUIOp(blocks, const_index(1)).result).result
    most = arith.MaxUIOp(const_index(MAX_THREADS), to_fill).result
    return arith.MinUIOp(most, const_index(WARP * MAX_WARPS)).result


def launch_chunks(lw, total: ir.Value, chunks: ir.Value, threads: ir.Value, chunk) -> ir.Value:
    """Block b runs chunk b (array_reductions.Chunk), its threads cooperating;
    every thread holds the same scalar accumulators and stores the same
    partials. Returns the number of chunks run: `chunks`, or fewer when the
    body's temporaries need too much scratch memory."""
    declare_barrier_marker(lw.mlower.module)
    one = const_index(1)
    # dynamic shared memory for the folds of the body, known once it is built
    shared = arith.ConstantOp(ir.IntegerType.get_signless(32), 0)
    launch = gpu.LaunchOp((chunks, one, one), (threads, one, one),
                          dynamic_shared_memory_size=shared.result)
    args = launch.regions[0].blocks[0].arguments
    block, thread, grid_dim, block_dim = args[0], args[3], args[6], args[9]
    outer = lw.cooperation
    lw.cooperation = BlockCooperation(thread, block_dim)
    lw.parallel_depth += 1
    try:
        with ir.InsertionPoint(launch.regions[0].blocks[0]):
            size = arith.CeilDivUIOp(total, grid_dim).result     # the chunks launched
            loop = run_chunk(block, size, total, chunk)
            gpu.TerminatorOp()
        temporaries = lw.cooperation.temporaries
        shared.attributes["value"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), shared_bytes(lw.cooperation.combined_values))
    finally:
        lw.parallel_depth -= 1
        lw.cooperation = outer
    indices = KernelIndices(block, thread, block_dim, threads, total, lw.mlower.module)
    run = hoist_temporaries(launch.operation, loop, indices, chunks, temporaries)
    launch.operation.operands[list(launch.operation.operands).index(chunks)] = run
    specialize_block_size(launch.operation, threads, schedules.BODY_SPECIALIZED_THREADS)
    return run


def specialize_block_size(launch: ir.Operation, threads: ir.Value, sizes: tuple) -> None:
    """Copies of `launch` whose block has a constant number of threads,
    chosen on the host where `threads` is one of `sizes`; the launch as it
    is for other sizes.

    The threads of a cooperative loop take iterations `threads` apart, and
    its unrolled copies are that far apart too: with `threads` known only at
    launch, LLVM keeps each copy's offset (u * threads * itemsize) in a
    register pair for the whole kernel. The row softmax's kernel used 95
    registers a thread, 52 with the size a constant (ptxas 13, sm_90), and
    ran 0.054 against 0.043 ms at 8192x1024 float32 on an H100."""
    if not sizes:
        return
    with launch.location:
        switch = scf.IndexSwitchOp([], threads, list(sizes), ip=ir.InsertionPoint(launch))
        for i, size in enumerate(sizes):
            with ir.InsertionPoint(switch.case_block(i)):
                copy = launch.clone()
                scf.YieldOp([])
            body = copy.regions[0].blocks[0]
            with ir.InsertionPoint.at_block_begin(body):
                constant = const_index(size)
            body.arguments[9].replace_all_uses_with(constant)     # blockDim.x, as in launch_chunks
        with ir.InsertionPoint(switch.default_block):
            yield_op = scf.YieldOp([])
        launch.move_before(yield_op)
