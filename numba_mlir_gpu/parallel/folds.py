"""Folds of an index box into scalar reductions: in parallel with the
target's deterministic partials, or in order inside a parallel body."""
from __future__ import annotations

from .._mlir import ir, scf
from ..lowering.arrays import load_element, shape_of
from ..lowering.build import const_index
from ..lowering.operands import flat_index
from ..lowering.values import ArrayValue
from .reduction import Reduction


def sequential_fold(extents: list, initial: list, body) -> list:
    """`body(indices, accumulators) -> accumulators` over the box `extents`
    in row-major order, from `initial`; a loop nest with iteration arguments."""
    def nest(level, counters, accs):
        if level == len(extents):
            return body(counters, accs)
        loop = scf.ForOp(const_index(0), extents[level], const_index(1), accs)
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(nest(level + 1, counters + [loop.induction_variable],
                             list(loop.inner_iter_args)))
        return list(loop.results)
    return nest(0, [], initial)


def fold_box(lw, extents: list, reductions: list[Reduction], body) -> list[ir.Value]:
    """Fold the index box `extents` into `reductions`:
    `body(indices, accumulators) -> accumulators`."""
    if lw.parallel_depth > 0:
        return sequential_fold(extents, [r.identity_value() for r in reductions], body)
    return lw.target.parallel_loop(lw, extents, body, reductions)


def fold_elements(lw, array: ArrayValue, reductions: list[Reduction], step) -> list[ir.Value]:
    """Fold every element of `array` into `reductions`:
    `step(flat_index, value, accumulators) -> accumulators`. Parallel with the
    target's deterministic partials; sequential inside a parallel body."""
    extents = shape_of(array)

    def body(counters, accs):
        return step(flat_index(counters, extents), load_element(array, counters), accs)
    return fold_box(lw, extents, reductions, body)
