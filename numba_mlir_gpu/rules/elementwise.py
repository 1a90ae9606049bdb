"""NumPy ufuncs and operators on arrays, element by element, with
broadcasting: `a + b`, `a += 1`, `-a`, `np.add(a, b, out)`, `np.divide(x, y)`.

Numba's parfor pass turns most array expressions into parfors; these rules
cover the ones it leaves (in-place operators, rewrites turned off, ufuncs
with an output argument) and NumPy ufuncs called on scalars. The loop that
NumPy would pick (`ufunc_find_matching_loop`) fixes the element types, and
each element is computed by the scalar rule of the operation.

A `numba.vectorize` function (a DUFunc) called in our code is a ufunc too:
in an array expression Numba's parfor pass calls it on elements, otherwise
the rules here loop over the arrays; each element is a call of its kernel
(its Python function, lowered into the module as a jitted callee) for the
loop Numba's typing of the call picked or compiled.
"""
from __future__ import annotations

import operator

import numpy as np
from numba.core import types
from numba.core.typing import signature
from numba.core.typing.npydecl import (NumpyRulesArrayOperator, NumpyRulesInplaceArrayOperator,
                                       NumpyRulesUnaryArrayOperator)
from numba.np.ufunc.dufunc import DUFunc
from numba.np.numpy_support import ufunc_find_matching_loop

from .._mlir import arith
from ..lowering.arrays import allocate, load_element, shape_of, store_element
from ..lowering.broadcast import broadcast_element, broadcast_shape
from ..lowering.calls import call_jitted
from ..lowering.build import cmpi
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.loops import parallel_for
from ..lowering.overlap import read_source
from ..lowering.types import is_datetime, is_scalar
from ..lowering.registry import (array_operator_rules, binop_rules, call_rules,
                                 inplace_array_rules, ufunc_rules, unary_rules)
from ..lowering.values import ArrayValue, TupleValue

# ufunc -> the scalar operator whose rule computes one element
_SCALAR_OPERATOR = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
    np.true_divide: operator.truediv, np.left_shift: operator.lshift,
    np.right_shift: operator.rshift, np.bitwise_and: operator.and_,
    np.bitwise_or: operator.or_, np.bitwise_xor: operator.xor, np.equal: operator.eq,
    np.not_equal: operator.ne, np.less: operator.lt, np.less_equal: operator.le,
    np.greater: operator.gt, np.greater_equal: operator.ge,
    np.negative: operator.neg, np.positive: operator.pos, np.invert: operator.invert,
    np.logical_not: operator.not_,
}

_OPERATOR_UFUNC = {op: getattr(np, name) for op, name in
                   {**NumpyRulesArrayOperator._op_map,
                    **NumpyRulesUnaryArrayOperator._op_map}.items()}
_INPLACE_UFUNC = {op: getattr(np, name)
                  for op, name in NumpyRulesInplaceArrayOperator._op_map.items()}


def scalar_ufunc(lw, ufunc, values: list, value_types: list, expr, out_types=None) -> list:
    """One element of `ufunc`: [(value, numba type)], one per output. The
    rule of a ufunc with several outputs returns them as a TupleValue.
    `out_types`: the outputs' element types, which fix the unit of a
    datetime64/timedelta64 result as in Numba's loop choice (only then: for
    other types the loop is the inputs' alone, as before)."""
    value_types = [types.unliteral(t) for t in value_types]
    if isinstance(ufunc, DUFunc):
        return _dufunc_element(lw, ufunc, values, value_types, expr)
    out_types = [types.unliteral(t) for t in out_types or ()]
    if not any(is_datetime(t) for t in value_types + out_types):
        out_types = []
    loop = ufunc_find_matching_loop(ufunc, value_types + out_types)
    if loop is None:
        raise UnsupportedConstructError(f"np.{ufunc.__name__} on {value_types}", expr.loc)
    if any(not is_scalar(t) for t in list(loop.inputs) + list(loop.outputs)):
        raise UnsupportedConstructError(f"np.{ufunc.__name__} on {loop.inputs}", expr.loc)
    args = [cast(v, t, want) for v, t, want in zip(values, value_types, loop.inputs)]
    out_types = list(loop.outputs)
    sig = signature(out_types[0] if ufunc.nout == 1 else types.Tuple(out_types), *loop.inputs)
    op = _SCALAR_OPERATOR.get(ufunc)
    if op is not None:
        rules = binop_rules if ufunc.nin == 2 else unary_rules
        rule = rules.get(op)
    else:
        rule = call_rules.get(ufunc)
        if rule is None:
            raise UnsupportedConstructError(f"np.{ufunc.__name__} on arrays", expr.loc)
    result = rule(lw, args, sig, expr)
    return list(zip(result.items if ufunc.nout > 1 else [result], out_types))


def _dufunc_element(lw, ufunc: DUFunc, values: list, value_types: list, expr) -> list:
    """One element of a numba.vectorize function: its kernel called for
    the loop Numba's typing found (the argument types themselves, compiled
    by that typing, or for a function of given signatures the loop NumPy's
    rules pick), the arguments converted to the loop's types."""
    loop, _ = ufunc.find_ewise_function(tuple(value_types))
    if loop is None or ufunc.nout != 1:
        raise UnsupportedConstructError(f"{ufunc.__name__} on {value_types}", expr.loc)
    args = [cast(v, t, want) for v, t, want in zip(values, value_types, loop.args)]
    result = call_jitted(lw, ufunc._dispatcher.py_func, tuple(loop.args), args, expr,
                         loop.return_type)
    return [(result, loop.return_type)]


def elementwise(lw, ufunc, operands: list, operand_types: list, outs: list, expr) -> None:
    """outs[k][...] = output k of ufunc(*operands) over the outputs' shape,
    the operands broadcast to it."""
    arrays = [o for o in operands if isinstance(o, ArrayValue)]
    ndim = outs[0].type.ndim
    if any(out.type.ndim != ndim for out in outs):
        raise UnsupportedConstructError(
            f"np.{ufunc.__name__} with outputs of different dimensions", expr.loc)
    extents = broadcast_shape(lw, arrays + outs, ndim)
    own = shape_of(outs[0])
    # NumPy never grows an output: an operand that would is an error, and
    # the loop runs over the outputs themselves, never past them
    grows = None
    for out in outs:
        for extent, size in zip(extents, shape_of(out)):
            bad = cmpi("ne", extent, size)
            grows = bad if grows is None else arith.OrIOp(grows, bad).result
    if grows is not None:
        lw.errors.raise_if(lw, grows, lw.errors.code(
            ValueError, ("non-broadcastable output operand",)))
    element_types = [t.dtype if isinstance(t, types.Array) else t for t in operand_types]
    sources = [read_source(lw, o, outs) for o in operands]

    def body(indices):
        values = [broadcast_element(o, indices) for o in sources]
        results = scalar_ufunc(lw, ufunc, values, element_types, expr,
                               [out.type.dtype for out in outs])
        for (result, ty), out in zip(results, outs):
            store_element(cast(result, ty, out.type.dtype), out, indices)
    parallel_for(lw, own, body)


def new_result(lw, ty: types.Array, operands: list) -> ArrayValue:
    arrays = [o for o in operands if isinstance(o, ArrayValue)]
    return allocate(lw, ty, broadcast_shape(lw, arrays, ty.ndim))


def _on_elements(operands: list, types_: list) -> tuple[list, list]:
    """Operands with their 0-d arrays read (Numba gives scalars for them)."""
    values = [load_element(o, []) if isinstance(o, ArrayValue) else o for o in operands]
    return values, [t.dtype if isinstance(t, types.Array) else t for t in types_]


@array_operator_rules.register(*_OPERATOR_UFUNC)
def array_operator(lw, fn, operands: list, sig, expr):
    """An operator with an array operand: a new array (a scalar when every
    array is 0-d, as Numba types it)."""
    if not isinstance(sig.return_type, types.Array):
        values, element_types = _on_elements(operands, list(sig.args))
        ((result, ty),) = scalar_ufunc(lw, _OPERATOR_UFUNC[fn], values, element_types, expr,
                                       [sig.return_type])
        return cast(result, ty, sig.return_type)
    out = new_result(lw, sig.return_type, operands)
    elementwise(lw, _OPERATOR_UFUNC[fn], operands, list(sig.args), [out], expr)
    return out


@inplace_array_rules.register(*_INPLACE_UFUNC)
def inplace_array_operator(lw, fn, operands: list, sig, expr):
    """`a op= b` with an array `a`: written in place."""
    out = operands[0]
    elementwise(lw, _INPLACE_UFUNC[fn], operands, list(sig.args), [out], expr)
    return out


@ufunc_rules.register(DUFunc, *(obj for obj in vars(np).values() if isinstance(obj, np.ufunc)))
def ufunc_call(lw, ufunc, args, sig, expr):
    """np.<ufunc>(...) with arrays, scalars, or an output array argument."""
    inputs, outputs = args[:ufunc.nin], args[ufunc.nin:]
    in_types = list(sig.args[:ufunc.nin])
    several = ufunc.nout > 1
    result_types = list(sig.return_type.types) if several else [sig.return_type]
    if outputs and (len(outputs) != ufunc.nout or
                    not all(isinstance(o, ArrayValue) for o in outputs)):
        raise UnsupportedConstructError(
            f"np.{ufunc.__name__} with {len(outputs)} of its {ufunc.nout} outputs", expr.loc)
    if not outputs and not any(isinstance(t, types.Array) for t in result_types):
        values, element_types = _on_elements(inputs, in_types)     # scalars or 0-d arrays
        results = [cast(value, ty, want) for (value, ty), want in
                   zip(scalar_ufunc(lw, ufunc, values, element_types, expr, result_types),
                       result_types)]
        return TupleValue(results, sig.return_type) if several else results[0]
    outs = list(outputs) or [new_result(lw, ty, inputs) for ty in result_types]
    elementwise(lw, ufunc, inputs, in_types, outs, expr)
    return TupleValue(outs, sig.return_type) if several else outs[0]
