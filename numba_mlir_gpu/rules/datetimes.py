"""datetime64 and timedelta64 with Numba's semantics (numba/np/npdatetime.py).

Values are i64 counts of the unit their Numba type carries; NaT is INT64_MIN
(lowering/datetimes.py). Every rule follows Numba's implementation of the
operator or of the ufunc loop ('mm->m', 'Mm->M', 'mq->m', ...): operands are
brought to the result's unit (or the finer of the two) by Numba's factors, a
NaT operand gives NaT (arithmetic), False (comparisons; True for !=), NaN
(timedelta / timedelta) or 0 (timedelta // timedelta). Where Numba's result
differs from NumPy's (its floor division and remainder of negative
timedeltas, np.maximum of two units compared unscaled), Numba's is kept:
results must equal numba.njit's.

The rules are registered over those of the real numbers
(`Registry.register_over`): they run for signatures with a datetime64 or
timedelta64 type and hand the others to the rule they replaced, so this
module is imported after the others.
"""
from __future__ import annotations

import operator

import numpy as np
from numba.core import types
from numba.np import npdatetime_helpers as helpers

from .._mlir import arith
from ..lowering import datetimes as dt
from ..lowering.build import cmpf, cmpi, const, select
from ..lowering.casts import cast
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import binop_rules, call_rules, unary_rules
from ..lowering.types import is_datetime, scalar_type

TD, DT = types.NPTimedelta, types.NPDatetime
I64 = types.int64


def _has_datetime(sig) -> bool:
    return any(is_datetime(t) for t in list(sig.args) + [sig.return_type])


def _over(registry, *keys):
    return registry.register_over(*keys, when=_has_datetime)


def _types(sig):
    return [types.unliteral(t) for t in sig.args], types.unliteral(sig.return_type)


def _refuse(what, sig, expr):
    raise UnsupportedConstructError(f"{what} on {list(sig.args)} -> {sig.return_type}",
                                    getattr(expr, "loc", None))


def _kinds(arg_types) -> str:
    """'m' timedelta, 'M' datetime, 'i' integer or boolean, 'f' float."""
    def kind(t):
        if isinstance(t, TD):
            return "m"
        if isinstance(t, DT):
            return "M"
        if isinstance(t, types.Float):
            return "f"
        if isinstance(t, (types.Integer, types.Boolean)):
            return "i"
        return "?"
    return "".join(kind(t) for t in arg_types)


# -- + and - ---------------------------------------------------------------------

def _timedeltas(args, arg_types, resty, expr):
    """Both timedelta operands in the result's unit (timedelta_add_impl)."""
    return [dt.scale_timedelta(v, t, resty, expr.loc) for v, t in zip(args, arg_types)]


def _datetime_timedelta(d, d_ty, t, t_ty, resty, expr):
    """A datetime and a timedelta in the result's unit (_datetime_timedelta_arith)."""
    d = dt.convert_datetime(d, d_ty.unit, resty.unit, expr.loc)
    return d, dt.scale(t, dt.factor(t_ty.unit, resty.unit, expr.loc))


@_over(binop_rules, operator.add)
def add(lw, args, sig, expr):
    (a_ty, b_ty), resty = _types(sig)
    kinds = _kinds((a_ty, b_ty))
    ok = dt.not_nat(*args)
    if kinds == "mm":
        a, b = _timedeltas(args, (a_ty, b_ty), resty, expr)
    elif kinds == "Mm":
        a, b = _datetime_timedelta(args[0], a_ty, args[1], b_ty, resty, expr)
    elif kinds == "mM":
        b, a = _datetime_timedelta(args[1], b_ty, args[0], a_ty, resty, expr)
    else:
        _refuse("+", sig, expr)
    return dt.or_nat(ok, arith.AddIOp(a, b).result)


@_over(binop_rules, operator.sub)
def sub(lw, args, sig, expr):
    (a_ty, b_ty), resty = _types(sig)
    kinds = _kinds((a_ty, b_ty))
    ok = dt.not_nat(*args)
    if kinds == "mm":
        a, b = _timedeltas(args, (a_ty, b_ty), resty, expr)
    elif kinds == "Mm":
        a, b = _datetime_timedelta(args[0], a_ty, args[1], b_ty, resty, expr)
    elif kinds == "MM":          # datetime_minus_datetime
        a, b = (dt.convert_datetime(v, t.unit, resty.unit, expr.loc)
                for v, t in zip(args, (a_ty, b_ty)))
    else:
        _refuse("-", sig, expr)
    return dt.or_nat(ok, arith.SubIOp(a, b).result)


# -- *, / and // by numbers ------------------------------------------------------------

def _float_to_timedelta(value):
    """Numba's _cast_to_timedelta: NaN gives NaT, others are truncated."""
    truncated = arith.FPToSIOp(scalar_type(I64), value).result
    return select(cmpf("UNO", value, value), dt.nat(), truncated)


@_over(binop_rules, operator.mul)
def mul(lw, args, sig, expr):
    """timedelta * number (either order): _timedelta_times_number."""
    (a_ty, b_ty), resty = _types(sig)
    kinds = _kinds((a_ty, b_ty))
    if kinds in ("mi", "mf"):
        td, td_ty, n, n_ty = args[0], a_ty, args[1], b_ty
    elif kinds in ("im", "fm"):
        td, td_ty, n, n_ty = args[1], b_ty, args[0], a_ty
    else:
        _refuse("*", sig, expr)
    if isinstance(n_ty, types.Float):
        value = _float_to_timedelta(arith.MulFOp(cast(td, I64, n_ty), n).result)
    else:
        value = arith.MulIOp(td, cast(n, n_ty, I64)).result
    value = dt.scale_timedelta(value, td_ty, resty, expr.loc)
    return dt.or_nat(dt.not_nat(td), value)


def _timedelta_over_number(lw, args, sig, expr):
    """timedelta / number and timedelta // number (timedelta_over_number):
    NaT for a zero or NaN divisor; integers divide truncating."""
    (td_ty, n_ty), resty = _types(sig)
    td, n = args
    if isinstance(n_ty, types.Float):
        usable = cmpf("ONE", n, const(n_ty, 0.0))        # neither zero nor NaN
        value = _float_to_timedelta(arith.DivFOp(cast(td, I64, n_ty), n).result)
    else:
        n = cast(n, n_ty, I64)
        usable = cmpi("ne", n, const(I64, 0))
        divisor = select(usable, n, const(I64, 1))
        value = arith.DivSIOp(td, divisor).result
    value = dt.scale_timedelta(value, td_ty, resty, expr.loc)
    return dt.or_nat(arith.AndIOp(dt.not_nat(td), usable).result, value)


def _normalized(args, sig, expr):
    (a_ty, b_ty), _ = _types(sig)
    pair = dt.normalize(*args, a_ty, b_ty)
    if pair is None:
        _refuse("this operation between units that do not convert", sig, expr)
    return pair


def _timedelta_over_timedelta(lw, args, sig, expr):
    """timedelta / timedelta: a float64, NaN if either is NaT."""
    resty = types.unliteral(sig.return_type)
    a, b = _normalized(args, sig, expr)
    ratio = arith.DivFOp(cast(a, I64, types.float64), cast(b, I64, types.float64)).result
    ratio = select(dt.not_nat(*args), ratio, const(types.float64, float("nan")))
    return cast(ratio, types.float64, resty)


def _timedelta_floordiv_timedelta(lw, args, sig, expr):
    """Numba's timedelta_floor_div_timedelta: 0 for NaT or a zero divisor;
    with a negative operand, (a - 1) / b or (a + 1) / b truncated (not
    Python's floor division)."""
    resty = types.unliteral(sig.return_type)
    a, b = _normalized(args, sig, expr)
    zero, one = const(I64, 0), const(I64, 1)
    usable = arith.AndIOp(dt.not_nat(*args), cmpi("ne", b, zero)).result
    divisor = select(usable, b, one)
    a_neg = cmpi("slt", a, zero)
    neg = arith.OrIOp(a_neg, cmpi("slt", b, zero)).result
    top = select(neg, select(a_neg, arith.SubIOp(a, one).result, arith.AddIOp(a, one).result), a)
    quotient = select(usable, arith.DivSIOp(top, divisor).result, zero)
    return cast(quotient, I64, resty)


def _timedelta_mod_timedelta(lw, args, sig, expr):
    """Numba's timedelta_mod_timedelta: NaT for NaT or a zero divisor; the
    truncated remainder where both are positive or it is 0, else it plus b."""
    (a_ty, b_ty), resty = _types(sig)
    a, b = _normalized(args, sig, expr)
    zero = const(I64, 0)
    usable = arith.AndIOp(dt.not_nat(*args), cmpi("ne", b, zero)).result
    rem = arith.RemSIOp(a, select(usable, b, const(I64, 1))).result
    keep = arith.OrIOp(arith.AndIOp(cmpi("sgt", a, zero), cmpi("sgt", b, zero)).result,
                       cmpi("eq", rem, zero)).result
    return dt.or_nat(usable, select(keep, rem, arith.AddIOp(rem, b).result))


def _division(by_timedelta):
    def rule(lw, args, sig, expr):
        kinds = _kinds(_types(sig)[0])
        if kinds in ("mi", "mf"):
            return _timedelta_over_number(lw, args, sig, expr)
        if kinds == "mm":
            return by_timedelta(lw, args, sig, expr)
        _refuse("division", sig, expr)
    return rule


_over(binop_rules, operator.truediv)(_division(_timedelta_over_timedelta))
_over(binop_rules, operator.floordiv)(_division(_timedelta_floordiv_timedelta))
_over(call_rules, np.floor_divide)(_division(_timedelta_floordiv_timedelta))


@_over(binop_rules, operator.mod)
@_over(call_rules, np.remainder)
def remainder(lw, args, sig, expr):
    if _kinds(_types(sig)[0]) != "mm":
        _refuse("%", sig, expr)
    return _timedelta_mod_timedelta(lw, args, sig, expr)


# -- comparisons -------------------------------------------------------------------------

_SIGNED = {operator.eq: "eq", operator.ne: "ne", operator.lt: "slt", operator.le: "sle",
           operator.gt: "sgt", operator.ge: "sge"}


def compare(fn, a, b, a_ty, b_ty, loc=None):
    """`fn(a, b)` of two datetimes or two timedeltas as Numba compares them:
    in the finer unit; with a NaT, False (True for !=); timedeltas whose
    units do not convert are unequal."""
    if isinstance(a_ty, DT) and isinstance(b_ty, DT):
        unit = helpers.get_best_unit(a_ty.unit, b_ty.unit)
        pair = (dt.convert_datetime(a, a_ty.unit, unit, loc),
                dt.convert_datetime(b, b_ty.unit, unit, loc))
    elif isinstance(a_ty, TD) and isinstance(b_ty, TD):
        pair = dt.normalize(a, b, a_ty, b_ty)
        if pair is None and fn not in (operator.eq, operator.ne):
            raise UnsupportedConstructError(
                f"ordering {a_ty} and {b_ty} (units that do not convert)", loc)
    else:
        raise UnsupportedConstructError(f"comparing {a_ty} and {b_ty}", loc)
    on_nat = const(types.boolean, int(fn is operator.ne))
    if pair is None:
        return on_nat
    return select(dt.not_nat(a, b), cmpi(_SIGNED[fn], *pair), on_nat)


def _comparison(fn):
    def rule(lw, args, sig, expr):
        (a_ty, b_ty), _ = _types(sig)
        return compare(fn, *args, a_ty, b_ty, getattr(expr, "loc", None))
    return rule


for _fn in _SIGNED:
    _over(binop_rules, _fn)(_comparison(_fn))


# -- unary operations ------------------------------------------------------------------------

def _timedelta_only(what, sig, expr):
    (ty,), resty = _types(sig)
    if not isinstance(ty, TD):
        _refuse(what, sig, expr)
    return ty, resty


@_over(unary_rules, operator.neg)
def neg(lw, args, sig, expr):
    _timedelta_only("-", sig, expr)
    return arith.SubIOp(const(I64, 0), args[0]).result       # -NaT is NaT


@_over(unary_rules, operator.pos)
def pos(lw, args, sig, expr):
    _timedelta_only("+", sig, expr)
    return args[0]


@_over(call_rules, abs, np.abs, np.absolute)
def absolute(lw, args, sig, expr):
    """timedelta_abs_impl: NaT (INT64_MIN) negates to itself."""
    _timedelta_only("abs", sig, expr)
    x = args[0]
    return select(cmpi("slt", x, const(I64, 0)), arith.SubIOp(const(I64, 0), x).result, x)


@_over(call_rules, np.sign)
def sign(lw, args, sig, expr):
    """timedelta_sign_impl: 1, 0 or -1 (NaT is -1) in the timedelta's unit
    ('m->m' before NumPy 2.5); as a float64, NaT gives NaN ('m->d')."""
    _, resty = _timedelta_only("np.sign", sig, expr)
    x = args[0]
    zero = const(I64, 0)
    s = select(cmpi("sgt", x, zero), const(I64, 1),
               select(cmpi("eq", x, zero), zero, const(I64, -1)))
    if isinstance(resty, types.Float):
        return select(dt.is_nat(x), const(resty, float("nan")), cast(s, I64, resty))
    return s


@_over(call_rules, np.isnat, np.isnan)
def isnat(lw, args, sig, expr):
    """np.isnat, and np.isnan, whose 'm->?'/'M->?' loops Numba makes isnat."""
    if not is_datetime(sig.args[0]):
        _refuse("np.isnat", sig, expr)
    return dt.is_nat(args[0])


@_over(call_rules, np.isfinite)
def isfinite(lw, args, sig, expr):
    return cmpi("ne", args[0], dt.nat())


@_over(call_rules, np.isinf)
def isinf(lw, args, sig, expr):
    """np_int_isinf_impl: never."""
    return const(types.boolean, 0)


# -- extrema ------------------------------------------------------------------------------

def _extremum(larger: bool, nat_wins: bool):
    """Numba's datetime_maximum_impl / _fmax_impl (and the minima): the raw
    counts compared (operands of two units are not scaled, as in Numba);
    a NaT operand wins (maximum, minimum) or is skipped (fmax, fmin)."""
    def rule(lw, args, sig, expr):
        (a_ty, b_ty), resty = _types(sig)
        if not (is_datetime(a_ty) and type(a_ty) is type(b_ty)):
            _refuse("this extremum", sig, expr)
        a, b = args
        res = select(cmpi("sge" if larger else "sle", a, b), a, b)
        a_ok, b_ok = cmpi("ne", a, dt.nat()), cmpi("ne", b, dt.nat())
        if nat_wins:
            res = select(a_ok, res, a)
            return select(b_ok, res, b)
        res = select(a_ok, res, b)
        return select(b_ok, res, a)
    return rule


_over(call_rules, np.maximum, helpers.datetime_maximum)(_extremum(True, True))
_over(call_rules, np.minimum, helpers.datetime_minimum)(_extremum(False, True))
_over(call_rules, np.fmax)(_extremum(True, False))
_over(call_rules, np.fmin)(_extremum(False, False))


def _builtin_extremum(fn):
    """max()/min() of datetimes (Numba's max_vararg): each next value
    replaces the running one when `fn(value, running)`, a NaT never does and
    a NaT first stays."""
    def rule(lw, args, sig, expr):
        arg_types, _ = _types(sig)
        if len(args) == 1 or not all(is_datetime(t) for t in arg_types):
            _refuse(fn.__name__, sig, expr)
        acc, acc_ty = args[0], arg_types[0]
        for value, ty in zip(args[1:], arg_types[1:]):
            acc = select(compare(fn, value, acc, ty, acc_ty, expr.loc), value, acc)
        return acc
    return rule


_over(call_rules, max)(_builtin_extremum(operator.gt))
_over(call_rules, min)(_builtin_extremum(operator.lt))
