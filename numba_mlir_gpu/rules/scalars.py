"""Scalar operators with Numba's (Python's) semantics.

Rules get operands already cast to the signature's argument types.
Division by zero follows NumPy's error model (no exception is raised).
"""
from __future__ import annotations

import operator
import os

import numba

from numba.core import types
from numba.core.typing import signature

from .._mlir import arith, math
from ..lowering.build import cmpf, cmpi, const, logical_not, select
from ..lowering.casts import cast, truth
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import binop_rules, unary_rules
from ..lowering.values import OptionalValue


def _scalar_sig(sig, expr):
    for ty in list(sig.args) + [sig.return_type]:
        if not isinstance(types.unliteral(ty), (types.Integer, types.Float, types.Boolean)):
            raise UnsupportedConstructError(f"the operator on {ty}", expr.loc)
    return types.unliteral(sig.args[0])


def _kind(ty):
    if isinstance(ty, types.Float):
        return "f"
    if isinstance(ty, types.Integer) and ty.signed:
        return "s"
    return "u"         # unsigned integers and booleans


def _arith(int_op, float_op, bool_op=None):
    """`bool_op`: NumPy's boolean loop ('??->?': add is or, multiply is and),
    reached from array expressions on boolean arrays."""
    def rule(lw, args, sig, expr):
        ty = _scalar_sig(sig, expr)
        if isinstance(ty, types.Boolean) and isinstance(types.unliteral(sig.return_type),
                                                        types.Boolean):
            if bool_op is None:
                raise UnsupportedConstructError("this operator on booleans", expr.loc)
            return bool_op(*args).result
        op = float_op if isinstance(ty, types.Float) else int_op
        return op(*args).result
    return rule


binop_rules.register(operator.add)(_arith(arith.AddIOp, arith.AddFOp, arith.OrIOp))
binop_rules.register(operator.sub)(_arith(arith.SubIOp, arith.SubFOp))
binop_rules.register(operator.mul)(_arith(arith.MulIOp, arith.MulFOp, arith.AndIOp))


def zero_division(lw, b, ty, message: str, expr) -> None:
    """Numba's error model "python" (njit's default) for Python's operators
    outside parallel loops: a zero divisor raises ZeroDivisionError after the
    statement (the division itself is made safe or gives inf). Parallel loops
    (parfor bodies, array expressions) use NumPy's model, as Numba compiles
    its parfor bodies, and so do NumPy's ufuncs (np.divide(a, 0)) and Numba's
    own implementations of NumPy functions (np.mean of an empty array is nan)."""
    if lw.mlower.error_model != "python" or lw.parallel_depth > 0 or \
            getattr(expr, "op", None) not in ("binop", "inplace_binop") or \
            _numba_library_code(lw, expr):
        return
    if isinstance(ty, types.Float):
        is_zero = cmpf("OEQ", b, const(ty, 0.0))
    else:
        is_zero = cmpi("eq", b, const(ty, 0))
    lw.errors.raise_if(lw, is_zero, lw.errors.code(ZeroDivisionError, (message,)))


_NUMBA_DIR = os.path.dirname(numba.__file__) + os.sep


def _numba_library_code(lw, expr) -> bool:
    """Code of Numba's own: an implementation lowered as a callee, or one its
    parfor pass inlined into the user's function (np.mean's sum / size)."""
    filename = getattr(getattr(expr, "loc", None), "filename", None) or ""
    return lw.func_ir.func_id.modname.startswith("numba.") or \
        os.path.abspath(filename).startswith(_NUMBA_DIR)


@binop_rules.register(operator.truediv)
def truediv(lw, args, sig, expr):
    _scalar_sig(sig, expr)
    resty = types.unliteral(sig.return_type)
    a, b = (cast(x, t, resty) for x, t in zip(args, sig.args))
    zero_division(lw, b, resty, "division by zero", expr)
    return arith.DivFOp(a, b).result


def float_divmod(a, b, ty):
    """Python's float floor division and modulo (CPython's float_divmod)."""
    zero = const(ty, 0.0)
    mod = arith.RemFOp(a, b).result
    div = arith.DivFOp(arith.SubFOp(a, mod).result, b).result
    mod_nonzero = cmpf("UNE", mod, zero)
    signs_differ = arith.XOrIOp(cmpf("OLT", b, zero), cmpf("OLT", mod, zero)).result
    fix = arith.AndIOp(mod_nonzero, signs_differ).result
    mod = select(fix, arith.AddFOp(mod, b).result, mod)
    div = select(fix, arith.SubFOp(div, const(ty, 1.0)).result, div)
    mod = select(mod_nonzero, mod, math.CopySignOp(zero, b).result)
    floordiv = math.FloorOp(div).result
    round_up = cmpf("OGT", arith.SubFOp(div, floordiv).result, const(ty, 0.5))
    floordiv = select(round_up, arith.AddFOp(floordiv, const(ty, 1.0)).result, floordiv)
    div_zero = math.CopySignOp(zero, arith.DivFOp(a, b).result).result
    floordiv = select(cmpf("UNE", div, zero), floordiv, div_zero)
    return floordiv, mod


def _int_divisor(a, b, ty):
    """Division by zero gives 0 (NumPy's error model), not a trap; so does
    MIN // -1, which overflows (and traps on x86), as in Numba."""
    gives_zero = cmpi("eq", b, const(ty, 0))
    if ty.signed:
        overflows = arith.AndIOp(cmpi("eq", a, const(ty, -2 ** (ty.bitwidth - 1))),
                                 cmpi("eq", b, const(ty, -1))).result
        gives_zero = arith.OrIOp(gives_zero, overflows).result
    return gives_zero, select(gives_zero, const(ty, 1), b)


def _in_integer_result(args, sig, ty):
    """Numba's int_floordiv/int_rem cast both operands to the result type
    first: uint64 % int64 is an int64 modulo of the operands as int64."""
    resty = types.unliteral(sig.return_type)
    if not isinstance(ty, types.Integer) or not isinstance(resty, types.Integer):
        return args, ty
    return [cast(v, t, resty) for v, t in zip(args, sig.args)], resty


@binop_rules.register(operator.floordiv)
def floordiv(lw, args, sig, expr):
    ty = _scalar_sig(sig, expr)
    (a, b), ty = _in_integer_result(args, sig, ty)
    if isinstance(ty, types.Float):
        zero_division(lw, b, ty, "division by zero", expr)
        # by zero, as Numba's real_floordiv_impl: a / b (+-inf, or nan)
        return select(cmpf("OEQ", b, const(ty, 0.0)), arith.DivFOp(a, b).result,
                      float_divmod(a, b, ty)[0])
    zero_division(lw, b, ty, "integer division by zero", expr)
    gives_zero, b = _int_divisor(a, b, ty)
    q = (arith.FloorDivSIOp if ty.signed else arith.DivUIOp)(a, b).result
    return select(gives_zero, const(ty, 0), q)


@binop_rules.register(operator.mod)
def mod(lw, args, sig, expr):
    ty = _scalar_sig(sig, expr)
    (a, b), ty = _in_integer_result(args, sig, ty)
    if isinstance(ty, types.Float):
        zero_division(lw, b, ty, "modulo by zero", expr)
        return float_divmod(a, b, ty)[1]
    zero_division(lw, b, ty, "integer modulo by zero", expr)
    gives_zero, b = _int_divisor(a, b, ty)
    if not ty.signed:
        return select(gives_zero, const(ty, 0), arith.RemUIOp(a, b).result)
    r = arith.RemSIOp(a, b).result
    zero = const(ty, 0)
    fix = arith.AndIOp(cmpi("ne", r, zero),
                       cmpi("slt", arith.XOrIOp(r, b).result, zero)).result
    r = select(fix, arith.AddIOp(r, b).result, r)
    return select(gives_zero, zero, r)


@binop_rules.register(operator.pow)
def power(lw, args, sig, expr):
    _scalar_sig(sig, expr)
    base_ty, exp_ty = (types.unliteral(t) for t in sig.args)
    resty = types.unliteral(sig.return_type)
    a, b = args
    if isinstance(base_ty, types.Float):
        if isinstance(exp_ty, types.Integer):
            return math.FPowIOp(a, b).result
        return math.PowFOp(a, b).result
    if isinstance(resty, types.Integer):
        # np.power(int16 array, 3): the ufunc loop's type, both operands in it
        return math.IPowIOp(cast(a, base_ty, resty), cast(b, exp_ty, resty)).result
    return math.IPowIOp(a, b).result


def _bitwise(op):
    """Both operands in the result type first, as Numba does (`int16 << int64`
    of an array expression: the shift count narrowed)."""
    def rule(lw, args, sig, expr):
        ty = _scalar_sig(sig, expr)
        if isinstance(ty, types.Float):
            raise UnsupportedConstructError("bitwise operators on floats", expr.loc)
        resty = types.unliteral(sig.return_type)
        return op(*(cast(a, t, resty) for a, t in zip(args, sig.args))).result
    return rule


binop_rules.register(operator.and_)(_bitwise(arith.AndIOp))
binop_rules.register(operator.or_)(_bitwise(arith.OrIOp))
binop_rules.register(operator.xor)(_bitwise(arith.XOrIOp))
binop_rules.register(operator.lshift)(_bitwise(arith.ShLIOp))


@binop_rules.register(operator.rshift)
def rshift(lw, args, sig, expr):
    _scalar_sig(sig, expr)
    op = arith.ShRSIOp if _kind(types.unliteral(sig.return_type)) == "s" else arith.ShRUIOp
    return _bitwise(op)(lw, args, sig, expr)


_PREDICATES = {
    operator.eq: ("eq", "eq", "OEQ"),
    operator.ne: ("ne", "ne", "UNE"),
    operator.lt: ("slt", "ult", "OLT"),
    operator.le: ("sle", "ule", "OLE"),
    operator.gt: ("sgt", "ugt", "OGT"),
    operator.ge: ("sge", "uge", "OGE"),
}


def _comparison(fn):
    signed, unsigned, ordered = _PREDICATES[fn]

    def rule(lw, args, sig, expr):
        ty = _scalar_sig(sig, expr)
        a_ty, b_ty = (types.unliteral(t) for t in sig.args)
        if a_ty != b_ty and all(isinstance(t, types.Integer) for t in (a_ty, b_ty)):
            if a_ty.signed != b_ty.signed:
                return _mixed_sign_comparison(fn, args, a_ty, b_ty)
            # a ufunc loop such as 'Ii->?': compared in the wider type
            ty = max(a_ty, b_ty, key=lambda t: t.bitwidth)
            args = [cast(v, t, ty) for v, t in zip(args, (a_ty, b_ty))]
        kind = _kind(ty)
        if kind == "f":
            return cmpf(ordered, *args)
        return cmpi(signed if kind == "s" else unsigned, *args)
    return rule


def _mixed_sign_comparison(fn, args, a_ty, b_ty):
    """A signed and an unsigned integer compared exactly, as NumPy 2 and
    Numba's integer comparison do (no rounding through float64: int64(2**63 - 2)
    < uint64(2**63 - 1) is True): a negative signed value is below every
    unsigned one; otherwise both compare as unsigned of the wider width."""
    width = max(a_ty.bitwidth, b_ty.bitwidth)
    wide = types.Integer.from_bitwidth(width, signed=False)
    signed_first = a_ty.signed
    s_val, s_ty = (args[0], a_ty) if signed_first else (args[1], b_ty)
    negative = cmpi("slt", s_val, const(s_ty, 0))
    unsigned = cmpi(_PREDICATES[fn][1], cast(args[0], a_ty, wide), cast(args[1], b_ty, wide))
    # with the signed operand negative: s < u, s <= u, s != u hold; the others not
    s_below = {operator.lt: signed_first, operator.le: signed_first,
               operator.gt: not signed_first, operator.ge: not signed_first,
               operator.eq: False, operator.ne: True}[fn]
    return select(negative, const(types.boolean, int(s_below)), unsigned)


for _fn in _PREDICATES:
    binop_rules.register(_fn)(_comparison(_fn))


def _in_result_type(args, sig):
    """Numba computes `-x` and `+x` in the result type."""
    return cast(args[0], sig.args[0], sig.return_type), types.unliteral(sig.return_type)


@unary_rules.register(operator.neg)
def neg(lw, args, sig, expr):
    """Numba negates an integer in its own type, then widens (-uint8(3) is
    253, not 2**64 - 3); a boolean is widened first (-True is -1)."""
    ty = _scalar_sig(sig, expr)
    if isinstance(ty, types.Integer):
        negated = arith.SubIOp(const(ty, 0), args[0]).result
        return cast(negated, ty, sig.return_type)
    value, ty = _in_result_type(args, sig)
    if isinstance(ty, types.Float):
        return arith.NegFOp(value).result
    return arith.SubIOp(const(ty, 0), value).result


@unary_rules.register(operator.pos)
def pos(lw, args, sig, expr):
    _scalar_sig(sig, expr)
    return _in_result_type(args, sig)[0]


@unary_rules.register(operator.not_)
def not_(lw, args, sig, expr):
    ty = _scalar_sig(sig, expr)
    return arith.XOrIOp(truth(args[0], ty), const(types.boolean, 1)).result


@unary_rules.register(operator.invert)
def invert(lw, args, sig, expr):
    """Numba inverts in the operand's type, then widens (~uint8(3) == 252).
    On booleans, Python's `~True` is the int -2, but NumPy's invert (array
    expressions, typed bool -> bool) is logical not."""
    ty = _scalar_sig(sig, expr)
    if isinstance(ty, types.Float):
        raise UnsupportedConstructError("'~' on floats", expr.loc)
    if isinstance(ty, types.Boolean) and isinstance(types.unliteral(sig.return_type),
                                                    types.Boolean):
        return arith.XOrIOp(args[0], const(types.boolean, 1)).result
    if isinstance(ty, types.Boolean):
        ty, value = types.int64, cast(args[0], ty, types.int64)
    else:
        value = args[0]
    inverted = arith.XOrIOp(value, const(ty, -1 if ty.signed else 2 ** ty.bitwidth - 1)).result
    return cast(inverted, ty, sig.return_type)


SCALARS = (types.Boolean, types.Integer, types.Float, types.Complex)


def _identity(negate: bool):
    """`a is b` / `a is not b` where the answer follows from the types
    (None, omitted arguments), of an Optional and None, or of two numbers
    (`==` for one type, else False): what Numba's own lowering supports too."""
    def rule(lw, args, sig, expr):
        kinds = [isinstance(t, (types.NoneType, types.Omitted)) for t in sig.args]
        held = [a for a in args if isinstance(a, OptionalValue)]
        if held and any(kinds) and len(held) == 1:
            # `z is None` of an Optional: whether it holds no value
            return held[0].valid if negate else logical_not(held[0].valid)
        if not any(kinds):
            left, right = (types.unliteral(t) for t in sig.args)
            if not (isinstance(left, SCALARS) and isinstance(right, SCALARS)):
                raise UnsupportedConstructError(f"'is' between {sig.args[0]} and {sig.args[1]}",
                                                expr.loc)
            if left != right:           # Numba's generic_is: never the same object
                return const(types.boolean, int(negate))
            # immutable values of one type: `==`, as Numba's generic_is
            same = binop_rules.get(operator.eq)(
                lw, args, signature(types.boolean, left, right), expr)
            return logical_not(same) if negate else same
        return const(types.boolean, int(all(kinds)) ^ negate)
    return rule


binop_rules.register(operator.is_)(_identity(False))
binop_rules.register(operator.is_not)(_identity(True))
