"""The `math` module, scalar NumPy ufuncs and numeric builtins.

Array ufuncs reach us as scalar calls too: Numba's parfor pass rewrites
array expressions into loops whose bodies call the ufunc on elements.
"""
from __future__ import annotations

import functools
import math as pymath
import operator
import warnings

import numpy as np
from numba.core import types
from numba.core.typing import signature
from numba.np.arraymath import _np_round_float

from .._mlir import arith, math
from ..lowering.build import cmpf, cmpi, const, less_than, select
from ..lowering.casts import cast, float_operands
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import attr_rules, binop_rules, call_rules


def _unary_float(op):
    def rule(lw, args, sig, expr):
        return op(*float_operands(args, sig, expr)).result
    return rule


_UNARY = {
    "sin": math.SinOp, "cos": math.CosOp, "tan": math.TanOp,
    "asin": math.AsinOp, "acos": math.AcosOp, "atan": math.AtanOp,
    "sinh": math.SinhOp, "cosh": math.CoshOp, "tanh": math.TanhOp,
    "asinh": math.AsinhOp, "acosh": math.AcoshOp, "atanh": math.AtanhOp,
    "exp": math.ExpOp, "expm1": math.ExpM1Op, "exp2": math.Exp2Op,
    "log": math.LogOp, "log1p": math.Log1pOp, "log10": math.Log10Op, "log2": math.Log2Op,
    "erf": math.ErfOp, "erfc": math.ErfcOp, "cbrt": math.CbrtOp,
}
_NUMPY_ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan",
                  "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh"}

for _name, _op in _UNARY.items():
    _keys = [getattr(pymath, _name, None), getattr(np, _name, None)]
    _keys += [getattr(np, alias) for alias, target in _NUMPY_ALIASES.items() if target == _name]
    call_rules.register(*[k for k in _keys if k is not None])(_unary_float(_op))


@call_rules.register(pymath.sqrt, np.sqrt)
def sqrt(lw, args, sig, expr):
    # Correctly rounded on the CPU; passes.ieee_sqrt_in_kernels keeps it so
    # on the GPU, where NVVM lowering would pick sqrt.approx.
    return math.SqrtOp(*float_operands(args, sig, expr)).result


@call_rules.register(pymath.fabs, np.fabs)
def fabs(lw, args, sig, expr):
    return math.AbsFOp(*float_operands(args, sig, expr)).result


@call_rules.register(abs, np.abs, np.absolute)
def absolute(lw, args, sig, expr):
    ty = types.unliteral(sig.args[0])
    (x,) = args
    if isinstance(ty, types.Float):
        return math.AbsFOp(x).result
    if isinstance(ty, types.Integer):
        return math.AbsIOp(x).result if ty.signed else x
    if isinstance(ty, types.Boolean):
        return cast(x, ty, sig.return_type)      # np.abs of bools: the identity
    raise UnsupportedConstructError(f"abs() of {ty}", expr.loc)


def _rounding(op, through=None):
    """`through`: the type an integer argument passes through first (Numba's
    math.floor/ceil/trunc convert it to float64: math.ceil(2**62 - 1) is
    2**62; its np.floor/ceil/trunc of integers are the identity)."""
    def rule(lw, args, sig, expr):
        ty = types.unliteral(sig.args[0])
        if not isinstance(ty, types.Float):
            value, ty = (cast(args[0], ty, through), through) if through else (args[0], ty)
            return cast(value, ty, sig.return_type)
        return cast(op(args[0]).result, ty, sig.return_type)
    return rule


for _op, _py, _np in ((math.FloorOp, pymath.floor, np.floor), (math.CeilOp, pymath.ceil, np.ceil),
                      (math.TruncOp, pymath.trunc, np.trunc)):
    call_rules.register(_py)(_rounding(_op, through=types.float64))
    call_rules.register(_np)(_rounding(_op))
# np.round's rounding half to even (Numba's intrinsic calls llvm.rint); with
# decimals, Numba's round_ndigits scales around it, lowered from its source
call_rules.register(np.rint, _np_round_float)(_rounding(math.RoundEvenOp))


def _binary_float(op):
    def rule(lw, args, sig, expr):
        return op(*float_operands(args, sig, expr)).result
    return rule


call_rules.register(pymath.atan2, np.arctan2)(_binary_float(math.Atan2Op))
call_rules.register(pymath.copysign, np.copysign)(_binary_float(math.CopySignOp))
call_rules.register(pymath.fmod)(_binary_float(arith.RemFOp))


@call_rules.register(np.power)
def power(lw, args, sig, expr):
    """Numba's ufunc loop: both operands in the loop's types (np.power(float32
    array, 2.5) is 'dd->d', of a uint64 array and an int64 'dd->d', of an int16
    array and an int64 'll->l'), then as `**` (rules/scalars.py), an integer
    result passing through float64 where Numba's does (_numba_int_power_rounds)."""
    argtys = [types.unliteral(t) for t in sig.args]
    loop = _power_loop(tuple(argtys))
    if loop is not None:
        args = [cast(a, t, lt) for a, t, lt in zip(args, argtys, loop.inputs)]
        sig = signature(loop.outputs[0], *loop.inputs)
    result = binop_rules.get(operator.pow)(lw, args, sig, expr)
    resty = types.unliteral(sig.return_type)
    if isinstance(resty, types.Integer) and isinstance(types.unliteral(sig.args[1]), types.Integer) \
            and _numba_int_power_rounds():
        result = cast(cast(result, resty, types.float64), types.float64, resty)
    return result


@functools.lru_cache(maxsize=None)
def _power_loop(argtys: tuple):
    """The loop Numba's ufunc machinery picks for np.power on these types."""
    if not all(isinstance(t, (types.Integer, types.Float, types.Boolean)) for t in argtys):
        return None
    from numba.np.numpy_support import ufunc_find_matching_loop
    return ufunc_find_matching_loop(np.power, argtys)


@functools.lru_cache(maxsize=None)
def _numba_int_power_rounds() -> bool:
    """Does Numba's integer np.power round through float64? Its int_power
    (numba/cpython/numbers.py) ends `if invert: return 1.0 / r` / `return r`:
    Python 3.11's bytecode makes that one return of a float64 phi (3**39
    rounded), 3.12's two returns, each cast to the integer type (exact). The
    answer comes from Numba itself, once."""
    import numba
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe = numba.njit(lambda a, b: np.power(a, b))(np.int64(3), np.int64(39))
    return int(probe) != 3 ** 39


# Numba's int_power: exponents above this go to C's pow as floats
_POWI_CUTOFF = 0x10000


@call_rules.register(pymath.pow)
def math_pow(lw, args, sig, expr):
    """math.pow as Numba computes it: C's pow for a float exponent; for an
    integer one, Numba's int_power: repeated squaring up to 2**16 (inverted
    for a negative exponent: 1 / 0 raises outside parallel loops), C's pow of the
    exponent as a float above (math.pow(-1, 2**53 + 1) is 1.0), and
    OverflowError for the most negative int64."""
    resty = types.unliteral(sig.return_type)
    exp_ty = types.unliteral(sig.args[1])
    if not isinstance(exp_ty, types.Integer):
        return math.PowFOp(*float_operands(args, sig, expr)).result
    base = cast(args[0], sig.args[0], resty)
    exponent = cast(args[1], exp_ty, types.int64 if exp_ty.signed else types.uint64)
    i64 = exponent.type
    if exp_ty.signed:
        negative = cmpi("slt", exponent, const(types.int64, 0))
        magnitude = select(negative, arith.SubIOp(const(types.int64, 0), exponent).result,
                           exponent)
        most_negative = cmpi("eq", exponent, const(types.int64, -2 ** 63))
        lw.errors.raise_if(lw, most_negative, lw.errors.code(OverflowError, ()))
    else:
        negative = const(types.boolean, 0)
        magnitude = exponent
    large = cmpi("ugt", magnitude, arith.ConstantOp(i64, _POWI_CUTOFF).result)
    as_float = (arith.SIToFPOp if exp_ty.signed else arith.UIToFPOp)(
        base.type, exponent).result
    by_float = math.PowFOp(base, as_float).result
    small = select(large, arith.ConstantOp(i64, 0).result, magnitude)
    power = math.FPowIOp(base, small).result
    inverted = arith.DivFOp(const(resty, 1.0), power).result
    by_squaring = select(negative, inverted, power)
    if lw.parallel_depth == 0:          # Numba raises whatever its error model
        zero = arith.AndIOp(arith.AndIOp(negative, cmpf("OEQ", power, const(resty, 0.0))
                                         ).result,
                            arith.XOrIOp(large, const(types.boolean, 1)).result).result
        lw.errors.raise_if(lw, zero, lw.errors.code(ZeroDivisionError, ("division by zero",)))
    return select(large, by_float, by_squaring)


@call_rules.register(pymath.hypot, np.hypot)
def hypot(lw, args, sig, expr):
    """hypot as libm computes it (correctly rounded nearly always): abs(z) of
    complex numbers is this too, so log(abs(z)) near |z| = 1 depends on its
    last bit. float32: the root of the sum of squares in float64, as glibc's
    hypotf. float64: Borges' corrected fused algorithm ("An improved
    algorithm for hypot(a, b)", 2019): the root of fma(x, x, y*y), less the
    error of its square found with FMAs, with power-of-two scaling for huge
    and tiny arguments. An infinite argument gives inf, even with a NaN."""
    ty = types.unliteral(sig.return_type)           # integer arguments give a float
    x, y = (math.AbsFOp(a).result for a in float_operands(args, sig, expr))
    inf = const(ty, float("inf"))
    is_inf = arith.OrIOp(cmpf("OEQ", x, inf), cmpf("OEQ", y, inf)).result
    if ty == types.float32:
        xd, yd = (cast(v, ty, types.float64) for v in (x, y))
        root = math.SqrtOp(math.FmaOp(xd, xd, arith.MulFOp(yd, yd).result).result).result
        return select(is_inf, inf, cast(root, types.float64, ty))
    big = arith.MaximumFOp(x, y).result
    small = arith.MinimumFOp(x, y).result
    huge = cmpf("OGT", big, const(ty, 2.0 ** 500))
    tiny = cmpf("OLT", big, const(ty, 2.0 ** -500))
    scale = select(huge, const(ty, 2.0 ** -600), select(tiny, const(ty, 2.0 ** 600),
                                                       const(ty, 1.0)))
    x, y = arith.MulFOp(big, scale).result, arith.MulFOp(small, scale).result
    h = math.SqrtOp(math.FmaOp(x, x, arith.MulFOp(y, y).result).result).result
    h_sq, x_sq = arith.MulFOp(h, h).result, arith.MulFOp(x, x).result
    delta = arith.SubFOp(
        arith.AddFOp(math.FmaOp(arith.NegFOp(y).result, y, arith.SubFOp(h_sq, x_sq).result).result,
                     math.FmaOp(h, h, arith.NegFOp(h_sq).result).result).result,
        math.FmaOp(x, x, arith.NegFOp(x_sq).result).result).result
    corrected = arith.SubFOp(h, arith.DivFOp(delta, arith.AddFOp(h, h).result).result).result
    # h = 0 (both zero) has no correction (0/0); NaN arguments stay NaN
    h = select(cmpf("OEQ", h, const(ty, 0.0)), h, corrected)
    result = arith.DivFOp(h, scale).result
    return select(is_inf, inf, result)


def _predicate(test, int_value):
    """Classification by comparison (the math.is* ops have no LLVM lowering)."""
    def rule(lw, args, sig, expr):
        ty = types.unliteral(sig.args[0])
        if isinstance(ty, types.Float):
            return test(args[0], ty)
        return const(types.boolean, int_value)
    return rule


def _abs_vs_inf(pred):
    return lambda x, ty: cmpf(pred, math.AbsFOp(x).result, const(ty, float("inf")))


call_rules.register(pymath.isnan, np.isnan)(_predicate(lambda x, ty: cmpf("UNO", x, x), 0))
call_rules.register(pymath.isinf, np.isinf)(_predicate(_abs_vs_inf("OEQ"), 0))
call_rules.register(pymath.isfinite, np.isfinite)(_predicate(_abs_vs_inf("OLT"), 1))


def _extremum(pick_second):
    """Python's min/max: the first of the extreme arguments wins, so a NaN
    in first position propagates and later NaNs are skipped."""
    def rule(lw, args, sig, expr):
        if len(args) < 2 or any(isinstance(types.unliteral(t), types.BaseTuple) or
                                isinstance(t, types.Array) for t in sig.args):
            raise UnsupportedConstructError("min()/max() other than of scalars", expr.loc)
        ty = types.unliteral(sig.return_type)
        values = [cast(a, t, ty) for a, t in zip(args, sig.args)]
        result = values[0]
        for value in values[1:]:
            result = select(pick_second(value, result, ty), value, result)
        return result
    return rule


call_rules.register(min)(_extremum(lambda v, r, ty: less_than(v, r, ty)))
call_rules.register(max)(_extremum(lambda v, r, ty: less_than(r, v, ty)))




def _numeric_arg(args, sig, expr):
    ty = types.unliteral(sig.return_type)
    if not isinstance(ty, (types.Integer, types.Float)):
        raise UnsupportedConstructError(
            f"{getattr(expr.func, 'name', 'this function')} returning {ty}", expr.loc)
    return cast(args[0], sig.args[0], ty), ty


@call_rules.register(np.square)
def square(lw, args, sig, expr):
    x, ty = _numeric_arg(args, sig, expr)
    return (arith.MulFOp if isinstance(ty, types.Float) else arith.MulIOp)(x, x).result


@call_rules.register(np.sign)
def sign(lw, args, sig, expr):
    """1, -1, or the argument itself (0, -0.0 and NaN), as Numba."""
    x, ty = _numeric_arg(args, sig, expr)
    zero = const(ty, 0)
    positive = cmpf("OGT", x, zero) if isinstance(ty, types.Float) else \
        cmpi("sgt" if ty.signed else "ugt", x, zero)
    result = select(positive, const(ty, 1), x)
    if isinstance(ty, types.Float):
        return select(cmpf("OLT", x, zero), const(ty, -1), result)
    if ty.signed:
        return select(cmpi("slt", x, zero), const(ty, -1), result)
    return result


@call_rules.register(np.conjugate, np.conj)
def conjugate(lw, args, sig, expr):
    """The conjugate of a real number is itself (complex numbers are not supported)."""
    x, ty = _numeric_arg(args, sig, expr)
    return x


@attr_rules.register((types.Integer, "real"), (types.Float, "real"), (types.Boolean, "real"))
def real_part(lw, value, ty, expr):
    return value


@attr_rules.register((types.Integer, "imag"), (types.Float, "imag"), (types.Boolean, "imag"))
def imaginary_part(lw, value, ty, expr):
    return const(types.unliteral(ty), 0)
