"""NumPy ufuncs without a `math` counterpart: np.minimum/maximum,
np.reciprocal, np.fmax/fmin, np.logical_and/or/xor, np.gcd/lcm, np.ldexp,
np.deg2rad/rad2deg, np.divmod, np.fmod, np.logaddexp/logaddexp2,
np.float_power, np.signbit, np.nextafter, np.spacing.

Each rule follows Numba's implementation (numba/np/npyfuncs.py,
numba/cpython/mathimpl.py) so results match `numba.njit` bit for bit.
"""
from __future__ import annotations

import functools
import math as pymath
import operator

import numpy as np
from numba.core import types
from numba.core.typing import signature

from .._mlir import arith, ir, math, scf
from ..lowering.build import cmpf, cmpi, const, select
from ..lowering.casts import cast, float_operands, truth
from ..lowering.errors import UnsupportedConstructError
from ..lowering.registry import binop_rules, call_rules
from ..lowering.types import scalar_type
from ..lowering.values import TupleValue


def _numpy_extremum(int_pred, float_pred):
    """np.minimum / np.maximum as Numba's np_real_maximum_impl: a NaN from
    either side (the first's if both), else the first argument on ties
    (np.maximum(-0.0, 0.0) is -0.0)."""
    def rule(lw, args, sig, expr):
        ty = types.unliteral(sig.return_type)
        a, b = (cast(x, t, ty) for x, t in zip(args, sig.args))
        if isinstance(ty, types.Float):
            nan_result = select(cmpf("UNO", a, a), a, b)
            return select(cmpf("UNO", a, b), nan_result, select(cmpf(float_pred, a, b), a, b))
        pred = ("s" if getattr(ty, "signed", False) else "u") + int_pred
        return select(cmpi(pred, a, b), a, b)
    return rule


call_rules.register(np.minimum)(_numpy_extremum("lt", "OLE"))
call_rules.register(np.maximum)(_numpy_extremum("gt", "OGE"))


def _as_result(args, sig):
    """The arguments as the result type (NumPy's homogeneous loops)."""
    ty = types.unliteral(sig.return_type)
    return [cast(a, t, ty) for a, t in zip(args, sig.args)], ty


@call_rules.register(np.reciprocal)
def reciprocal(lw, args, sig, expr):
    """1 / x; integers go through float64 and back, as in Numba, so |x| > 1
    gives 0. Integer 0 converts an infinity, which is undefined in Numba
    too (its result depends on the target and the compiler)."""
    (x,), ty = _as_result(args, sig)
    if isinstance(ty, types.Float):
        return arith.DivFOp(const(ty, 1.0), x).result
    wide = cast(x, ty, types.float64)
    return cast(arith.DivFOp(const(types.float64, 1.0), wide).result, types.float64, ty)


def _fmax(a, b):
    """Numba's np_real_fmax_impl: a NaN is ignored unless both are NaN."""
    either_nan = cmpf("UNO", a, b)
    return select(either_nan, select(cmpf("UNO", b, b), a, b),
                  select(cmpf("OGE", a, b), a, b))


def _fmin(a, b):
    either_nan = cmpf("UNO", a, b)
    return select(either_nan, select(cmpf("UNO", a, a), b, a),
                  select(cmpf("OLE", a, b), a, b))


def _nan_ignoring_extremum(integer_rule, float_pick):
    """Integers and booleans as np.maximum/np.minimum; floats skip NaNs."""
    def rule(lw, args, sig, expr):
        ty = types.unliteral(sig.return_type)
        if not isinstance(ty, types.Float):
            return integer_rule(lw, args, sig, expr)
        (a, b), _ = _as_result(args, sig)
        return float_pick(a, b)
    return rule


call_rules.register(np.fmax)(_nan_ignoring_extremum(_numpy_extremum("gt", None), _fmax))
call_rules.register(np.fmin)(_nan_ignoring_extremum(_numpy_extremum("lt", None), _fmin))


def _logical(op):
    """Both operands tested for non-zero (NaN is true); the result is a bool."""
    def rule(lw, args, sig, expr):
        a, b = (truth(x, t) for x, t in zip(args, sig.args))
        return op(a, b).result
    return rule


call_rules.register(np.logical_and)(_logical(arith.AndIOp))
call_rules.register(np.logical_or)(_logical(arith.OrIOp))
call_rules.register(np.logical_xor)(_logical(arith.XOrIOp))


def _gcd(a, b, ty):
    """Euclid on the magnitudes as unsigned numbers. The gcd is unique, so
    this equals Numba's Stein algorithm; |INT_MIN| wraps to INT_MIN there and
    here (gcd(0, INT_MIN) and gcd(INT_MIN, INT_MIN) are INT_MIN)."""
    if ty.signed:
        a, b = math.AbsIOp(a).result, math.AbsIOp(b).result
    mty = scalar_type(ty)
    loop = scf.WhileOp([mty, mty], [a, b])
    before = loop.before.blocks.append(mty, mty)
    with ir.InsertionPoint(before):
        x, y = before.arguments
        scf.ConditionOp(cmpi("ne", y, const(ty, 0)), [x, y])
    after = loop.after.blocks.append(mty, mty)
    with ir.InsertionPoint(after):
        x, y = after.arguments
        scf.YieldOp([y, arith.RemUIOp(x, y).result])
    return loop.results[0]


def _integer_args(args, sig, expr):
    values, ty = _as_result(args, sig)
    if not isinstance(ty, types.Integer):
        raise UnsupportedConstructError(f"np.gcd/np.lcm returning {ty}", expr.loc)
    return values, ty


@call_rules.register(np.gcd, pymath.gcd)
def gcd(lw, args, sig, expr):
    (a, b), ty = _integer_args(args, sig, expr)
    return _gcd(a, b, ty)


@call_rules.register(np.lcm)
def lcm(lw, args, sig, expr):
    """Numba's `0 if a == 0 else abs(a * (b // gcd(b, a)))`. Numba types the
    product of narrower signed integers as int64, so abs() sees the wide
    product before it is truncated to the result type. For uint64, Python
    3.11's bytecode makes the conditional one value that unifies the literal
    0 with uint64 as float64, so Numba's result is the product rounded to
    float64 and converted back; Python 3.12's has two returns and no
    rounding. `_numba_lcm_through` asks Numba's own type inference."""
    (a, b), ty = _integer_args(args, sig, expr)
    g = _gcd(b, a, ty)
    zero = const(ty, 0)
    divisor = select(cmpi("eq", g, zero), const(ty, 1), g)       # g is 0 only when a == 0
    quotient = (arith.DivSIOp if ty.signed else arith.DivUIOp)(b, divisor).result
    if ty.signed:
        wide = types.int64
        product = arith.MulIOp(cast(a, ty, wide), cast(quotient, ty, wide)).result
        magnitude = cast(math.AbsIOp(product).result, wide, ty)
    else:
        magnitude = arith.MulIOp(a, quotient).result
        through = _numba_lcm_through(ty)
        if isinstance(through, types.Float):
            magnitude = cast(cast(magnitude, ty, through), through, ty)
    return select(cmpi("eq", a, zero), zero, magnitude)


def _numba_lcm(a, b):
    return 0 if a == 0 else abs(a * (b // np.gcd(b, a)))    # numba/np/npyfuncs.py


@functools.lru_cache(maxsize=None)
def _numba_lcm_through(ty: types.Integer) -> types.Type:
    """The type the product passes through before Numba converts it to
    `ty`: the type of the value returned by the non-zero branch, from Numba's
    typing of its own lcm (which depends on the interpreter's bytecode)."""
    from numba.core import compiler, ir as nir, typed_passes
    from numba.core.registry import cpu_target
    typing = cpu_target.typing_context
    typing.refresh()
    func_ir = compiler.run_frontend(_numba_lcm)
    typemap = typed_passes.type_inference_stage(
        typing, cpu_target.target_context, func_ir, (ty, ty), ty)[0]
    defs = {st.target.name: st.value for block in func_ir.blocks.values()
            for st in block.body if isinstance(st, nir.Assign)}
    returned = [typemap[defs[st.value.name].value.name] for block in func_ir.blocks.values()
                for st in block.body if isinstance(st, nir.Return)]
    return next((t for t in returned if not isinstance(t, types.Literal)), ty)


# (largest exponent, smallest normal exponent, significand bits, exponent shift)
_FLOAT_LAYOUT = {32: (127, -126, 24, 23), 64: (1023, -1022, 53, 52)}


def _scalbn(y, n, ty):
    """y * 2**n correctly rounded, as C's ldexp (musl's scalbn without
    branches): at most two scalings by normal powers of two bring n into the
    normal range, and the step down stops 53 (24) binades short so that a
    subnormal result is rounded once."""
    high, low, digits, shift = _FLOAT_LAYOUT[ty.bitwidth]
    i32 = types.int32
    for _ in range(2):
        up, down = cmpi("sgt", n, const(i32, high)), cmpi("slt", n, const(i32, low))
        y = select(up, arith.MulFOp(y, const(ty, 2.0 ** high)).result,
                   select(down, arith.MulFOp(y, const(ty, 2.0 ** (low + digits))).result, y))
        n = select(up, arith.SubIOp(n, const(i32, high)).result,
                   select(down, arith.AddIOp(n, const(i32, -low - digits)).result, n))
    n = arith.MaxSIOp(arith.MinSIOp(n, const(i32, high)).result, const(i32, low)).result
    bits_ty = types.int32 if ty.bitwidth == 32 else types.int64
    biased = cast(arith.AddIOp(n, const(i32, high)).result, i32, bits_ty)
    power = arith.BitcastOp(scalar_type(ty),
                            arith.ShLIOp(biased, const(bits_ty, shift)).result).result
    return arith.MulFOp(y, power).result


@call_rules.register(np.ldexp, pymath.ldexp)
def ldexp(lw, args, sig, expr):
    """The exponent is converted to a C int first (int64 truncated), as in Numba."""
    (x,) = float_operands(args[:1], sig, expr)
    n = cast(args[1], sig.args[1], types.int32)
    return _scalbn(x, n, types.unliteral(sig.return_type))


def _scaled_by(factor: float):
    """x * factor with the factor rounded to x's type, as Numba's
    radians/degrees (a multiplication, not a division by pi)."""
    def rule(lw, args, sig, expr):
        (x,) = float_operands(args, sig, expr)
        return arith.MulFOp(x, const(types.unliteral(sig.return_type), factor)).result
    return rule


call_rules.register(np.deg2rad, np.radians, pymath.radians)(_scaled_by(pymath.pi / 180))
call_rules.register(np.rad2deg, np.degrees, pymath.degrees)(_scaled_by(180 / pymath.pi))


def _numpy_float_quotient(a, b, ty):
    """Numba's np_real_floor_div_impl: floor(a / b), not Python's float
    floor division (1.0 // 0.1 is 9.0 in Python, 10.0 here)."""
    return math.FloorOp(arith.DivFOp(a, b).result).result


def _numpy_float_remainder(a, b, ty):
    """Numba's np_real_mod_impl: fmod, moved to the divisor's sign."""
    zero = const(ty, 0.0)
    rem = arith.RemFOp(a, b).result
    fix = arith.AndIOp(cmpf("ONE", rem, zero),
                       arith.XOrIOp(cmpf("OLT", b, zero), cmpf("OLT", rem, zero)).result).result
    return arith.AddFOp(rem, select(fix, b, zero)).result


def _numpy_division(operator_fn, float_op):
    """The ufunc's loops: integers as the operator's rule (rules/scalars.py:
    0 for a zero divisor and for MIN // -1), floats as Numba's ufunc kernel."""
    def rule(lw, args, sig, expr):
        (a, b), ty = _as_result(args, sig)
        if isinstance(ty, types.Float):
            return float_op(a, b, ty)
        return binop_rules.get(operator_fn)(lw, [a, b], signature(ty, ty, ty), expr)
    return rule


floor_divide = _numpy_division(operator.floordiv, _numpy_float_quotient)
remainder = _numpy_division(operator.mod, _numpy_float_remainder)
call_rules.register(np.floor_divide)(floor_divide)
call_rules.register(np.remainder)(remainder)


@call_rules.register(np.divmod)
def divmod_(lw, args, sig, expr):
    """Numba's np.divmod: np.floor_divide and np.remainder, as a tuple."""
    element = signature(sig.return_type.types[0], *sig.args)
    return TupleValue([floor_divide(lw, args, element, expr), remainder(lw, args, element, expr)],
                      sig.return_type)


@call_rules.register(np.fmod)
def fmod(lw, args, sig, expr):
    """Floats: C's fmod. Integers: the remainder truncated toward zero, 0 for
    a zero divisor, as NumPy (and INT_MIN by -1 is 0, not a trap). Numba's
    np_int_fmod_impl takes the unsigned remainder for signed types too, so
    its result for a negative operand is not NumPy's (supported.md)."""
    (a, b), ty = _as_result(args, sig)
    if isinstance(ty, types.Float):
        return arith.RemFOp(a, b).result
    if not isinstance(ty, types.Integer):
        raise UnsupportedConstructError(f"np.fmod returning {ty}", expr.loc)
    zero = const(ty, 0)
    undefined = cmpi("eq", b, zero)
    if ty.signed:
        undefined = arith.OrIOp(undefined, cmpi("eq", b, const(ty, -1))).result
    divisor = select(undefined, const(ty, 1), b)
    rem = (arith.RemSIOp if ty.signed else arith.RemUIOp)(a, divisor).result
    return select(undefined, zero, rem)


def _logaddexp(shift: float, log1p_scale: float, exp_key):
    """NumPy's npy_logaddexp / npy_logaddexp2 as Numba's _generate_logaddexp:
    x + shift for equal arguments (infinities of one sign), else the larger
    plus log1p of the exponential of the (negated) difference; NaN stays."""
    def rule(lw, args, sig, expr):
        (x, y), ty = _as_result(args, sig)
        if not isinstance(ty, types.Float):
            raise UnsupportedConstructError(f"np.logaddexp returning {ty}", expr.loc)
        unary = signature(ty, ty)
        exp, log1p = call_rules.get(exp_key), call_rules.get(np.log1p)

        def log_1p(v):
            value = log1p(lw, [v], unary, expr)
            return value if log1p_scale == 1.0 else \
                arith.MulFOp(const(ty, log1p_scale), value).result
        tmp = arith.SubFOp(x, y).result
        neg_tmp = arith.SubFOp(const(ty, -0.0), tmp).result
        above = arith.AddFOp(x, log_1p(exp(lw, [neg_tmp], unary, expr))).result
        below = arith.AddFOp(y, log_1p(exp(lw, [tmp], unary, expr))).result
        result = select(cmpf("OGT", tmp, const(ty, 0.0)), above,
                        select(cmpf("OLE", tmp, const(ty, 0.0)), below, tmp))
        return select(cmpf("OEQ", x, y), arith.AddFOp(x, const(ty, shift)).result, result)
    return rule


call_rules.register(np.logaddexp)(_logaddexp(pymath.log(2.0), 1.0, np.exp))
call_rules.register(np.logaddexp2)(_logaddexp(1.0, 1.0 / pymath.log(2.0), np.exp2))


@call_rules.register(np.float_power)
def float_power(lw, args, sig, expr):
    """x ** y in the loop's float (or complex) type: Numba's real_power_impl
    and complex_power_impl, which `**` uses too."""
    (x, y), ty = _as_result(args, sig)
    return binop_rules.get(operator.pow)(lw, [x, y], signature(ty, ty, ty), expr)


def _bits(x: ir.Value) -> tuple[ir.Value, ir.Type]:
    bits = ir.IntegerType.get_signless(ir.FloatType(x.type).width)
    return arith.BitcastOp(bits, x).result, bits


@call_rules.register(np.signbit)
def signbit(lw, args, sig, expr):
    ty = types.unliteral(sig.args[0])
    if not isinstance(ty, types.Float):
        # integers go through the float loop NumPy picks ('d->?' for int64)
        ty = types.float64
    x, bits = _bits(cast(args[0], sig.args[0], ty))
    return cmpi("slt", x, arith.ConstantOp(bits, 0).result)


def _nextafter(x: ir.Value, y: ir.Value, ty: types.Float) -> ir.Value:
    """C's nextafter (Numba calls the C library's): the float after x in
    the direction of y; y if equal, NaN if either is, the smallest
    subnormal with y's sign from a zero."""
    xb, bits = _bits(x)
    one = arith.ConstantOp(bits, 1).result
    tiny = arith.BitcastOp(x.type, one).result
    from_zero = math.CopySignOp(tiny, y).result
    # away from zero when x and y lie on the same side of x's sign
    away = arith.XOrIOp(cmpf("OLT", x, y), cmpf("OLT", x, const(ty, 0.0))).result
    step = select(away, arith.AddIOp(xb, one).result, arith.SubIOp(xb, one).result)
    result = select(cmpf("OEQ", x, const(ty, 0.0)), from_zero,
                    arith.BitcastOp(x.type, step).result)
    result = select(cmpf("OEQ", x, y), y, result)
    return select(cmpf("UNO", x, y), arith.AddFOp(x, y).result, result)


@call_rules.register(np.nextafter)
def nextafter(lw, args, sig, expr):
    (x, y), ty = _as_result(args, sig)
    if not isinstance(ty, types.Float):
        raise UnsupportedConstructError(f"np.nextafter returning {ty}", expr.loc)
    return _nextafter(x, y, ty)


@call_rules.register(np.spacing)
def spacing(lw, args, sig, expr):
    """Numba's np_real_spacing_impl: nextafter(x, copysign(inf, x)) - x."""
    (x,), ty = _as_result(args, sig)
    if not isinstance(ty, types.Float):
        raise UnsupportedConstructError(f"np.spacing returning {ty}", expr.loc)
    toward = math.CopySignOp(const(ty, float("inf")), x).result
    return arith.SubFOp(_nextafter(x, toward, ty), x).result
