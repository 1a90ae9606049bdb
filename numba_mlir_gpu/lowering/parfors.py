"""Numba parfors -> parallel loops.

A parfor's body is an `scf.execute_region` (Numba's blocks, with branches)
inside the loop. At the outermost level the body is isolated: the variables
it reads are loaded before the loop and given private slots, so no kernel
ever touches a host stack slot. Reductions are explicit: the body starts
from an accumulator and yields the updated one; how the per-iteration values
are combined is the target's choice (`scf.reduce` on the CPU, deterministic
per-thread partials on the GPU).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

from numba.core import ir as nir
import numpy as np
from numba.core import types
from numba.core.ir_utils import get_definition, guard
from numba.parfors.parfor import Parfor

from .._mlir import arith, cf, ir, scf
from .build import cmpf, cmpi, const, const_i64, select, to_i64, to_index
from .casts import cast
from .collapse import collapse_perfect_nest
from .errors import UnsupportedConstructError
from .function import RegionBlocks, Scope
from .loops import sequential_for
from .types import is_scalar, scalar_type


# Combining operators of np.max / np.min: NaN-propagating extremes (as NumPy).
NAN_MAX, NAN_MIN = np.maximum, np.minimum


@dataclass
class Reduction:
    name: str
    type: types.Type
    combine_op: object       # operator.add / operator.mul / min / max, or NAN_MAX / NAN_MIN
    identity: object         # a Python number, or None: start from `initial`
    initial: ir.Value = None     # the variable's value before the loop

    def identity_value(self) -> ir.Value:
        # min and max are idempotent: the value before the loop serves.
        return self.initial if self.identity is None else const(self.type, self.identity)

    def combine(self, a: ir.Value, b: ir.Value) -> ir.Value:
        float_ = isinstance(self.type, types.Float)
        signed = getattr(self.type, "signed", False)
        if self.combine_op is operator.add:
            return (arith.AddFOp if float_ else arith.AddIOp)(a, b).result
        if self.combine_op is operator.mul:
            return (arith.MulFOp if float_ else arith.MulIOp)(a, b).result
        if float_ and self.combine_op in (NAN_MAX, NAN_MIN):
            # a NaN on either side wins; ties keep `a`, as NumPy's max/min
            better = cmpf("OGT" if self.combine_op is NAN_MAX else "OLT", b, a)
            return select(arith.OrIOp(cmpf("UNO", b, b), better).result, b, a)
        if float_:
            less = cmpf("OLT", b, a) if self.combine_op in (min, NAN_MIN) else cmpf("OGT", b, a)
        else:
            pred = ("s" if signed else "u") + ("lt" if self.combine_op in (min, NAN_MIN) else "gt")
            less = cmpi(pred, b, a)
        return select(less, b, a)

    @property
    def mlir_type(self) -> ir.Type:
        return scalar_type(self.type)


_COMBINE = {operator.iadd: operator.add, operator.add: operator.add,
            operator.isub: operator.add, operator.sub: operator.add,
            operator.imul: operator.mul, operator.mul: operator.mul,
            min: min, max: max}


_EXTREMA = {min: min, max: max, np.minimum: min, np.maximum: max, np.fmin: min, np.fmax: max}


def _called_extremum(lw, nodes):
    """min or max, when the reduction statements call one (Numba gives no
    redop for those)."""
    for node in nodes:
        if isinstance(node, nir.Assign) and isinstance(node.value, nir.Expr) \
                and node.value.op == "call":
            callee = guard(get_definition, lw.func_ir, node.value.func)
            if isinstance(callee, (nir.Global, nir.FreeVar)):
                op = _EXTREMA.get(callee.value)
                if op is not None:
                    return op
    return None


def reductions_of(lw, parfor: Parfor, names=None) -> list[Reduction]:
    """The scalar reductions of `parfor` (of `names`, by default all its
    reduction variables)."""
    result = []
    for name in parfor.redvars if names is None else names:
        info = parfor.reddict[name]
        ty = types.unliteral(lw.typeof(name))
        op = _COMBINE.get(info.redop)
        identity = info.init_val
        if op is None:
            op, identity = _called_extremum(lw, info.reduce_nodes), None
        if op is None or not is_scalar(ty) or (identity is None and op not in (min, max)):
            raise UnsupportedConstructError(
                f"the reduction of '{name}' ({getattr(info.redop, '__name__', info.redop)} "
                f"on {ty}); supported: + - * min max of scalars", parfor.loc)
        result.append(Reduction(name, ty, op, identity))
    return result


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


def _carries_values(parfor: Parfor) -> bool:
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


class BodyLowering:
    """Emits one iteration of a parfor body at the current insertion point."""

    def __init__(self, lw, parfor: Parfor, nest: LoopNest, reductions: list[Reduction],
                 captured: dict | None):
        self.lw, self.parfor, self.nest = lw, parfor, nest
        self.reductions, self.captured = reductions, captured

    def __call__(self, counters: list, accumulators: list) -> list[ir.Value]:
        lw = self.lw
        indices = self.nest.indices(counters)
        region_op = scf.ExecuteRegionOp([r.mlir_type for r in self.reductions])
        entry = region_op.regions[0].blocks.append()
        labels = sorted(self.parfor.loop_body)
        blocks = {label: region_op.regions[0].blocks.append() for label in labels}
        isolated = self.captured is not None
        scope = Scope(entry, parent=None if isolated else lw.scope)
        with ir.InsertionPoint(entry):
            for name, value in (self.captured or {}).items():
                if is_scalar(types.unliteral(lw.typeof(name))):
                    lw.bind_scalar(name, value, scope)
                else:
                    scope.values[name] = value
            for name, value in zip(self.nest.vars, indices):
                lw.bind_scalar(name, cast(value, types.int64, lw.typeof(name)), scope)
            for red, acc in zip(self.reductions, accumulators):
                lw.bind_scalar(red.name, acc, scope)

        def leave():
            scf.YieldOp([lw.load_slot(scope.slots[r.name], r.type) for r in self.reductions])

        outer = lw.scope
        lw.scope = scope
        lw.parallel_depth += 1
        lw.body_depth += 1
        try:
            lw.lower_blocks(self.parfor.loop_body, RegionBlocks(blocks, exit=leave))
        finally:
            lw.scope = outer
            lw.parallel_depth -= 1
            lw.body_depth -= 1
        with ir.InsertionPoint(entry):
            cf.BranchOp([], blocks[labels[0]])
        return list(region_op.results)


def lower_parfor(lw, parfor: Parfor) -> None:
    if lw.parallel_depth == 0:
        parfor = collapse_perfect_nest(lw, parfor)
    lw.lower_stmts(parfor.init_block.body)
    with lw.ip, lw.location(parfor.loc):
        anchor = arith.ConstantOp(ir.IntegerType.get_signless(1), 0).operation
        outermost = lw.errors.begin_loop(anchor, on_device=lw.parallel_depth > 0)
        _lower_loop(lw, parfor)
        if outermost:
            lw.errors.end_loop(lw)


def _lower_loop(lw, parfor: Parfor) -> None:
    nest = LoopNest(lw, parfor)
    if lw.parallel_depth > 0:
        # Nested parfors run sequentially inside the enclosing parallel body.
        body = BodyLowering(lw, parfor, nest, [], captured=None)
        cooperation = lw.cooperation
        if cooperation is not None and cooperation.free and not _carries_values(parfor):
            cooperation.loop(nest.trips, lambda counters: body(counters, []))
        else:
            sequential_for(nest.trips, lambda counters: body(counters, []))
        return
    from .array_reductions import array_reduction_names, lower_array_reductions, makes_arrays
    # Array reductions run in chunks, on private copies. A GPU kernel cannot
    # allocate: a body that makes arrays runs the same way (maybe with no
    # array accumulator), its temporaries in per-chunk scratch buffers.
    arrays = array_reduction_names(lw, parfor)
    reductions = reductions_of(lw, parfor, [n for n in parfor.redvars if n not in arrays])
    initial = [lw.read_as(nir.Var(None, r.name, parfor.loc), r.type) for r in reductions]
    for red, value in zip(reductions, initial):
        red.initial = value
    if arrays or (lw.target.gpu and makes_arrays(lw, parfor)):
        results = lower_array_reductions(
            lw, parfor, nest, arrays, reductions,
            lambda captured: BodyLowering(lw, parfor, nest, reductions, captured))
    else:
        exclude = set(nest.vars) | {r.name for r in reductions}
        body = BodyLowering(lw, parfor, nest, reductions, capture(lw, parfor, exclude))
        results = lw.target.parallel_loop(lw, nest.trips, body, reductions)
    for red, before, result in zip(reductions, initial, results):
        lw.write(red.name, red.combine(before, result), red.type)
