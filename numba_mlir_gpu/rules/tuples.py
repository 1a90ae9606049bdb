"""Operators on tuples: concatenation, comparisons and `in`, as Numba's
tuple lowering (numba/cpython/tupleobj.py) computes them.

NumPy's implementations compare shapes (`a.shape != out.shape` in np.round,
`arr.shape == ()` in np.argwhere); the tuples are unrolled at compile time,
so each comparison is a few scalar compares and selects. Items are compared
as Numba's `generic_compare` does: both converted to their unified type, then
the scalar comparison rule of that operator.
"""
from __future__ import annotations

import operator

from numba.core import types
from numba.core.typing import signature

from .._mlir import arith
from ..lowering.build import const, select
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import binop_rules, call_rules, tuple_operator_rules
from ..lowering.types import is_scalar
from ..lowering.values import TupleValue

_TRUE, _FALSE = 1, 0


def _tuple(value, ty, expr) -> TupleValue:
    if not isinstance(value, TupleValue):
        raise UnsupportedConstructError(f"this operator between a tuple and {ty}", expr.loc)
    return value


def _compare_items(lw, fn, a, a_ty, b, b_ty, expr):
    """`fn(a, b)` of two tuple items (an i1): nested tuples recursively,
    scalars in their unified type."""
    a_ty, b_ty = types.unliteral(a_ty), types.unliteral(b_ty)
    if isinstance(a, TupleValue) and isinstance(b, TupleValue):
        return _COMPARISONS[fn](lw, fn, [a, b], signature(types.boolean, a_ty, b_ty), expr)
    if not (is_scalar(a_ty) and is_scalar(b_ty)):
        raise UnsupportedConstructError(f"comparing tuple items of types {a_ty} and {b_ty}",
                                        expr.loc)
    ty = lw.mlower.typingctx.unify_types(a_ty, b_ty)
    if ty is None or not is_scalar(ty):
        raise UnsupportedConstructError(f"comparing {a_ty} with {b_ty}", expr.loc)
    return binop_rules.get(fn)(lw, [cast(a, a_ty, ty), cast(b, b_ty, ty)],
                               signature(types.boolean, ty, ty), expr)


@tuple_operator_rules.register(operator.add, operator.iadd)
def tuple_concatenation(lw, fn, args, sig, expr) -> TupleValue:
    """Shape arithmetic in Numba's implementations (`a.shape[:1] + (n,)`)."""
    lhs, rhs = (_tuple(v, t, expr) for v, t in zip(args, sig.args))
    return TupleValue(lhs.items + rhs.items, types.unliteral(sig.return_type))


@tuple_operator_rules.register(operator.eq)
def tuple_eq(lw, fn, args, sig, expr):
    """All items equal; tuples of different lengths are never equal."""
    lhs, rhs = (_tuple(v, t, expr) for v, t in zip(args, sig.args))
    if len(lhs.items) != len(rhs.items):
        return const(types.boolean, _FALSE)
    result = const(types.boolean, _TRUE)
    for a, a_ty, b, b_ty in zip(lhs.items, lhs.type.types, rhs.items, rhs.type.types):
        result = arith.AndIOp(result, _compare_items(lw, operator.eq, a, a_ty, b, b_ty,
                                                     expr)).result
    return result


@tuple_operator_rules.register(operator.ne)
def tuple_ne(lw, fn, args, sig, expr):
    equal = tuple_eq(lw, operator.eq, args, sig, expr)
    return arith.XOrIOp(equal, const(types.boolean, _TRUE)).result


def _ordered(lw, fn, args, sig, expr):
    """Lexicographic `<`, `<=`, `>`, `>=` (Numba's tuple_cmp_ordered): the
    first pair of items that differ decides; when all shared items are equal
    the lengths do. Built from the last item back, so the first differing
    item's answer is selected last."""
    lhs, rhs = (_tuple(v, t, expr) for v, t in zip(args, sig.args))
    result = const(types.boolean, int(fn(len(lhs.items), len(rhs.items))))
    pairs = list(zip(lhs.items, lhs.type.types, rhs.items, rhs.type.types))
    for a, a_ty, b, b_ty in reversed(pairs):
        differ = _compare_items(lw, operator.ne, a, a_ty, b, b_ty, expr)
        result = select(differ, _compare_items(lw, fn, a, a_ty, b, b_ty, expr), result)
    return result


_COMPARISONS = {operator.eq: tuple_eq, operator.ne: tuple_ne}
for _fn in (operator.lt, operator.le, operator.gt, operator.ge):
    tuple_operator_rules.register(_fn)(_ordered)
    _COMPARISONS[_fn] = _ordered


@tuple_operator_rules.register(operator.contains)
def tuple_contains(lw, fn, args, sig, expr):
    """`v in t`: some item equals `v` (lhs is the container)."""
    container = _tuple(args[0], sig.args[0], expr)
    key, key_ty = args[1], sig.args[1]
    result = const(types.boolean, _FALSE)
    for item, item_ty in zip(container.items, container.type.types):
        result = arith.OrIOp(result, _compare_items(lw, operator.eq, item, item_ty, key, key_ty,
                                                    expr)).result
    return result


@call_rules.register(tuple)
def tuple_of_a_tuple(lw, args, sig, expr) -> TupleValue:
    """`tuple(t)` of a tuple (what `f(x, *args)` makes of its arguments): t."""
    if len(args) != 1 or not isinstance(args[0], TupleValue):
        raise UnsupportedConstructError(f"tuple() of {', '.join(map(str, sig.args))}",
                                        expr.loc)
    return TupleValue(list(args[0].items), types.unliteral(sig.return_type))
