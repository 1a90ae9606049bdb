"""How each family of parallel work is scheduled on the GPU: the numbers in
one place. The code that applies them cites them from here.

Families:

* element-wise loops (flat `scf.parallel`, compiler/launch.py): blocks of
  ELEMENTWISE_THREADS threads, each running ELEMENTWISE_ITEMS iterations
  ELEMENTWISE_THREADS apart (coalesced, several loads in flight);
* scalar reductions of a loop (reduce.tree_reduce): blocks of
  REDUCE_THREADS threads, at most REDUCE_BLOCKS blocks (one wave on an
  H100/H200; a constant, so the combining order never depends on the
  device), REDUCE_UNROLL iterations per trip of a thread's grid-stride loop;
* prange bodies that share an iteration among a block's threads (inner
  loops, array reductions, bodies making arrays; chunks.py): from one warp
  up to BODY_MAX_THREADS threads (more when the blocks are too few to give
  the GPU BODY_FILL_THREADS threads), a thread per BODY_ITEMS_PER_THREAD
  iterations of the longest inner loop (1, 2 or 4 warps, each such size
  with a kernel of its own: BODY_SPECIALIZED_THREADS), inner loops unrolled
  BODY_UNROLL times,
  at most parallel/array_reductions.MAX_CHUNKS blocks; a body whose inner
  loops are all shorter than a warp, or a loop of BODY_FLAT_ITERATIONS
  iterations or more, runs one iteration per thread instead;
* scatter updates into a small array (privatize.py): blocks of
  PRIVATE_THREADS threads, at most PRIVATE_BLOCKS, each updating its own copy
  in shared memory (at most PRIVATE_SHARED_BYTES) with PRIVATE_UNROLL
  iterations in flight per thread, then adding it into the array;
* reductions along an axis (linalg generics, structured.py): a line
  contiguous in memory and at least a warp long is folded by a block
  (LINE_MAX_THREADS threads, LINE_UNROLL elements in flight each, at most
  LINE_MAX_BLOCKS blocks, each taking lines grid-stride); otherwise one
  thread per output element folds a piece of its line (coalesced across
  neighbouring outputs), the line split so that about COLUMN_THREADS
  threads work, each on at least COLUMN_MIN_PIECE elements, and the pieces
  are folded in order by a second loop.
"""
from __future__ import annotations

import os

WARP = 32

ELEMENTWISE_THREADS = 256
ELEMENTWISE_ITEMS = 4

REDUCE_THREADS = 256
REDUCE_BLOCKS = 1024
# np.sum of 2^26 float32 on an H100: 128 us with 4, 122 us with 8
REDUCE_UNROLL = 8

# (rows of 8192x1024 float32, softmax and layer norm on an H100: 256 threads
# 81/70 us, 128 threads 62/55 us, 512 threads 132/121 us)
BODY_MAX_THREADS = 128          # up to 1024 (reduce.MAX_WARPS)
BODY_ITEMS_PER_THREAD = 16      # iterations of the longest inner loop per thread
# more iterations than this run one per thread, whatever their inner loops
# (about the threads an H100 holds at once: 132 SMs x 2048)
BODY_FLAT_ITERATIONS = 1 << 18
# fewer blocks than BODY_FILL_THREADS / BODY_MAX_THREADS get wider blocks, up
# to a block's 1024 threads (softmax of the rows of float32 arrays on an
# H100: 1024x8192 98 -> 63 us, 512x16384 163 -> 59 us; with 2^19, 61 and 71 us)
BODY_FILL_THREADS = 1 << 18
# (8192x1024 float32 on an H100, ms, means of three calls, row softmax / layer
# norm / gufunc row normalise: unroll 4 with 8 items a thread .056/.048/.046
# without early loads and .052/.046/.043 with them; unroll 8 with 16 items and
# early loads .054/.038/.038)
BODY_UNROLL = 8
# 1: the unrolled iterations' loads issued before the earlier iterations'
# stores (early_loads.py); 0 for comparison
BODY_EARLY_LOADS = 1
# block sizes for which such a body gets a kernel of its own, with the size a
# constant (chunks.specialize_block_size)
BODY_SPECIALIZED_THREADS = (32, 64, 128)

# scatter updates into a small array (privatize.py): a copy per block in
# shared memory while the copies fit
PRIVATE_THREADS = 256
PRIVATE_BLOCKS = 1024
PRIVATE_UNROLL = 4
PRIVATE_SHARED_BYTES = 48 << 10

LINE_MAX_THREADS = 256
LINE_UNROLL = 4
LINE_MAX_BLOCKS = 16384

COLUMN_THREADS = 1 << 17
COLUMN_MIN_PIECE = 32


# $NUMBA_MLIR_GPU_SCHEDULE="BODY_UNROLL=2,LINE_MAX_THREADS=128" overrides
# these numbers for one process (read once, at import): a tuning knob for
# benchmarks, as $NUMBA_MLIR_GPU_LAUNCH is for element-wise loops.
ENV_SCHEDULE = "NUMBA_MLIR_GPU_SCHEDULE"


def _override_from_environment() -> None:
    text = os.environ.get(ENV_SCHEDULE, "").strip()
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        name = name.strip()
        if not name.isupper() or name.startswith("ENV") or not isinstance(globals().get(name), int):
            raise ValueError(f"{ENV_SCHEDULE}: {name!r} is not a schedule number of "
                             "numba_mlir_gpu/targets/gpu/schedules.py")
        globals()[name] = int(value)


_override_from_environment()
