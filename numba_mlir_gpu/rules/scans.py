"""np.nonzero (and one-argument np.where, a.nonzero()), np.cumsum and
np.cumprod: deterministic chunked scans (parallel/scan.py) over the
flattened array; cumsum with `axis=` scans each line in order, the lines in
parallel.
"""
from __future__ import annotations

import operator

import numpy as np
from numba.core import types

from .._mlir import ir, scf
from ..lowering.arrays import allocate, load_element, shape_of, store_element
from ..lowering.build import const_index, to_index
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import delinearize, parallel_for, product
from ..lowering.operands import AxisLines, array_operand, axis_value, call_operands, flat_index
from ..lowering.registry import call_rules, method_rules
from ..lowering.values import ArrayValue, TupleValue
from ..parallel.folds import sequential_fold
from ..parallel.reduction import Reduction
from ..parallel.scan import ChunkedScan, nonzero_indices, scans_in_parallel


# -- nonzero -----------------------------------------------------------------------

def nonzero(lw, args, sig, expr):
    """np.nonzero(a) / np.where(a) / a.nonzero()."""
    array = args[0]
    result_ty = types.unliteral(sig.return_type)
    if len(args) != 1 or not isinstance(array, ArrayValue) or \
            not isinstance(result_ty, types.BaseTuple):
        raise UnsupportedConstructError(f"np.nonzero of {', '.join(map(str, sig.args))}", expr.loc)
    return TupleValue(nonzero_indices(lw, array, list(result_ty.types), expr.loc), result_ty)


call_rules.register(np.nonzero)(nonzero)
method_rules.register((types.Array, "nonzero"))(nonzero)


# -- cumsum / cumprod -----------------------------------------------------------------

def _running(combine_op, identity: int, name: str):
    """np.cumsum / np.cumprod: over the flattened array, a chunked scan; with
    `axis=` (cumsum), a parallel loop over the lines, each scanned in order."""
    def rule(lw, args, sig, expr):
        operands = call_operands(lw, args, sig, expr, ("a", "axis", "dtype"))
        array = array_operand(operands, f"np.{name}", expr)
        result_ty = types.unliteral(sig.return_type)
        acc_ty = result_ty.dtype
        step = Reduction(name, acc_ty, combine_op, identity)
        if "axis" in operands:
            axis = axis_value(lw, operands["axis"], array, expr, (
                ValueError, f"axis is out of bounds for array of dimension {array.type.ndim}"))
        if "axis" in operands and array.type.ndim > 1:
            return _along_axis(lw, array, axis, result_ty, step)
        extents = shape_of(array)
        out = allocate(lw, result_ty, [product(extents)])

        def value(indices) -> ir.Value:
            return cast(load_element(array, indices), array.type.dtype, acc_ty)

        def emit(k, indices, running) -> ir.Value:
            total = step.combine(running, value(indices))
            store_element(total, out, [k])
            return total
        if not scans_in_parallel(lw):
            lw.target.check_element_access(lw, array, expr.loc)
            sequential_fold(extents, [step.identity_value()], lambda ix, accs: [
                emit(to_index(flat_index(ix, extents)), ix, accs[0])])
            return out
        scan = ChunkedScan(product(extents), step, lambda k, accs: [
            step.combine(accs[0], value(delinearize(k, extents)))])
        scan.rescan(lambda k, running: emit(k, delinearize(k, extents), running))
        return out
    return rule


def _along_axis(lw, array: ArrayValue, axis: ir.Value, result_ty, step: Reduction):
    line = AxisLines(lw, array, axis)
    out = allocate(lw, result_ty, shape_of(array))

    def scan(indices):
        loop = scf.ForOp(const_index(0), line.length, const_index(1), [step.identity_value()])
        with ir.InsertionPoint(loop.body):
            at = line.element(indices, loop.induction_variable)
            value = cast(load_element(array, at), array.type.dtype, step.type)
            total = step.combine(loop.inner_iter_args[0], value)
            store_element(total, out, at)
            scf.YieldOp([total])
    parallel_for(lw, line.out_extents, scan)
    return out


call_rules.register(np.cumsum)(_running(operator.add, 0, "cumsum"))
call_rules.register(np.cumprod)(_running(operator.mul, 1, "cumprod"))
