"""NumPy reductions lowered directly: argmin/argmax (whole array and
`axis=`), `sum(axis=)`, any/all and `v in array`.

Numba implements these with constructs we do not lower (IndexValue pairs,
transposed views, `resolve_getattr`); rewrites.py keeps argmin/argmax away
from its parfor swap so the calls reach these rules.

* Whole array: parallel scalar reductions through the target's
  `parallel_loop` (deterministic partials on both targets). argmin is two
  passes: the extreme value (and the first NaN), then the first index
  holding it, so ties resolve to the first index as in NumPy.
* `axis=`: a parallel loop over the output elements, each folding its line
  along the axis sequentially, in index order (as Numba does).
"""
from __future__ import annotations

import operator

import numpy as np
from numba.core import types
from numba.core.typing import signature

from .._mlir import arith, ir, scf
from ..lowering.arrays import allocate, fill, load_element, shape_of, size_of, store_element
from ..lowering.build import add_values, cmpf, cmpi, const, const_i64, const_index, select, to_i64
from ..lowering.casts import cast, truth
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import parallel_for, product
from ..lowering.operands import (AxisLines, array_operand, axis_value, call_operands,
                                 constant_operand)
from ..lowering.registry import binop_rules, call_rules, method_rules
from ..lowering.structured import extreme_beats, reduce_along
from ..lowering.substitutes import sum_with_axis
from ..lowering.values import ArrayValue, TupleValue
from ..parallel.folds import fold_elements
from ..parallel.reduction import NAN_MAX, NAN_MIN, Reduction, extreme_identity


def _comparable(array: ArrayValue):
    """(dtype, convert) for comparing elements: booleans as uint8, since
    partial results live in memory and MLIR cannot lower i1 memrefs."""
    if isinstance(array.type.dtype, types.Boolean):
        i8 = ir.IntegerType.get_signless(8)
        return types.uint8, lambda v: arith.ExtUIOp(i8, v).result
    return array.type.dtype, lambda v: v


def _is_nan(value: ir.Value, dtype) -> ir.Value:
    return cmpf("UNO", value, value)


def _equal(a: ir.Value, b: ir.Value, dtype) -> ir.Value:
    return cmpf("OEQ", a, b) if isinstance(dtype, types.Float) else cmpi("eq", a, b)


def _beats(value: ir.Value, best: ir.Value, dtype, largest: bool) -> ir.Value:
    """`value > best` (largest) or `value < best`; false when either is NaN."""
    if isinstance(dtype, types.Float):
        return cmpf("OGT" if largest else "OLT", value, best)
    signed = isinstance(dtype, types.Integer) and dtype.signed
    return cmpi(("s" if signed else "u") + ("gt" if largest else "lt"), value, best)


# -- argmin / argmax -------------------------------------------------------------

def _whole_arg_extreme(lw, array: ArrayValue, largest: bool) -> ir.Value:
    """np.argmin/np.argmax of the flattened (row-major) array, as Numba: the
    first NaN if there is one, else the first index of the extreme value."""
    dtype, comparable = _comparable(array)
    n = size_of(array)
    name = "argmax" if largest else "argmin"
    lw.errors.raise_if(lw, cmpi("eq", n, const_i64(0)), lw.errors.code(
        ValueError, (f"attempt to get {name} of an empty sequence",)))
    op = max if largest else min
    best = Reduction("extreme", dtype, op, extreme_identity(dtype, largest))
    reductions = [best]
    floating = isinstance(dtype, types.Float)
    if floating:
        first_nan = Reduction("first_nan", types.int64, min, None, initial=n)
        reductions.append(first_nan)

    def extreme(k, v, accs):
        v = comparable(v)
        result = [best.combine(accs[0], v)]        # a NaN never wins the comparison
        if floating:
            result.append(first_nan.combine(accs[1], select(_is_nan(v, dtype), k, n)))
        return result
    results = fold_elements(lw, array, reductions, extreme)
    first = Reduction("first", types.int64, min, None, initial=n)

    def first_index(k, v, accs):
        return [first.combine(accs[0], select(_equal(comparable(v), results[0], dtype), k, n))]
    (index,) = fold_elements(lw, array, [first], first_index)
    if floating:
        index = select(cmpi("slt", results[1], n), results[1], index)
    return index


def _axis_arg_extreme(lw, array: ArrayValue, axis, result_ty, largest: bool) -> ArrayValue:
    """np.argmin/np.argmax along an axis: each output element scans its line
    in order, keeping the first extreme (or the first NaN, which ends it)."""
    dtype, comparable = _comparable(array)
    line = AxisLines(lw, array, axis)
    name = "argmax" if largest else "argmin"
    empty_line = arith.AndIOp(cmpi("eq", to_i64(line.length), const_i64(0)),
                              cmpi("ne", line.count(), const_i64(0))).result
    lw.errors.raise_if(lw, empty_line, lw.errors.code(
        ValueError, (f"attempt to get {name} of an empty sequence",)))
    out = allocate(lw, result_ty, line.out_extents)
    floating = isinstance(dtype, types.Float)

    def body(indices):
        start = [const(dtype, extreme_identity(dtype, largest)), const_i64(0),
                 const(types.boolean, 0)]
        loop = scf.ForOp(const_index(0), line.length, const_index(1), start)
        with ir.InsertionPoint(loop.body):
            best, at, done = loop.inner_iter_args
            k = loop.induction_variable
            v = comparable(load_element(array, line.element(indices, k)))
            nan = _is_nan(v, dtype) if floating else const(types.boolean, 0)
            live = arith.XOrIOp(done, const(types.boolean, 1)).result
            take = arith.AndIOp(live, arith.OrIOp(nan, _beats(v, best, dtype, largest)).result).result
            scf.YieldOp([select(take, v, best), select(take, to_i64(k), at),
                         arith.OrIOp(done, arith.AndIOp(live, nan).result).result])
        store_element(cast(loop.results[1], types.int64, result_ty.dtype), out, indices)
    parallel_for(lw, line.out_extents, body)
    return out


def _arg_extreme_along_axis(lw, array: ArrayValue, axis: int, result_ty: types.Array,
                            largest: bool) -> ArrayValue:
    """np.argmin/np.argmax along a constant axis: a linalg.generic scanning
    each line into (extreme value, position), the first extreme (or first
    NaN) winning as in Numba's scan; each target schedules it."""
    name = "argmax" if largest else "argmin"
    extents = shape_of(array)
    length = extents[axis]
    others = extents[:axis] + extents[axis + 1:]
    empty_line = arith.AndIOp(cmpi("eq", length, const_index(0)),
                              cmpi("ne", product(others), const_index(0))).result
    lw.errors.raise_if(lw, empty_line, lw.errors.code(
        ValueError, (f"attempt to get {name} of an empty sequence",)))
    dtype = types.uint8 if isinstance(array.type.dtype, types.Boolean) else array.type.dtype
    values = allocate(lw, types.Array(dtype, len(others), "C"), others)
    positions = allocate(lw, result_ty.copy(dtype=types.int64), others)
    fill(lw, values, const(dtype, 0))
    fill(lw, positions, const_i64(-1))
    signed = not isinstance(dtype, types.Integer) or dtype.signed

    def step(element, accs, k):
        best, at = accs
        take = arith.OrIOp(cmpi("slt", at, const_i64(0)),
                           extreme_beats(element, best, largest, signed)).result
        return [select(take, element, best), select(take, to_i64(k), at)]
    reduce_along(array, axis, [values, positions], step, name + ("" if signed else "_unsigned"))
    if result_ty.dtype == types.int64:
        return positions
    out = allocate(lw, result_ty, others)
    parallel_for(lw, others, lambda ix: store_element(
        cast(load_element(positions, ix), types.int64, result_ty.dtype), out, ix))
    return out


def _arg_extreme(largest: bool):
    def rule(lw, args, sig, expr):
        operands = call_operands(lw, args, sig, expr, ("a", "axis"))
        array = array_operand(operands, "np.argmax" if largest else "np.argmin", expr)
        result_ty = types.unliteral(sig.return_type)
        static = _static_axis(constant_operand(lw, expr, ("a", "axis"), "axis"), array)
        if static is not None and isinstance(result_ty, types.Array) and lw.parallel_depth == 0:
            return _arg_extreme_along_axis(lw, array, static, result_ty, largest)
        if "axis" in operands:
            axis = axis_value(lw, operands["axis"], array, expr,
                               (ValueError, "axis is out of bounds"))
            if isinstance(result_ty, types.Array):
                return _axis_arg_extreme(lw, array, axis, result_ty, largest)
        return cast(_whole_arg_extreme(lw, array, largest), types.int64, result_ty)
    return rule


call_rules.register(np.argmin)(_arg_extreme(False))
call_rules.register(np.argmax)(_arg_extreme(True))


# -- max / min --------------------------------------------------------------------

def _extreme(largest: bool):
    """np.max/np.min/np.amax/np.amin/.max()/.min() of the whole array: one
    parallel reduction whose combine lets a NaN win (NumPy's and Numba's
    serial result); Numba's parallel version folds with Python's max, which
    drops NaNs that are not first."""
    name = "maximum" if largest else "minimum"

    def rule(lw, args, sig, expr):
        operands = call_operands(lw, args, sig, expr, ("a",))
        array = array_operand(operands, f"np.{'max' if largest else 'min'}", expr)
        if len(args) != 1 or expr.kws:
            raise UnsupportedConstructError(
                f"np.{'max' if largest else 'min'} with arguments other than the array "
                "(Numba supports only the whole array)", expr.loc)
        lw.errors.raise_if(lw, cmpi("eq", size_of(array), const_i64(0)), lw.errors.code(
            ValueError, (f"zero-size array to reduction operation {name} which has no identity",)))
        dtype, comparable = _comparable(array)
        best = Reduction(name, dtype, NAN_MAX if largest else NAN_MIN,
                         extreme_identity(dtype, largest))
        (result,) = fold_elements(lw, array, [best],
                                  lambda k, v, accs: [best.combine(accs[0], comparable(v))])
        return cast(result, dtype, types.unliteral(sig.return_type))
    return rule


for _largest, _functions, _method in ((True, (np.max, np.amax), "max"),
                                      (False, (np.min, np.amin), "min")):
    for _fn in _functions:
        call_rules.register(_fn)(_extreme(_largest))
    method_rules.register((types.Array, _method))(_extreme(_largest))


# -- reductions along an axis ---------------------------------------------------------

def _sum_along(lw, array: ArrayValue, axis: ir.Value, result_ty: types.Array) -> ArrayValue:
    line = AxisLines(lw, array, axis)
    out = allocate(lw, result_ty, line.out_extents)
    acc_ty = result_ty.dtype
    adder = Reduction("sum", acc_ty, operator.add, 0)

    def body(indices):
        loop = scf.ForOp(const_index(0), line.length, const_index(1), [const(acc_ty, 0)])
        with ir.InsertionPoint(loop.body):
            v = load_element(array, line.element(indices, loop.induction_variable))
            scf.YieldOp([adder.combine(loop.inner_iter_args[0], cast(v, array.type.dtype, acc_ty))])
        store_element(loop.results[0], out, indices)
    parallel_for(lw, line.out_extents, body)
    return out


def _whole_sum(lw, array: ArrayValue, acc_ty) -> ir.Value:
    total = Reduction("sum", acc_ty, operator.add, 0)
    (result,) = fold_elements(lw, array, [total], lambda k, v, accs: [
        total.combine(accs[0], cast(v, array.type.dtype, acc_ty))])
    return result


@call_rules.register(np.sum, sum_with_axis)
def numpy_sum(lw, args, sig, expr):
    """np.sum / .sum() with `axis=` (and `dtype=`); without an axis Numba's
    parfor pass has already made it a parfor, except in the cases handled here."""
    operands = call_operands(lw, args, sig, expr, ("a", "axis", "dtype"))
    array = array_operand(operands, "np.sum", expr)
    result_ty = types.unliteral(sig.return_type)
    if "axis" in operands and isinstance(operands["axis"][1], types.BaseTuple):
        return _sum_over_axes(lw, array, operands["axis"][0], result_ty, expr)
    if "axis" in operands:
        static = _static_axis(constant_operand(lw, expr, ("a", "axis", "dtype"), "axis"), array)
        if static is not None and isinstance(result_ty, types.Array) and lw.parallel_depth == 0:
            return _sum_along_axis(lw, array, static, result_ty)
        axis = axis_value(lw, operands["axis"], array, expr)
        if isinstance(result_ty, types.Array):
            return _sum_along(lw, array, axis, result_ty)
    return _whole_sum(lw, array, result_ty)


def _sum_over_axes(lw, array: ArrayValue, axes: TupleValue, result_ty, expr):
    """np.sum over a tuple of constant axes: one axis at a time, the last
    first (so the others keep their positions); all of them: the whole sum."""
    ndim = array.type.ndim
    values = [_constant_int(v) for v in axes.items]
    if any(v is None for v in values):
        raise UnsupportedConstructError("np.sum over a tuple of axes computed at run time "
                                        "(a tuple of constants is supported)", expr.loc)
    if any(not -ndim <= v < ndim for v in values):
        raise UnsupportedConstructError(f"np.sum over axes {tuple(values)} of a {ndim}-d "
                                        "array (out of bounds)", expr.loc)
    normal = sorted({v % ndim for v in values}, reverse=True)
    if len(normal) != len(values):
        raise UnsupportedConstructError(f"np.sum over the repeated axes {tuple(values)}",
                                        expr.loc)
    if not isinstance(result_ty, types.Array):
        return _whole_sum(lw, array, result_ty)
    for k, axis in enumerate(normal, 1):
        step_ty = result_ty.copy(ndim=ndim - k, layout="C")
        if lw.parallel_depth == 0:
            array = _sum_along_axis(lw, array, axis, step_ty)
        else:
            array = _sum_along(lw, array, const_i64(axis), step_ty)
    return array


def _constant_int(value: ir.Value):
    """The Python int of an `arith.constant`, else None."""
    op = value.owner
    if getattr(op, "name", None) != "arith.constant":
        return None
    return ir.IntegerAttr(op.attributes["value"]).value


def _static_axis(value, array: ArrayValue):
    """The axis as a Python int in [0, ndim) when it is a compile-time
    constant in range (others take the path that checks at run time)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    value += array.type.ndim if value < 0 else 0
    return value if 0 <= value < array.type.ndim else None


def _sum_along_axis(lw, array: ArrayValue, axis: int, result_ty: types.Array) -> ArrayValue:
    """np.sum along a constant axis: a linalg.generic each target schedules
    (lowering/structured.py), into zeros."""
    extents = shape_of(array)
    out = allocate(lw, result_ty, extents[:axis] + extents[axis + 1:])
    acc_ty = result_ty.dtype
    fill(lw, out, const(acc_ty, 0))
    source_ty = array.type.dtype

    def step(element, accs, k):
        if isinstance(source_ty, types.Boolean):      # stored as a byte
            element = arith.TruncIOp(ir.IntegerType.get_signless(1), element).result
        value = cast(element, source_ty, acc_ty)
        return [add_values(accs[0], value)]
    reduce_along(array, axis, [out], step, "add")
    return out


# -- any / all --------------------------------------------------------------------

def _any_or_all(is_any: bool):
    def rule(lw, args, sig, expr):
        array = args[0]
        if len(args) != 1 or expr.kws or not isinstance(array, ArrayValue):
            raise UnsupportedConstructError(
                f"np.{'any' if is_any else 'all'} other than of a whole array", expr.loc)
        # Truth values folded as bytes (partials live in memory; no i1 memrefs).
        found = Reduction("any" if is_any else "all", types.uint8, max if is_any else min,
                          0 if is_any else 1)
        i8 = ir.IntegerType.get_signless(8)

        def step(k, v, accs):
            byte = arith.ExtUIOp(i8, truth(v, array.type.dtype)).result
            return [found.combine(accs[0], byte)]
        (result,) = fold_elements(lw, array, [found], step)
        return cmpi("ne", result, const(types.uint8, 0))
    return rule


for _is_any, _fn in ((True, np.any), (False, np.all)):
    call_rules.register(_fn)(_any_or_all(_is_any))
    method_rules.register((types.Array, _fn.__name__))(_any_or_all(_is_any))


# -- `v in array` -------------------------------------------------------------------

@binop_rules.register(operator.contains)
def array_contains(lw, args, sig, expr):
    """`v in a` (lhs is the container): some element equals `v`, compared as
    Numba's np_contains does (`x == key`, both in their unified type). An
    "any" fold over all elements (no early exit: parallel at the top level,
    sequential inside a parallel body)."""
    array, key = args
    if not isinstance(array, ArrayValue):
        raise UnsupportedConstructError(f"'in' on {sig.args[0]}", expr.loc)
    dtype, key_ty = array.type.dtype, types.unliteral(sig.args[1])
    ty = lw.mlower.typingctx.unify_types(dtype, key_ty)
    equal = binop_rules.get(operator.eq)
    if ty is None or isinstance(key, (ArrayValue, TupleValue)) or equal is None:
        raise UnsupportedConstructError(f"'in' of {key_ty} on {sig.args[0]}", expr.loc)
    key = cast(key, key_ty, ty)
    found = Reduction("any", types.uint8, max, 0)
    i8 = ir.IntegerType.get_signless(8)

    def step(k, v, accs):
        hit = equal(lw, [cast(v, dtype, ty), key], signature(types.boolean, ty, ty), expr)
        return [found.combine(accs[0], arith.ExtUIOp(i8, hit).result)]
    (result,) = fold_elements(lw, array, [found], step)
    return cmpi("ne", result, const(types.uint8, 0))
