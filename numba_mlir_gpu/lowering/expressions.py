"""Lowering rules for Numba IR expressions, keyed by `Expr.op`.

Each rule returns a value of the target variable's type.
"""
from __future__ import annotations

import operator

from numba.core import types
from numba.core.typing import signature

from .._mlir import arith, memref
from . import casts, iteration
from .build import cmpi, const, const_i64, dim, select, to_i64
from .errors import UnsupportedConstructError
from .indexing import index_parts, load_item, static_index
from .registry import expr_rules
from .types import is_fortran, is_scalar, strided_memref_type
from .values import BROADCAST_READ, ArrayValue, FlatValue, IterPair, PyValue, TupleValue


def _result(lw, value, fromty, target):
    return lw.convert(value, fromty, lw.typeof(target))


_LITERAL_COMPARISONS = {operator.eq: operator.eq, operator.ne: operator.ne}


@expr_rules.register("binop", "inplace_binop")
def lower_binop(lw, expr, target):
    sig = lw.calltypes[expr]
    fn = expr.immutable_fn if expr.op == "inplace_binop" else expr.fn
    if fn in _LITERAL_COMPARISONS:
        literals = [lw.typeof(v.name) for v in (expr.lhs, expr.rhs)]
        if all(isinstance(t, types.StringLiteral) for t in literals):
            # `shift == "left"` of a string argument given as a literal (stumpy's
            # _shift_insert_at_index(..., shift="right")): known at compile time
            same = _LITERAL_COMPARISONS[fn](literals[0].literal_value, literals[1].literal_value)
            return _result(lw, const(types.boolean, same), types.boolean, target)
    lhs = lw.read_as(expr.lhs, sig.args[0])
    rhs = lw.read_as(expr.rhs, sig.args[1])
    if expr.op == "inplace_binop" and isinstance(lhs, ArrayValue):
        return lw.inplace_binop(expr.fn, fn, lhs, rhs, sig, expr)
    return _result(lw, lw.binop(fn, lhs, rhs, sig, expr), sig.return_type, target)


@expr_rules.register("unary")
def lower_unary(lw, expr, target):
    sig = lw.calltypes[expr]
    value = lw.read_as(expr.value, sig.args[0])
    return _result(lw, lw.unary(expr.fn, value, sig, expr), sig.return_type, target)


@expr_rules.register("call")
def lower_call(lw, expr, target):
    if expr.varkwarg is not None:
        raise UnsupportedConstructError("calls with **kwargs", expr.loc)
    sig = lw.calltypes[expr]
    if len(expr.args) > 1 and len(sig.args) == 1 and isinstance(sig.args[0], types.BaseTuple):
        # f(*args) typed as one star-tuple argument: spread it again.
        sig = signature(sig.return_type, *sig.args[0].types)
    callee = lw.read(expr.func)
    args = []
    for i, var in enumerate(expr.args):
        want = sig.args[i] if i < len(sig.args) else lw.typeof(var.name)
        args.append(lw.read_as(var, want))
    if expr.vararg is not None:
        args += _star_arguments(lw, expr, sig, len(args))
    elif expr.kws and isinstance(callee, PyValue):
        args += _keyword_arguments(lw, expr, sig, len(args))
    result = lw.call(callee, args, sig, expr)
    return _result(lw, result, sig.return_type, target)


def _keyword_arguments(lw, expr, sig, first: int) -> list:
    """`np.full(n, fill_value=x)`: the keyword arguments that follow the
    positional ones in the parameter order Numba's typing folded them into
    (`sig.pysig`), as further positional arguments; the rules take their
    arguments by position. Stops at the first parameter left to its default
    (the rules see the keywords in `expr.kws`)."""
    pysig = getattr(sig, "pysig", None)
    if pysig is None:
        return []
    given = dict(expr.kws)
    folded = []
    for name in list(pysig.parameters)[first:]:
        if name not in given or first + len(folded) >= len(sig.args):
            break
        folded.append(lw.read_as(given[name], sig.args[first + len(folded)]))
    return folded


def _star_arguments(lw, expr, sig, first: int) -> list:
    """`f(x, *t)`: the items of the tuple `t` as further positional
    arguments, as Numba types the call (its signature lists them one by
    one; Numba's np.iinfo builds its result as `iinfo(*data)`)."""
    star = lw.read(expr.vararg)
    if not isinstance(star, TupleValue):
        raise UnsupportedConstructError(
            f"calls with *args of {lw.typeof(expr.vararg.name)}", expr.loc)
    if first + len(star.items) != len(sig.args):
        raise UnsupportedConstructError("this call with *args", expr.loc)
    return [casts.cast(item, item_ty, want) for item, item_ty, want
            in zip(star.items, star.type.types, sig.args[first:])]


@expr_rules.register("getattr")
def lower_getattr(lw, expr, target):
    value = lw.read(expr.value)
    return lw.getattr(value, lw.typeof(expr.value.name), expr.attr, expr, target)


@expr_rules.register("getitem")
def lower_getitem(lw, expr, target):
    value = lw.read(expr.value)
    index = lw.read(expr.index)
    index_ty = lw.typeof(expr.index.name)
    if expr._kws.get(BROADCAST_READ) and isinstance(value, ArrayValue):
        index, index_ty = _broadcast_index(value, index, index_ty, expr.loc)
    return _item(lw, value, index, index_ty, expr, target)


def _broadcast_index(array: ArrayValue, index, index_ty, loc):
    """The right operand's read in the loop of `A op= B` (BROADCAST_READ), as
    NumPy broadcasts B: its dimensions align with A's last ones, and index 0
    is read along those of size 1."""
    parts = index_parts(index, index_ty, loc)
    ndim = array.type.ndim
    if ndim > len(parts):
        return index, index_ty
    parts = parts[len(parts) - ndim:]
    items = [select(cmpi("eq", to_i64(dim(array.memref, d)), const_i64(1)), const_i64(0),
                    casts.cast(value, ty, types.int64))
             for d, (value, ty) in enumerate(parts)]
    if len(items) == 1 and not isinstance(types.unliteral(index_ty), types.BaseTuple):
        return items[0], types.int64
    ty = types.UniTuple(types.int64, len(items))
    return TupleValue(items, ty), ty


@expr_rules.register("static_getitem")
def lower_static_getitem(lw, expr, target):
    value = lw.read(expr.value)
    if isinstance(value, TupleValue) and isinstance(expr.index, int):
        item_ty = value.type.types[expr.index]
        return _result(lw, value.items[expr.index], item_ty, target)
    if isinstance(value, TupleValue) and isinstance(expr.index, slice):
        # a constant slice of a tuple (`a.shape[:-1]`): the tuple of those items
        return TupleValue(value.items[expr.index], types.unliteral(lw.typeof(target)))
    index, index_ty = static_index(lw, expr.index, expr.index_var)
    return _item(lw, value, index, index_ty, expr, target)


def _item(lw, value, index, index_ty, expr, target):
    if isinstance(value, FlatValue):
        item = load_item(lw, value, index, index_ty, expr.loc, name=expr.value.name)
        return _result(lw, item, value.array.type.dtype, target)
    if isinstance(value, ArrayValue):
        item = load_item(lw, value, index, index_ty, expr.loc, lw.typeof(target),
                         name=expr.value.name)
        if isinstance(item, ArrayValue):
            return item
        return _result(lw, item, value.type.dtype, target)
    if isinstance(value, TupleValue) and isinstance(types.unliteral(index_ty), types.Integer):
        item = _tuple_item(lw, value, index, types.unliteral(index_ty), expr)
        if isinstance(item, ArrayValue):
            return item
        return _result(lw, item, value.type.dtype, target)
    raise UnsupportedConstructError(
        f"indexing a value of type {lw.typeof(expr.value.name)} with {index_ty}", expr.loc)


def _tuple_item(lw, value: TupleValue, index, index_ty, expr):
    """A homogeneous tuple of scalars or arrays indexed at run time: a chain
    of selects (negative indices wrap); out of range raises IndexError."""
    ty = value.type
    dtype = types.unliteral(getattr(ty, "dtype", None))
    if not isinstance(ty, types.UniTuple) or not value.items or not (
            is_scalar(dtype) or (isinstance(dtype, types.Array)
                                 and all(isinstance(v, ArrayValue) for v in value.items))):
        raise UnsupportedConstructError(f"indexing {ty} at run time", expr.loc)
    n = len(value.items)
    index = casts.cast(index, index_ty, types.intp)
    if index_ty.signed:
        wrapped = arith.AddIOp(index, const(types.intp, n)).result
        index = select(cmpi("slt", index, const(types.intp, 0)), wrapped, index)
    outside = arith.OrIOp(cmpi("slt", index, const(types.intp, 0)),
                          cmpi("sge", index, const(types.intp, n))).result
    lw.errors.raise_if(lw, outside, lw.errors.code(IndexError, ("tuple index out of range",)))
    items = value.items if is_scalar(dtype) else _common_memrefs(value.items, dtype, expr.loc)
    result = items[0]
    for i, item in enumerate(items[1:], 1):
        result = select(cmpi("eq", index, const(types.intp, i)), item, result)
    if is_scalar(dtype):
        return result
    # It aliases one of the members (a view: returned as a copy, as the
    # member it stands for cannot be told at compile time).
    return ArrayValue(result, value.items[0].type if items is not value.items else dtype,
                      view=True)


def _common_memrefs(arrays: list, dtype: types.Array, loc) -> list:
    """The members' memrefs, of one MLIR type for arith.select: as they are
    when they agree, else cast to the strided type of the tuple's dtype
    (members of one Numba type may be held as views or as new arrays)."""
    memrefs = [a.memref for a in arrays]
    if all(m.type == memrefs[0].type and a.type == arrays[0].type for m, a in zip(memrefs, arrays)):
        return memrefs
    if any(is_fortran(a.type) for a in arrays):
        raise UnsupportedConstructError(f"indexing a tuple of {dtype} at run time", loc)
    strided = strided_memref_type(dtype)
    return [m if m.type == strided else memref.CastOp(strided, m).result for m in memrefs]


@expr_rules.register("build_tuple")
def lower_build_tuple(lw, expr, target):
    ty = lw.typeof(target)
    items = [lw.read_as(var, item_ty) for var, item_ty in zip(expr.items, ty.types)]
    return TupleValue(items, ty)


@expr_rules.register("cast")
def lower_cast(lw, expr, target):
    return _result(lw, lw.read(expr.value), lw.typeof(expr.value.name), target)


@expr_rules.register("exhaust_iter")
def lower_exhaust_iter(lw, expr, target):
    value = lw.read(expr.value)
    if isinstance(value, TupleValue):
        return value
    raise UnsupportedConstructError(f"unpacking {lw.typeof(expr.value.name)}", expr.loc)


@expr_rules.register("getiter")
def lower_getiter(lw, expr, target):
    return iteration.getiter(lw, lw.read(expr.value), lw.typeof(expr.value.name), expr)


@expr_rules.register("iternext")
def lower_iternext(lw, expr, target):
    """The pair's value as the type Numba gives it: a range counts in int64
    whatever its Numba type, and `range(n)` of an int32 `n` (an argument
    declared `i4`) yields int32 values."""
    it = lw.read(expr.value)
    pair = iteration.iternext(lw, it, expr)
    first = lw.typeof(target).first_type
    return IterPair(casts.cast(pair.value, iteration.item_type(it), first), pair.valid)


@expr_rules.register("pair_first")
def lower_pair_first(lw, expr, target):
    pair = lw.read(expr.value)
    return _result(lw, pair.value, lw.typeof(expr.value.name).first_type, target)


@expr_rules.register("pair_second")
def lower_pair_second(lw, expr, target):
    return lw.read(expr.value).valid


@expr_rules.register("typed_getitem")
def lower_typed_getitem(lw, expr, target):
    value = lw.read(expr.value)
    index = lw.read(expr.index)
    return _item(lw, value, index, lw.typeof(expr.index.name), expr, target)



@expr_rules.register("null")
def lower_null(lw, expr, target):
    """`v = null()`: Numba's SSA gives a variable that is read on a path where it
    is not yet assigned (`c = c + x` in the else of an `if i == 0` that assigns
    it first, in a loop) this definition at the top; Numba lowers it as the
    type's zero value. Scalars and tuples of scalars here."""
    ty = types.unliteral(lw.typeof(target))

    def zero(t):
        if is_scalar(t):
            return const(t, False if isinstance(t, types.Boolean) else 0)
        if isinstance(t, types.BaseTuple) and not isinstance(t, types.NamedTuple):
            return TupleValue([zero(item) for item in t.types], t)
        raise UnsupportedConstructError(f"a variable of type {t} read before it is assigned "
                                        "on some path (null())", expr.loc)
    return zero(ty)
