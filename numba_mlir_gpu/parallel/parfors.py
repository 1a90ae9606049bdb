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

from .._mlir import arith, ir, scf
from ..lowering.build import const_i64, dim, to_i64
from ..lowering.errors import NeedsPlainKernel, UnsupportedConstructError
from ..lowering.loops import accumulator_types, identities, product, sequential_for
from ..lowering.random_streams import parfor_stream
from ..lowering.registry import stmt_rules
from ..lowering.types import is_scalar
from ..lowering.values import ArrayValue
from .array_reductions import array_reduction_names, lower_array_reductions, makes_arrays
from .collapse import collapse_perfect_nest
from .folds import sequential_fold
from .inner_loops import parallelize_inner_loops
from .nest import BodyLowering, LoopNest, capture, carries_values, trip_count
from .reduction import Reduction, SelectReduction
from .contractions import lower_matrix_product, matrix_product
from .last_values import (LastValue, initial_values, last_values, positions_marked,
                          read_outside)
from .races import refuse_colliding_stores
from .scatter import atomic_statements, atomic_updates, privatizable

_COMBINE = {operator.iadd: operator.add, operator.add: operator.add,
            operator.isub: operator.add, operator.sub: operator.add,
            operator.imul: operator.mul, operator.mul: operator.mul,
            # `s /= x`: each copy divides 1 by its iterations' x, the copies
            # are multiplied into s (Numba's reduction_mul)
            operator.itruediv: operator.mul, operator.truediv: operator.mul,
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
        if op is None or not is_scalar(ty) or (identity is None and op not in (min, max)) \
                or (isinstance(ty, types.Complex) and op not in (operator.add, operator.mul)):
            raise UnsupportedConstructError(
                f"the reduction of '{name}' ({getattr(info.redop, '__name__', info.redop)} "
                f"on {ty}); supported: + - * / min max of scalars", parfor.loc)
        result.append(Reduction(name, ty, op, identity))
    return result



@stmt_rules.register(Parfor)
def lower_parfor(lw, parfor: Parfor) -> None:
    if lw.parallel_depth > 0:
        _lower_parfor(lw, parfor)
        return
    product = matrix_product(lw, collapse_perfect_nest(lw, parfor)) \
        if lw.target.library_gemm() else None
    if product is not None:     # BLAS where it holds at run time (contractions.py)
        lower_matrix_product(lw, product, lambda: _lower_top_level(lw, parfor))
        return
    _lower_top_level(lw, parfor)


def _lower_top_level(lw, parfor: Parfor) -> None:
    outside = read_outside(lw, parfor)
    # on every target, so the analysis is the same everywhere: where no
    # threads share an iteration, a nested parfor runs in order
    parfor = collapse_perfect_nest(lw, parallelize_inner_loops(lw, parfor))
    # plain stores iterations provably share: refused (races.py); updates of
    # elements they may share: atomic (scatter.py)
    refuse_colliding_stores(lw, parfor)
    # scalars read after the loop: the last iteration's values (last_values.py)
    last = last_values(lw, parfor, outside)
    updates = atomic_updates(lw, parfor)
    with atomic_statements(lw, updates), positions_marked(lw, last):
        _lower_parfor(lw, parfor, updates, last)


def _lower_parfor(lw, parfor: Parfor, updates: list = (), last: list = ()) -> None:
    lw.lower_stmts(parfor.init_block.body)
    with lw.ip, lw.location(parfor.loc), lw.errors.loop(lw, on_device=lw.parallel_depth > 0):
        _lower_loop(lw, parfor, list(updates), list(last))


def _lower_loop(lw, parfor: Parfor, updates: list, last: list) -> None:
    nest = LoopNest(lw, parfor)
    nest.random = parfor_stream(lw, parfor, nest.trips)
    if lw.parallel_depth > 0:
        _lower_nested(lw, parfor, nest)
        return
    # Array reductions run in chunks, on private copies. A GPU kernel cannot
    # allocate: a body that makes arrays runs the same way (maybe with no
    # array accumulator), its temporaries in per-chunk scratch buffers.
    arrays = array_reduction_names(lw, parfor)
    reductions = reductions_of(lw, parfor, [n for n in parfor.redvars if n not in arrays]) + last
    _record_values_before(lw, reductions, parfor.loc)
    inner = _nested_parfors(parfor) if lw.target.cooperative_bodies else []
    bounds = _host_bounds(lw, parfor, inner)
    trips = [None if b is None else trip_count(*b) for b in bounds]

    def in_chunks():
        return lower_array_reductions(
            lw, parfor, nest, arrays, reductions,
            lambda captured: BodyLowering(lw, parfor, nest, reductions, captured), trips)

    def flat(positive=frozenset()):
        exclude = set(nest.vars) | {name for r in reductions for name in r.names}
        body = BodyLowering(lw, parfor, nest, reductions, capture(lw, parfor, exclude),
                            positive)
        return lw.target.parallel_loop(lw, nest.trips, body, reductions)

    def privatized(names: list, kinds: list):
        """Atomic additions into small arrays (a histogram) go to a private
        copy per group of threads where the copies fit (the target says);
        elsewhere into the arrays themselves."""
        captured = capture(lw, parfor, set(nest.vars))
        arrays = [captured[name] for name in names]
        fits = lw.target.privatizes_updates(arrays)
        if fits is None:
            return versioned()

        def body(indices, copies):
            BodyLowering(lw, parfor, nest, [], {**captured, **dict(zip(names, copies))})(
                indices, [])

        def shared():
            lw.target.privatized_loop(lw, nest.trips, arrays, kinds, body)
            return []
        return _either(fits, shared, versioned, [])

    def versioned():
        """One loop where the divisors of `//` and `%` that do not change
        in the loop are positive (the usual case of `k // w`, `k % w` over a
        flat index space), told so: integer division and the index
        wrap-arounds after it become unsigned and mostly vanish. The other
        loop keeps Python's semantics for any sign."""
        divisors = positive_divisors(lw, parfor)
        if not divisors:
            return flat()
        all_positive = None
        for name in divisors:
            value = lw.read_as(nir.Var(None, name, parfor.loc), types.int64)
            positive = arith.CmpIOp(arith.CmpIPredicate.sgt, value, const_i64(0)).result
            all_positive = positive if all_positive is None else \
                arith.AndIOp(all_positive, positive).result
        return _either(all_positive, lambda: flat(frozenset(divisors)), flat,
                       accumulator_types(reductions))
    def chosen():
        if arrays or (lw.target.cooperative_bodies and makes_arrays(lw, parfor)):
            return in_chunks()
        if inner:
            # a group of threads per iteration when the inner loops are long enough
            return _either(lw.target.spreads_inner_loops(product(nest.trips), trips),
                           in_chunks, flat, accumulator_types(reductions))
        if updates and not reductions and (found := privatizable(lw, parfor, updates)):
            return privatized(*found)
        return versioned()
    # Arrays of a GPU body are scratch slots of a chunk kernel where their
    # sizes are known before the launch, else made on the device heap by
    # the threads of a plain kernel (targets/gpu/heap.py).
    if arrays:      # the private copies need the chunks
        results = _on_device_heap(lw, chosen)
    else:
        results = _retried(lw, lambda: _on_device_heap(lw, chosen),
                           lambda: _on_device_heap(lw, versioned))
    _write_combined(lw, reductions, results)


def _retried(lw, first, second):
    """`first()`, or, where it raises NeedsPlainKernel, `second()` in its
    place: what `first` emitted (after the current block's last operation)
    is erased, its pending checks and error flag dropped."""
    block = lw.ip.block
    before = list(block.operations)
    errors = lw.errors.checkpoint()
    try:
        return first()
    except NeedsPlainKernel:
        if lw.ip.block != block:
            raise
        emitted = [op for op in block.operations if op not in before]
        for op in reversed(emitted):
            op.erase()
        lw.errors.rollback(errors)
    return second()


def _on_device_heap(lw, lower):
    saved, lw.device_heap = lw.device_heap, True
    try:
        return lower()
    finally:
        lw.device_heap = saved


def _lower_nested(lw, parfor: Parfor, nest: LoopNest) -> None:
    """A parfor inside a parallel body: spread over the threads of a block
    where they cooperate (a map, or reductions combined across the block),
    else in order in the thread that runs the body. Reductions of an inner
    loop turned into a parfor (inner_loops.py) are its `inner_reductions`;
    their variables get the combined values afterwards."""
    reductions = parfor._kws.get("inner_reductions", [])
    _record_values_before(lw, reductions, parfor.loc)
    body = BodyLowering(lw, parfor, nest, reductions, captured=None)
    cooperation = lw.cooperation
    together = cooperation is not None and cooperation.free
    if not reductions:
        if together and not carries_values(parfor):
            cooperation.loop(nest.trips, lambda counters: body(counters, []))
        else:
            sequential_for(nest.trips, lambda counters: body(counters, []))
        return
    if together:
        results = cooperation.fold(nest.trips, body, reductions)
    else:
        results = sequential_fold(nest.trips, identities(reductions), body)
    _write_combined(lw, reductions, results)


def _write_combined(lw, reductions: list, results: list) -> None:
    """Each accumulated variable gets its value before the loop combined
    with the loop's (`results`, flat)."""
    for red in reductions:
        mine, results = results[:len(red.names)], results[len(red.names):]
        for name, ty, value in zip(red.names, red.types,
                                   red.combine_values(red.values_before(), mine)):
            lw.write(name, value, ty)


def _record_values_before(lw, reductions: list, loc) -> None:
    """The accumulated variables' values before the loop, recorded as the
    reductions' starts (a select's hidden position: -1)."""
    for red in reductions:
        if isinstance(red, SelectReduction):
            red.initial = [lw.read_as(nir.Var(None, name, loc), ty)
                           for name, ty in zip(red.names[:-1], red.types[:-1])] + [const_i64(-1)]
        elif isinstance(red, LastValue):
            red.initial = initial_values(lw, red, loc)
        else:
            red.initial = lw.read_as(nir.Var(None, red.name, loc), red.type)


def _nested_parfors(parfor: Parfor) -> list:
    """The parfors at the top level of the body (inner loops to spread)."""
    return [stmt for block in parfor.loop_body.values() for stmt in block.body
            if isinstance(stmt, Parfor)]


def _host_bounds(lw, parfor: Parfor, inner: list) -> list:
    """(start, stop, step) of the loops of the nested parfors, where the
    host can compute them before the loop (constants or values from outside
    the body); None for one it cannot (its bounds change with the
    iteration)."""
    defined = {stmt.target.name: stmt.value for block in parfor.loop_body.values()
               for stmt in block.body if isinstance(stmt, nir.Assign)}
    defined.update({n.index_variable.name: None for n in parfor.loop_nests})

    def host_value(bound):
        if not isinstance(bound, nir.Var):
            return const_i64(int(bound))
        if bound.name not in defined:
            return lw.read_as(bound, types.int64)
        value = defined[bound.name]
        if isinstance(value, nir.Const) and isinstance(value.value, int):
            return const_i64(value.value)
        if isinstance(value, nir.Expr) and value.op == "static_getitem" and \
                isinstance(value.index, int):
            return extent(value.value.name, value.index)
        return None

    def extent(shape: str, axis: int):
        """`x.shape[axis]` of an array from outside the body."""
        value = defined.get(shape)
        if not (isinstance(value, nir.Expr) and value.op == "getattr" and value.attr == "shape"
                and value.value.name not in defined):
            return None
        array = lw.read(value.value)
        if not isinstance(array, ArrayValue) or not -array.type.ndim <= axis < array.type.ndim:
            return None
        return to_i64(dim(array.memref, axis % array.type.ndim))
    result = []
    for nested in inner:
        for loop in nested.loop_nests:
            bounds = [host_value(b) for b in (loop.start, loop.stop, loop.step)]
            result.append(None if any(b is None for b in bounds) else tuple(bounds))
    return result


def _either(condition: ir.Value, then, otherwise, result_types: list) -> list:
    """`then()` or `otherwise()` (each returning values of `result_types`)
    as the branches of an scf.if."""
    branch = scf.IfOp(condition, result_types, has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp(then())
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp(otherwise())
    return list(branch.results)


_DIVISIONS = {operator.floordiv, operator.mod, operator.ifloordiv, operator.imod}


def positive_divisors(lw, parfor: Parfor) -> list:
    """The integer variables from outside the body that divide (`//`, `%`)
    inside it: captured values, the same in every iteration."""
    blocks = list(parfor.loop_body.values())
    defined, divisors = set(), set()
    while blocks:
        for stmt in blocks.pop().body:
            if isinstance(stmt, Parfor):
                blocks += list(stmt.loop_body.values()) + [stmt.init_block]
                continue
            if not isinstance(stmt, nir.Assign):
                continue
            defined.add(stmt.target.name)
            value = stmt.value
            if isinstance(value, nir.Expr) and value.op in ("binop", "inplace_binop") and \
                    value.fn in _DIVISIONS and all(
                        isinstance(types.unliteral(lw.typeof(v.name)), types.Integer)
                        for v in (value.lhs, value.rhs)):
                divisors.add(value.rhs.name)
    defined |= {loop.index_variable.name for loop in parfor.loop_nests}
    return sorted(name for name in divisors if name not in defined)
