"""Array reductions in prange loops (`acc += arr`, `acc *= arr` with `acc`
an array defined before the loop), deterministically.

The iteration space is cut into contiguous chunks; each chunk runs on a
private copy of the array, started at the operator's identity, and the
copies are then folded into the array in chunk order (`fold_copies`: groups
of FOLD_GROUP consecutive copies in parallel, then the groups' values in
order). The number of chunks is the target's choice and depends only on
sizes, so results are the same bits on every run:

* CPU: CHUNKS workers of one parallel loop, each running its chunk.
* GPU (targets/gpu/chunks.py): one block per chunk, up to thousands, chosen from
  the trip count and the accumulators' size; the block's threads share
  each iteration's element loops. Temporary arrays of the body become
  per-chunk scratch buffers allocated before the kernel.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable

from numba.core import ir as nir
from numba.core import types
from numba.parfors.parfor import Parfor

from .._mlir import arith, ir, memref, scf
from ..lowering.arrays import fill, load_element, shape_of, store_element
from ..lowering.build import const_index, stack_copy, store_value, value_buffer
from ..lowering.errors import UnsupportedConstructError, user_name
from ..lowering.loops import (accumulator_types, chunk_span, delinearize, flat_parallel,
                              fold_in_order, identities, parallel_for, product)
from ..lowering.types import memref_type
from ..lowering.values import ArrayValue
from .nest import capture
from .reduction import Reduction

# CPU: private copies, each folding one contiguous chunk of the iterations.
CHUNKS = 16
# Consecutive copies folded together in the first step of fold_copies.
FOLD_GROUP = 64

_OPERATORS = {operator.iadd: operator.add, operator.add: operator.add,
              operator.isub: operator.add, operator.sub: operator.add,
              operator.imul: operator.mul, operator.mul: operator.mul}


def array_reduction_names(lw, parfor) -> list[str]:
    return [name for name in parfor.redvars
            if isinstance(types.unliteral(lw.typeof(name)), types.Array)]


def lower_array_reductions(lw, parfor, nest, names: list, scalars: list[Reduction],
                           body_for, inner_trips: list = ()) -> list[ir.Value]:
    """`body_for(captured)` makes the BodyLowering of `parfor` (with the
    scalar reductions `scalars`) for the given captured values; the array
    reduction variables `names` are rebound to each chunk's private copy.
    `inner_trips`: trip counts of the parfors nested in the body, where the
    host knows them before the loop (None where not), for the target to size
    the group of threads that shares an iteration.
    Returns the scalar reductions' values over the loop (each chunk's, folded
    in chunk order; not yet combined with the value before the loop)."""
    reductions = []
    for name in names:
        ty = types.unliteral(lw.typeof(name))
        op = _OPERATORS.get(parfor.reddict[name].redop)
        if op is None or isinstance(ty.dtype, types.Boolean):
            raise UnsupportedConstructError(
                f"the reduction of '{user_name(name)}' ({ty}) with an operator other than "
                "+= -= *=", parfor.loc)
        array = lw.read(nir.Var(None, name, parfor.loc))
        reductions.append((name, array, Reduction(name, ty.dtype, op, 0 if op is operator.add
                                                   else 1)))
    captured = capture(lw, parfor, set(nest.vars) | set(names) |
                       {name for r in scalars for name in r.names})
    total = product(nest.trips)
    sizes = [product(shape_of(array)) for _, array, _ in reductions]
    chunks = lw.target.array_reduction_chunks(total, sizes, [
        red.type.bitwidth // 8 for _, _, red in reductions])
    privates = [_private_copies(array, chunks) for _, array, _ in reductions]
    partials = [value_buffer([MAX_CHUNKS], ty) for ty in accumulator_types(scalars)]

    def start(t):
        views = {}
        for (name, array, red), private in zip(reductions, privates):
            view = _chunk_view(private, array, t)
            fill(lw, view, red.identity_value())
            views[name] = view
        return views

    def iteration(views, k, accs):
        return body_for({**captured, **views})(delinearize(k, nest.trips), accs)

    def finish(t, accs):
        for partial, acc in zip(partials, accs):
            store_value(acc, partial, [t])
    chunks = lw.target.chunked_loop(lw, total, chunks, sizes, list(inner_trips), Chunk(
        start, iteration, finish, identities(scalars)))
    for (name, array, red), private in zip(reductions, privates):
        fold_copies(lw, array, private, red, chunks)   # freed by buffer deallocation
    # folded on the host, in chunk order
    return fold_in_order([stack_copy(p) for p in partials], chunks, scalars)


# At most this many chunks on any target (GPU blocks: enough to fill an H100/H200
# several times).
MAX_CHUNKS = 4096


@dataclass
class Chunk:
    """What each chunk runs: `state = start(t)`; `accs = iteration(state, k,
    accs)` for each k of the chunk, from `initial`; then `finish(t, accs)`."""
    start: Callable
    iteration: Callable
    finish: Callable
    initial: list


def chunked_loop(lw, total: ir.Value, chunks: ir.Value, chunk: Chunk) -> None:
    """Worker t runs chunk t (`run_chunk`), one parallel loop over the workers."""
    size = arith.CeilDivUIOp(total, chunks).result
    lw.parallel_depth += 1
    try:
        flat_parallel(chunks, lambda t: run_chunk(t, size, total, chunk))
    finally:
        lw.parallel_depth -= 1


def run_chunk(t: ir.Value, size: ir.Value, total: ir.Value, chunk: Chunk) -> ir.Operation:
    """Chunk t of [0, total) (contiguous, `size` long) as `chunk` says;
    returns the loop over its iterations."""
    state = chunk.start(t)
    loop = scf.ForOp(*chunk_span(t, size, total), const_index(1), chunk.initial)
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(chunk.iteration(state, loop.induction_variable,
                                    list(loop.inner_iter_args)))
    chunk.finish(t, list(loop.results))
    return loop.operation


# Expressions whose array results are new arrays (not views of others).
_MAKING_OPS = {"call", "binop", "unary", "arrayexpr"}


def makes_arrays(lw, parfor) -> bool:
    """Does the body (nested parfors included) make a new array? Views
    (slices, `.T`) do not; fancy indexing does."""
    blocks = list(parfor.loop_body.values())
    while blocks:
        for stmt in blocks.pop().body:
            if isinstance(stmt, Parfor):
                blocks += list(stmt.loop_body.values()) + [stmt.init_block]
                continue
            if not isinstance(stmt, nir.Assign) or not isinstance(stmt.value, nir.Expr) or \
                    not _holds_arrays(types.unliteral(lw.typeof(stmt.target.name))):
                continue
            op = stmt.value.op
            if op in _MAKING_OPS or (op == "getitem" and isinstance(
                    lw.typeof(stmt.value.index.name), (types.Array, types.BaseTuple))
                    and _fancy(lw.typeof(stmt.value.index.name))):
                return True
    return False


def _holds_arrays(ty) -> bool:
    """An array, or a tuple with one (np.nonzero's result)."""
    if isinstance(ty, types.BaseTuple):
        return any(_holds_arrays(t) for t in ty.types)
    return isinstance(ty, types.Array)


def _fancy(index_type) -> bool:
    items = index_type.types if isinstance(index_type, types.BaseTuple) else [index_type]
    return any(isinstance(t, types.Array) for t in items)


def _private_copies(array: ArrayValue, chunks: ir.Value) -> ir.Value:
    """A C-ordered buffer of `chunks` copies of `array`'s shape."""
    dynamic = ir.ShapedType.get_dynamic_size()
    mty = ir.MemRefType.get([dynamic] * (1 + array.type.ndim),
                            ir.MemRefType(array.memref.type).element_type)
    return memref.AllocOp(mty, [chunks] + shape_of(array), []).result


def _chunk_view(private: ir.Value, array: ArrayValue, t: ir.Value) -> ArrayValue:
    """private[t] as an array of `array`'s type (a strided view)."""
    ndim = array.type.ndim
    dynamic = ir.ShapedType.get_dynamic_size()
    view_type = ir.MemRefType.get(
        [dynamic] * ndim, ir.MemRefType(private.type).element_type,
        ir.StridedLayoutAttr.get(dynamic, [dynamic] * (ndim - 1) + [1]))
    view = memref.SubViewOp(view_type, private, [t], shape_of(array), [],
                            [dynamic] + [0] * ndim, [1] + [dynamic] * ndim, [1] * (ndim + 1))
    # Rank-reducing subview (the leading unit dimension is dropped), then
    # the memref type of an 'A'-layout array.
    ty = array.type.copy(layout="A")
    return ArrayValue(memref.CastOp(memref_type(ty), view.result).result, ty)


def fold_copies(lw, array: ArrayValue, private: ir.Value, red: Reduction,
                chunks: ir.Value) -> None:
    """array[idx] = op(array[idx], private[0][idx], ..., private[chunks-1][idx]),
    in two parallel steps: each group of FOLD_GROUP consecutive copies into
    its first copy, then those into `array`, in chunk order."""
    extents = shape_of(array)
    group = const_index(FOLD_GROUP)

    def fold_group(indices):
        first = arith.MulIOp(indices[0], group).result
        stop = arith.MinUIOp(arith.AddIOp(first, group).result, chunks).result
        at_first = [first] + indices[1:]
        loop = scf.ForOp(arith.AddIOp(first, const_index(1)).result, stop, const_index(1),
                         [memref.LoadOp(private, at_first).result])
        with ir.InsertionPoint(loop.body):
            value = memref.LoadOp(private, [loop.induction_variable] + indices[1:]).result
            scf.YieldOp([red.combine(loop.inner_iter_args[0], value)])
        memref.StoreOp(loop.results[0], private, at_first)
    parallel_for(lw, [arith.CeilDivUIOp(chunks, group).result] + extents, fold_group)

    def fold_groups(indices):
        loop = scf.ForOp(const_index(0), chunks, group, [load_element(array, indices)])
        with ir.InsertionPoint(loop.body):
            value = memref.LoadOp(private, [loop.induction_variable] + indices).result
            scf.YieldOp([red.combine(loop.inner_iter_args[0], value)])
        store_element(loop.results[0], array, indices)
    parallel_for(lw, extents, fold_groups)
