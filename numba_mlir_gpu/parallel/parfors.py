"""Numba parfors -> parallel loops.

A parfor's body is an `scf.execute_region` (Numba's blocks, with branches)
inside the loop (nest.py). Reductions are explicit: the body starts from an
accumulator and yields the updated one; how the per-iteration values are
combined is the target's choice (`scf.reduce` on the CPU, deterministic
per-thread partials on the GPU). Array reductions, and on the GPU bodies
that make arrays, run in chunks (array_reductions.py).
"""
from __future__ import annotations

import operator

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.core.ir_utils import get_definition, guard
from numba.parfors.parfor import Parfor

from .._mlir import arith, ir
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import sequential_for
from ..lowering.registry import stmt_rules
from ..lowering.types import is_scalar
from .array_reductions import array_reduction_names, lower_array_reductions, makes_arrays
from .collapse import collapse_perfect_nest
from .nest import BodyLowering, LoopNest, capture, carries_values
from .reduction import Reduction

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



@stmt_rules.register(Parfor)
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
        if cooperation is not None and cooperation.free and not carries_values(parfor):
            cooperation.loop(nest.trips, lambda counters: body(counters, []))
        else:
            sequential_for(nest.trips, lambda counters: body(counters, []))
        return
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
