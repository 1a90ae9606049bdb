"""A scatter update (updates.py) lowered as one atomic read-modify-write.

Numba's semantics of the operation are kept exactly: the value stored is
what the operation statement computes from the element and the operand,
cast to the element type, as the plain statements would store it. A
`memref.atomic_rmw` kind is used only where it computes the same bits
(integers: modular `+`, `-` as adding the negation, `|`, `&`, `^` computed
in a type at least as wide, min/max in the element type; floats: `+`/`-` in
the element type, IEEE's `x - y` being `x + (-y)`); anything else (`*`,
float min/max and their NaN rules, `h[k] += 1.5` on integers, a float32
table with float64 weights) runs the operation's own rule inside a
compare-and-swap loop (lowering/atomics.py).
"""
from __future__ import annotations

import operator
from typing import Optional

import numpy as np
from numba.core import ir as nir
from numba.core import types
from numba.core.typing import signature

from .._mlir import arith, ir, scf
from ..lowering.atomics import atomic_rmw, update_atomically
from ..lowering.build import const
from ..lowering.casts import cast
from ..lowering.indexing import element_indices, in_bounds, static_index
from ..lowering.values import ArrayValue
from .updates import Update

# memref.atomic_rmw kinds that compute an integer update exactly
_INTEGER_KINDS = {operator.add: "addi", operator.sub: "addi", operator.or_: "ori",
                  operator.and_: "andi", operator.xor: "xori"}
_EXTREMA = {max: "max", np.maximum: "max", min: "min", np.minimum: "min"}


def lower_update(lw, update: Update) -> None:
    """The store of `update` as one atomic read-modify-write of the element
    (its read and operation are not lowered)."""
    cooperation = lw.cooperation
    if cooperation is not None and cooperation.free:
        # every thread of the block runs this statement: one updates
        cooperation.single(lambda: _atomic(lw, update), lw)
    else:
        _atomic(lw, update)


def _atomic(lw, update: Update) -> None:
    store = update.store
    array = lw.read(store.target)
    assert isinstance(array, ArrayValue)
    lw.target.check_element_access(lw, array, store.loc)
    if isinstance(store, nir.SetItem):
        index, index_ty = lw.read(store.index), lw.typeof(store.index.name)
    else:
        index, index_ty = static_index(lw, store.index, store.index_var)
    indices = element_indices(lw, array, index, index_ty, store.loc)
    operand = lw.read(update.operand)
    ok = in_bounds(lw, array, indices, store.target.name)
    if ok is None:
        _update(lw, update, array, indices, operand)
        return
    branch = scf.IfOp(ok)
    with ir.InsertionPoint(branch.then_block):
        _update(lw, update, array, indices, operand)
        scf.YieldOp([])


def _update(lw, update: Update, array: ArrayValue, indices: list, operand) -> None:
    native = _native(lw, update, operand, array.type.dtype)
    if native is not None:
        atomic_rmw(*native, array, indices)
    else:
        update_atomically(lw.mlower.module, array, indices,
                          lambda old: _new_value(lw, update, old, operand, array.type.dtype))


def addition_kind(lw, update: Update, dtype) -> Optional[str]:
    """"addi"/"addf" when the update is an addition (or subtraction) that
    one atomic_rmw computes exactly, else None."""
    expr = update.operation.value
    sig = _signature(lw, expr)
    if len(sig.args) != 2 or update.op not in (operator.add, operator.sub):
        return None
    result_ty = types.unliteral(lw.typeof(update.operation.target.name))
    kind = _native_kind(update.op, dtype, result_ty, [types.unliteral(t) for t in sig.args])
    return kind if kind in ("addi", "addf") else None


def _native(lw, update: Update, operand, dtype) -> Optional[tuple]:
    """(atomic_rmw kind, value) when one computes exactly what Numba does,
    else None (a compare-and-swap loop)."""
    expr = update.operation.value
    sig = _signature(lw, expr)
    if len(sig.args) != 2:
        return None
    result_ty = types.unliteral(lw.typeof(update.operation.target.name))
    operand_ty = types.unliteral(sig.args[_operands(expr).index(update.operand)])
    kind = _native_kind(update.op, dtype, result_ty, [types.unliteral(t) for t in sig.args])
    if kind is None:
        return None
    value = cast(cast(operand, lw.typeof(update.operand.name), operand_ty), operand_ty, dtype)
    if update.op is operator.sub:
        # x - y is x + (-y): modulo 2**n, and exactly in IEEE arithmetic
        value = arith.SubIOp(const(dtype, 0), value).result if kind == "addi" else \
            arith.NegFOp(value).result
    return kind, value


def _native_kind(op, dtype, result_ty, arg_types: list) -> Optional[str]:
    same = result_ty == dtype and all(t == dtype for t in arg_types)
    if isinstance(dtype, types.Integer) and op in _INTEGER_KINDS:
        # modular arithmetic and bitwise operations commute with truncation:
        # computed in a type at least as wide, then stored, or in the element type
        wide = all(isinstance(t, types.Integer) and t.bitwidth >= dtype.bitwidth
                   for t in [result_ty] + arg_types)
        return _INTEGER_KINDS[op] if wide else None
    if isinstance(dtype, types.Integer) and op in _EXTREMA and same:
        return _EXTREMA[op] + ("s" if dtype.signed else "u")
    if isinstance(dtype, types.Float) and op in (operator.add, operator.sub) and same:
        return "addf"
    if isinstance(dtype, types.Boolean) and op in (operator.or_, operator.and_, operator.xor) \
            and same:
        return _INTEGER_KINDS[op]
    return None


def _signature(lw, expr):
    """The operation's signature, with max(a, b)'s star tuple spread (as
    lowering/expressions.py does)."""
    sig = lw.calltypes[expr]
    if expr.op == "call" and len(sig.args) == 1 and isinstance(sig.args[0], types.BaseTuple):
        sig = signature(sig.return_type, *sig.args[0].types)
    return sig


def _operands(expr) -> list:
    return [expr.lhs, expr.rhs] if expr.op in ("binop", "inplace_binop") else list(expr.args)


def _new_value(lw, update: Update, old, operand, dtype):
    """What the operation statement computes from the element's current
    value, as the element type (the compare-and-swap loop's update)."""
    expr = update.operation.value
    sig = _signature(lw, expr)
    known = {update.old: (old, dtype),
             update.operand.name: (operand, lw.typeof(update.operand.name))}
    args = [cast(*known[var.name], ty) for var, ty in zip(_operands(expr), sig.args)]
    if expr.op == "call":
        result = lw.call(lw.read(expr.func), args, sig, expr)
    else:
        fn = expr.immutable_fn if expr.op == "inplace_binop" else expr.fn
        result = lw.binop(fn, args[0], args[1], sig, expr)
    result_ty = lw.typeof(update.operation.target.name)
    return cast(cast(result, sig.return_type, result_ty), result_ty, dtype)
