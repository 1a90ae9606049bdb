"""Numba's threading controls: numba.get_num_threads() / set_num_threads(n),
get_parallel_chunksize() / set_parallel_chunksize(n) and the
`with numba.parallel_chunksize(n):` block (which Numba's with-lifting turns
into the two calls around the block)."""
from __future__ import annotations

import numba
from numba.core import config, types

from .._mlir import arith, ir, memref
from ..lowering import threading_layer
from ..lowering.build import cmpi, const
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import call_rules
from ..lowering.types import scalar_type
from ..lowering.values import PyValue

# -- numba.get_num_threads() / numba.set_num_threads(n) -----------------------------
#
# Host code calls Numba's threading layer (the calling thread's count, as
# Numba's implementation does through a ctypes pointer;
# lowering/threading_layer.py). Parallel bodies, kernels included, keep the
# count of their iteration in a variable of the body: NUMBA_NUM_THREADS until
# the iteration sets it. Numba's workers start from the caller's count and
# keep a setting across a thread's iterations; an iteration that sets before
# it reads, as Numba's tests do, sees the same here, and none depends on the
# thread it ran on.

_BODY_THREADS = "$num_threads"


def _integer_argument(args, sig, expr, name: str) -> ir.Value:
    """The one integer argument of a setter, as i64."""
    if len(args) != 1 or not isinstance(types.unliteral(sig.args[0]), types.Integer):
        raise UnsupportedConstructError(f"{name} of a non-integer", expr.loc)
    return cast(args[0], types.unliteral(sig.args[0]), types.int64)


def _configured_threads() -> int:
    return max(1, int(config.NUMBA_NUM_THREADS))


def _body_threads(lw) -> ir.Value:
    """The iteration's thread-count variable (i32), made on first use."""
    slot = lw.scope.find_slot(_BODY_THREADS)
    if slot is None:
        with ir.InsertionPoint.at_block_begin(lw.scope.alloca_block):
            slot = memref.AllocaOp(ir.MemRefType.get([], scalar_type(types.int32)), [],
                                   []).result
            memref.StoreOp(const(types.int32, _configured_threads()), slot, [])
        lw.scope.slots[_BODY_THREADS] = slot
    return slot


@call_rules.register(numba.get_num_threads)
def numba_get_num_threads(lw, args, sig, expr):
    if lw.parallel_depth > 0:
        count = memref.LoadOp(_body_threads(lw), []).result
    else:
        count = threading_layer.get_num_threads(lw.mlower.module)
    return cast(count, types.int32, types.unliteral(sig.return_type))


@call_rules.register(numba.set_num_threads)
def numba_set_num_threads(lw, args, sig, expr):
    """Numba's snt_check, then the count of this thread (host code) or of
    this iteration (parallel bodies)."""
    n = _integer_argument(args, sig, expr, "numba.set_num_threads")
    most = _configured_threads()
    bad = arith.OrIOp(cmpi("sgt", n, const(types.int64, most)),
                      cmpi("slt", n, const(types.int64, 1))).result
    lw.errors.raise_if(lw, bad, lw.errors.code(
        ValueError, (f"The number of threads must be between 1 and {most}",)))
    count = cast(n, types.int64, types.int32)
    if lw.parallel_depth > 0:
        memref.StoreOp(count, _body_threads(lw), [])
    else:
        threading_layer.set_num_threads(lw.mlower.module, count)
    return None


# -- numba.get_parallel_chunksize() / set_parallel_chunksize(n) ----------------------
#
# In host code, the calling thread's chunk size in Numba's threading layer,
# which Numba's parallel loops read (ours split their work as MLIR's async
# runtime or the GPU launch does, docs/supported.md). Numba's workers run
# with a chunk size of 0, so a parallel body reads 0 and its setting is
# dropped.

@call_rules.register(numba.get_parallel_chunksize)
def numba_get_parallel_chunksize(lw, args, sig, expr):
    if lw.parallel_depth > 0:
        return const(types.unliteral(sig.return_type), 0)
    size = threading_layer.get_parallel_chunksize(lw.mlower.module)
    return cast(size, types.uint32, types.unliteral(sig.return_type))


@call_rules.register(numba.set_parallel_chunksize)
def numba_set_parallel_chunksize(lw, args, sig, expr):
    """Numba's check (ValueError below 0), then the calling thread's chunk
    size; returns the one before."""
    n = _integer_argument(args, sig, expr, "numba.set_parallel_chunksize")
    lw.errors.raise_if(lw, cmpi("slt", n, const(types.int64, 0)), lw.errors.code(
        ValueError, ("chunksize must be greater than or equal to zero",)))
    result = types.unliteral(sig.return_type)
    if lw.parallel_depth > 0:
        return const(result, 0)
    before = threading_layer.set_parallel_chunksize(lw.mlower.module,
                                                    cast(n, types.int64, types.uint32))
    return cast(before, types.uint32, result)


@call_rules.register(numba.parallel_chunksize)
def numba_parallel_chunksize_block(lw, args, sig, expr):
    """`numba.parallel_chunksize(n)`, the object of a `with` block: the block's
    set and restore calls do the work; the object itself is not used."""
    return PyValue(numba.parallel_chunksize)
