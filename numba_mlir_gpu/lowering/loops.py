"""Loop builders shared by parfors and array initialisation.

Parallel loops are emitted flattened to one dimension: the CPU pipeline runs
them as they are and the GPU pipeline tiles that one dimension onto blocks
and threads. Inside a parallel body, loops are sequential.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .._mlir import arith, ir, memref, scf
from .build import const_index, load_value, store_value, value_buffer
from .types import scalar_type


def product(values: Sequence[ir.Value]) -> ir.Value:
    total = const_index(1)
    for value in values:
        total = arith.MulIOp(total, value).result
    return total


def delinearize(flat: ir.Value, extents: Sequence[ir.Value]) -> list[ir.Value]:
    """Row-major multi-index of `flat` in a box of `extents` (all index);
    a 0-d box has one position and no index."""
    if not extents:
        return []
    indices = []
    for extent in reversed(extents[1:]):
        indices.append(arith.RemUIOp(flat, extent).result)
        flat = arith.DivUIOp(flat, extent).result
    indices.append(flat)
    return list(reversed(indices))


def chunk_span(t: ir.Value, size: ir.Value, total: ir.Value) -> tuple[ir.Value, ir.Value]:
    """[lo, hi) of contiguous chunk t of [0, total), chunks of `size`."""
    lo = arith.MinUIOp(arith.MulIOp(t, size).result, total).result
    return lo, arith.MinUIOp(arith.AddIOp(lo, size).result, total).result


def parallel_for(lw, extents: Sequence[ir.Value], body: Callable[[list], None]) -> None:
    """Run `body(indices)` over the box `extents` (index values), in parallel
    unless already inside a parallel region: there, spread over the threads
    of a block where they cooperate (targets/gpu/chunks.py), else sequential."""
    body = _raising_in_place(lw, body)
    if lw.parallel_depth > 0:
        if lw.cooperation is not None and lw.cooperation.free:
            lw.cooperation.loop(extents, body)
        else:
            sequential_for(extents, body)
        return
    with lw.errors.loop(lw, on_device=False):
        lw.parallel_depth += 1
        try:
            flat_parallel(product(extents), lambda k: body(delinearize(k, extents)))
        finally:
            lw.parallel_depth -= 1


def _raising_in_place(lw, body: Callable[[list], None]) -> Callable[[list], None]:
    """`body` with the raises of its rules (a callee's status, a check)
    stored in the loop's error flag inside the region: left pending, they
    would be tested after the statement, outside the loop that defines them."""
    def checked(indices: list) -> None:
        errors = lw.errors
        outer, errors.pending = errors.pending, []
        lw.body_depth += 1
        try:
            body(indices)
            errors.check_pending(lw)
        finally:
            lw.body_depth -= 1
            errors.pending = outer
    return checked


def flat_parallel(total: ir.Value, body: Callable[[ir.Value], None]) -> None:
    """A 1-d `scf.parallel` over [0, total) running `body(k)`."""
    loop = scf.ParallelOp([], [const_index(0)], [total], [const_index(1)], [])
    block = loop.regions[0].blocks.append(ir.IndexType.get())
    with ir.InsertionPoint(block):
        body(block.arguments[0])
        scf.ReduceOp([], 0)


def chunk_bounds(t: ir.Value, total: ir.Value, chunks: int) -> tuple[ir.Value, ir.Value]:
    """[lo, hi) of contiguous chunk `t` of `chunks` over [0, total)."""
    return chunk_span(t, arith.CeilDivUIOp(total, const_index(chunks)).result, total)


# -- reductions, flattened --------------------------------------------------------
# A reduction (parallel/reduction.py) accumulates one or several values: its
# `types`, `identity_values()` and `combine_values(a, b)` are lists. Loops
# carry the values of all a loop's reductions as one flat list.

def accumulator_types(reductions) -> list[ir.Type]:
    return [scalar_type(ty) for red in reductions for ty in red.types]


def identities(reductions) -> list[ir.Value]:
    return [value for red in reductions for value in red.identity_values()]


def combine_each(reductions, a: list, b: list) -> list[ir.Value]:
    """The flat values `a` and `b` combined reduction by reduction."""
    result = []
    for red in reductions:
        n = len(red.types)
        result += red.combine_values(a[:n], b[:n])
        a, b = a[n:], b[n:]
    return result


def chunked_partials(total: ir.Value, chunks: int, reductions, step) -> list[ir.Value]:
    """In parallel, chunk t of [0, total) folds its iterations in order with
    `step(k, accs)` from the reductions' identities into partial[t]; returns
    one buffer of `chunks` partials per accumulated value."""
    partials = [value_buffer([chunks], ty) for ty in accumulator_types(reductions)]

    def chunk(t):
        lo, hi = chunk_bounds(t, total, chunks)
        loop = scf.ForOp(lo, hi, const_index(1), identities(reductions))
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(step(loop.induction_variable, list(loop.inner_iter_args)))
        for p, value in zip(partials, loop.results):
            store_value(value, p, [t])
    flat_parallel(const_index(chunks), chunk)
    return partials


def fold_in_order(partials: list[ir.Value], count: ir.Value, reductions) -> list[ir.Value]:
    """partial[0] op ... op partial[count - 1] for each reduction's buffers,
    from the identities, in this order (a host loop when emitted there)."""
    loop = scf.ForOp(const_index(0), count, const_index(1), identities(reductions))
    with ir.InsertionPoint(loop.body):
        j = loop.induction_variable
        values = [load_value(p, [j], ty)
                  for p, ty in zip(partials, accumulator_types(reductions))]
        scf.YieldOp(combine_each(reductions, list(loop.inner_iter_args), values))
    return list(loop.results)


def sequential_for(extents: Sequence[ir.Value], body: Callable[[list], None]) -> None:
    """A plain loop nest over `extents`, outermost first."""
    def nest(level: int, indices: list) -> None:
        if level == len(extents):
            body(indices)
            return
        loop = scf.ForOp(const_index(0), extents[level], const_index(1))
        with ir.InsertionPoint(loop.body):
            nest(level + 1, indices + [loop.induction_variable])
            scf.YieldOp([])
    nest(0, [])


def copy_elements(source: ir.Value, target: ir.Value, extents: Sequence[ir.Value]) -> None:
    """target[idx] = source[idx] in a plain loop nest (any layouts)."""
    sequential_for(extents, lambda idx: memref.StoreOp(memref.LoadOp(source, idx).result,
                                                       target, idx))
