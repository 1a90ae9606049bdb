"""The iteration space and the body of one parfor.

`LoopNest` computes a parfor's bounds and trip counts; `BodyLowering` emits
one iteration of its body (Numba's blocks, with branches) inside an
`scf.execute_region`, from the loop counters and the reductions'
accumulators. At the outermost level the body is isolated: `capture` loads
the outer variables it reads before the loop, so no kernel ever touches a
host stack slot.
"""
from __future__ import annotations

from contextlib import ExitStack

from numba.core import ir as nir
from numba.core import types
from numba.parfors.parfor import Parfor

from .._mlir import arith, cf, ir, scf
from ..lowering.build import cmpi, const_i64, select, to_i64, to_index
from ..lowering.carried import (CarriedArrays, carried_arrays,
                                refuse_values_of_earlier_iterations)
from ..lowering.casts import cast
from ..lowering.function import RegionBlocks, Scope
from ..lowering.random_streams import iteration
from ..lowering.types import is_scalar, scalar_type
from .last_values import ITERATION, LastValue, linear_iteration
from .reduction import Reduction

def _bound(lw, value) -> ir.Value:
    if isinstance(value, nir.Var):
        return lw.read_as(value, types.int64)
    return const_i64(int(value))


def trip_count(start, stop, step) -> ir.Value:
    """len(range(start, stop, step)) as an index."""
    zero, one = const_i64(0), const_i64(1)
    positive = cmpi("sgt", step, zero)
    bias = select(positive, arith.SubIOp(step, one).result, arith.AddIOp(step, one).result)
    span = arith.AddIOp(arith.SubIOp(stop, start).result, bias).result
    count = arith.DivSIOp(span, step).result
    return to_index(arith.MaxSIOp(count, zero).result)


class LoopNest:
    """The iteration space of a parfor: start/step per dimension and trip counts."""

    def __init__(self, lw, parfor: Parfor):
        self.vars = [nest.index_variable.name for nest in parfor.loop_nests]
        self.starts, self.steps, self.trips = [], [], []
        self.random = None      # where the iterations' np.random draws come from
        for nest in parfor.loop_nests:
            start, stop, step = (_bound(lw, v) for v in (nest.start, nest.stop, nest.step))
            self.starts.append(start)
            self.steps.append(step)
            self.trips.append(trip_count(start, stop, step))

    def indices(self, counters: list) -> list[ir.Value]:
        """Loop variables (i64) from zero-based iteration counters (index)."""
        return [arith.AddIOp(start, arith.MulIOp(to_i64(k), step).result).result
                for k, start, step in zip(counters, self.starts, self.steps)]


def _names_in(parfor: Parfor) -> set:
    names = set()
    blocks = [parfor.init_block] + list(parfor.loop_body.values())
    for nest in parfor.loop_nests:
        names.update(v.name for v in (nest.start, nest.stop, nest.step) if isinstance(v, nir.Var))
    for block in blocks:
        for stmt in block.body:
            if isinstance(stmt, Parfor):
                names |= _names_in(stmt)
                continue
            names.update(v.name for v in stmt.list_vars())
    return names


def carries_values(parfor: Parfor) -> bool:
    """Does an iteration read a value an earlier one wrote, or leave one for
    after the loop? Numba fills `redvars` for outermost parfors only; in a
    nested one (the `acc` of a `row.sum()` in a prange body) it shows as an
    assignment to one of its `params` (variables live on entry) or `races`."""
    params = getattr(parfor, "params", None)
    if params is None:
        return True
    carried = set(params) | set(parfor.races)
    blocks = list(parfor.loop_body.values())
    while blocks:
        for stmt in blocks.pop().body:
            if isinstance(stmt, Parfor):
                blocks += list(stmt.loop_body.values()) + [stmt.init_block]
            elif isinstance(stmt, nir.Assign) and stmt.target.name in carried:
                return True
    return False


def capture(lw, parfor: Parfor, exclude: set) -> dict:
    """Values of the outer variables the body may read, loaded before the loop."""
    captured = {}
    for name in sorted(_names_in(parfor) - exclude):
        if lw.scope.find_slot(name) is not None or lw.scope.find_value(name) is not None:
            captured[name] = lw.read(nir.Var(None, name, parfor.loc))
    return captured


def accumulated(reductions) -> list[tuple]:
    """(name, Numba type) of every variable the reductions accumulate, in
    the order of their values (`identity_values`, `combine_values`)."""
    return [(name, ty) for red in reductions for name, ty in zip(red.names, red.types)]


class BodyLowering:
    """Emits one iteration of a parfor body at the current insertion point."""

    def __init__(self, lw, parfor: Parfor, nest: LoopNest, reductions: list[Reduction],
                 captured: dict | None, positive: frozenset = frozenset()):
        """`positive`: captured integers known to be positive here, rebound
        as max(value, 1) inside the body so that the compiler of a kernel
        sees it (see parfors.positive_divisors)."""
        self.lw, self.parfor, self.nest = lw, parfor, nest
        self.reductions, self.captured = reductions, captured
        self.positive = positive

    def __call__(self, counters: list, accumulators: list) -> list[ir.Value]:
        lw = self.lw
        indices = self.nest.indices(counters)
        variables = accumulated(self.reductions)
        region_op = scf.ExecuteRegionOp([scalar_type(ty) for _, ty in variables])
        entry = region_op.regions[0].blocks.append()
        labels = sorted(self.parfor.loop_body)
        blocks = {label: region_op.regions[0].blocks.append() for label in labels}
        isolated = self.captured is not None
        scope = Scope(entry, parent=None if isolated else lw.scope)
        draws = ExitStack()
        with ir.InsertionPoint(entry):
            for name, value in (self.captured or {}).items():
                if name in self.positive:
                    # signed or not as the variable is: max_s(uint8 254, 1) would be 1
                    signed = getattr(types.unliteral(lw.typeof(name)), "signed", True)
                    most = arith.MaxSIOp if signed else arith.MaxUIOp
                    value = most(value, arith.ConstantOp(value.type, 1).result).result
                if is_scalar(types.unliteral(lw.typeof(name))):
                    lw.bind_scalar(name, value, scope)
                else:
                    scope.values[name] = value
            for name, value in zip(self.nest.vars, indices):
                lw.bind_scalar(name, cast(value, types.int64, lw.typeof(name)), scope)
            for (name, _), acc in zip(variables, accumulators):
                lw.bind_scalar(name, acc, scope)
            if any(isinstance(red, LastValue) for red in self.reductions):
                lw.bind_scalar(ITERATION, linear_iteration(counters, self.nest.trips), scope)
            # np.random draws keyed by this iteration (lowering/random_streams.py)
            draws.enter_context(iteration(lw, self.nest.random, counters, self.nest.trips,
                                          scope))

        def leave():
            scf.YieldOp([lw.load_slot(scope.slots[name], ty) for name, ty in variables])

        outer = lw.scope
        lw.scope = scope
        lw.parallel_depth += 1
        lw.body_depth += 1
        try:
            # array variables assigned more than once in the body pass along its blocks
            names = carried_arrays(self.parfor.loop_body, lw.typemap)
            refuse_values_of_earlier_iterations(self.parfor.loop_body, names)
            carried = CarriedArrays(lw, names)
            for label in labels:
                for ty in carried.types:
                    blocks[label].add_argument(ty, ir.Location.unknown())
            with ir.InsertionPoint(entry), lw.location(self.parfor.loc):
                carried.make_placeholders()
                start = carried.initial_operands()
            with draws:
                lw.lower_blocks(self.parfor.loop_body, RegionBlocks(blocks, exit=leave,
                                                                     carried=carried))
        finally:
            lw.scope = outer
            lw.parallel_depth -= 1
            lw.body_depth -= 1
        with ir.InsertionPoint(entry):
            cf.BranchOp(start, blocks[labels[0]])
        return list(region_op.results)
