"""Complex numbers (complex64, complex128) with Numba's semantics.

A complex value is one `complex<f32>`/`complex<f64>` SSA value
(lowering/complexes.py). Operations whose meaning MLIR's `complex` dialect
shares with Numba use it (add, sub, neg, conj, eq, ne); the others are
written on the two parts as Numba computes them: multiplication without
C99's infinity recovery, division by CPython's algorithm (`/`) or NumPy's
(`np.divide`), `abs` as `math.hypot`, `**` as CPython's `_Py_c_pow`.
Functions that Numba implements in Python (the `cmath` module, most of
them also NumPy's complex ufunc loops) are lowered from that Python source
as callees, so their special cases (infinities, NaNs, signed zeros) are
Numba's.

Rules for operators and for functions that have a rule for real numbers
already (`+`, `abs`, `np.exp`, ...) are registered over the existing rule:
the new rule handles signatures with a complex type and hands the others
to the rule it replaced, so this module is imported after the others.
"""
from __future__ import annotations

import cmath
import functools
import inspect
import math as pymath
import operator
import os

import numba
import numpy as np
from numba.core import types
from numba.core.typing import signature
from numba.cpython import cmathimpl

from .._mlir import arith, complex_dialect, func, ir, math
from ..lowering import complexes
from ..lowering.build import cmpf, cmpi, const, select
from ..lowering.casts import cast, truth
from ..lowering.errors import UnsupportedConstructError
from ..lowering.exceptions import STATUS, status_type
from ..lowering.registry import attr_rules, binop_rules, call_rules, method_rules, unary_rules


def _unliteral(ty):
    return types.unliteral(ty)


def _has_complex(sig) -> bool:
    return any(isinstance(_unliteral(t), types.Complex)
               for t in list(sig.args) + [sig.return_type])


def _over(registry, *keys):
    """Register the decorated rule for signatures with a complex type,
    keeping each key's previous rule for the others."""
    def decorate(rule):
        for key in keys:
            previous = registry.get(key)

            def dispatch(lw, args, sig, expr, _previous=previous, _key=key):
                if _has_complex(sig):
                    return rule(lw, args, sig, expr)
                if _previous is None:
                    raise UnsupportedConstructError(
                        f"{getattr(_key, '__name__', _key)} on {list(sig.args)}", expr.loc)
                return _previous(lw, args, sig, expr)
            registry.register(key)(dispatch)
        return rule
    return decorate


def _complex_type(sig, expr) -> types.Complex:
    """The complex type the operation computes in: the result's, or for a
    comparison the wider of the operands'."""
    candidates = [_unliteral(sig.return_type)] + [_unliteral(t) for t in sig.args]
    found = [t for t in candidates if isinstance(t, types.Complex)]
    if not found:
        raise UnsupportedConstructError(f"this operation on {list(sig.args)}", expr.loc)
    if isinstance(candidates[0], types.Complex):
        return candidates[0]
    return max(found, key=lambda t: t.bitwidth)


def _operands(args, sig, expr):
    """The operands as values of the complex type of the operation."""
    ty = _complex_type(sig, expr)
    for t in sig.args:
        if not isinstance(_unliteral(t), (types.Complex, types.Float, types.Integer,
                                          types.Boolean)):
            raise UnsupportedConstructError(f"this operation on {t}", expr.loc)
    return [cast(a, t, ty) for a, t in zip(args, sig.args)], ty


# -- arithmetic ------------------------------------------------------------------

@_over(binop_rules, operator.add)
def add(lw, args, sig, expr):
    (a, b), _ = _operands(args, sig, expr)
    return complex_dialect.AddOp(a, b).result


@_over(binop_rules, operator.sub)
def sub(lw, args, sig, expr):
    (a, b), _ = _operands(args, sig, expr)
    return complex_dialect.SubOp(a, b).result


@_over(binop_rules, operator.mul)
def mul(lw, args, sig, expr):
    (a, b), ty = _operands(args, sig, expr)
    return complexes.mul(a, b, ty)


@_over(binop_rules, operator.truediv)
def truediv(lw, args, sig, expr):
    """Python's `/` (Numba's complex_div_impl, CPython's _Py_c_quot): a zero
    divisor raises ZeroDivisionError, in parallel loops too (Numba's
    implementation raises whatever the error model). NumPy's np.divide
    (a call, not an operator) is Smith's algorithm of NumPy's loops."""
    (a, b), ty = _operands(args, sig, expr)
    if getattr(expr, "op", None) not in ("binop", "inplace_binop"):
        return numpy_divide(a, b, ty)
    return python_divide(lw, a, b, ty, raises=not _numba_library_code(lw, expr))


_NUMBA_DIR = os.path.dirname(numba.__file__) + os.sep


def _numba_library_code(lw, expr) -> bool:
    """Code of Numba's own, lowered as a callee or inlined by its parfor pass
    (np.mean's `sum / size`): its empty-array cases divide by zero and expect
    nan+nanj, as Numba's own np.mean returns (the same test as
    rules/scalars.py makes for real division)."""
    filename = getattr(getattr(expr, "loc", None), "filename", None) or ""
    return lw.func_ir.func_id.modname.startswith("numba.") or \
        os.path.abspath(filename).startswith(_NUMBA_DIR)


def python_divide(lw, a: ir.Value, b: ir.Value, ty: types.Complex,
                  raises: bool = True) -> ir.Value:
    """a / b as CPython's _Py_c_quot, as Numba's complex_div_impl computes it on
    Python before 3.14 (on 3.14 Numba also recovers infinities from a NaN
    quotient, as CPython 3.14 does; not done here)."""
    fty = complexes.part_type(ty)
    (ar, ai), (br, bi) = complexes.parts(a), complexes.parts(b)
    abs_br, abs_bi = math.AbsFOp(br).result, math.AbsFOp(bi).result
    by_real = cmpf("OGE", abs_br, abs_bi)
    by_imag = cmpf("OGE", abs_bi, abs_br)
    if raises:
        zero = arith.AndIOp(by_real, cmpf("OEQ", abs_br, const(fty, 0.0))).result
        lw.errors.raise_if(lw, zero, lw.errors.code(ZeroDivisionError,
                                                    ("complex division by zero",)))
    # divide tops and bottom by b.real
    ratio = arith.DivFOp(bi, br).result
    denom = arith.AddFOp(br, arith.MulFOp(bi, ratio).result).result
    real1 = arith.DivFOp(arith.AddFOp(ar, arith.MulFOp(ai, ratio).result).result, denom).result
    imag1 = arith.DivFOp(arith.SubFOp(ai, arith.MulFOp(ar, ratio).result).result, denom).result
    # divide tops and bottom by b.imag
    ratio = arith.DivFOp(br, bi).result
    denom = arith.AddFOp(arith.MulFOp(br, ratio).result, bi).result
    real2 = arith.DivFOp(arith.AddFOp(arith.MulFOp(ar, ratio).result, ai).result, denom).result
    imag2 = arith.DivFOp(arith.SubFOp(arith.MulFOp(ai, ratio).result, ar).result, denom).result
    nan = const(fty, float("nan"))      # b.real or b.imag is a NaN
    real = select(by_real, real1, select(by_imag, real2, nan))
    imag = select(by_real, imag1, select(by_imag, imag2, nan))
    return complexes.make(real, imag, ty)


def numpy_divide(a: ir.Value, b: ir.Value, ty: types.Complex) -> ir.Value:
    """NumPy's complex division (Numba's np_complex_div_impl; Smith's
    algorithm): a zero divisor gives a.real / 0 and a.imag / 0 (inf or nan)."""
    fty = complexes.part_type(ty)
    one, zero = const(fty, 1.0), const(fty, 0.0)
    (ar, ai), (br, bi) = complexes.parts(a), complexes.parts(b)
    abs_br, abs_bi = math.AbsFOp(br).result, math.AbsFOp(bi).result
    by_real = cmpf("OGE", abs_br, abs_bi)
    both_zero = arith.AndIOp(cmpf("OEQ", abs_br, zero), cmpf("OEQ", abs_bi, zero)).result
    rat = arith.DivFOp(bi, br).result
    scl = arith.DivFOp(one, arith.AddFOp(br, arith.MulFOp(bi, rat).result).result).result
    real1 = arith.MulFOp(arith.AddFOp(ar, arith.MulFOp(ai, rat).result).result, scl).result
    imag1 = arith.MulFOp(arith.SubFOp(ai, arith.MulFOp(ar, rat).result).result, scl).result
    # NumPy's loop divides by |b.real| and |b.imag| here; Numba's compiled
    # np_complex_div_impl gives the signs of the divisor's zeros (LLVM drops
    # the fabs once it knows the operand is zero): np.divide(1+1j, -0-0j) is
    # -inf-infj. Numba is the reference, so the signed parts.
    real0, imag0 = arith.DivFOp(ar, br).result, arith.DivFOp(ai, bi).result
    real1, imag1 = select(both_zero, real0, real1), select(both_zero, imag0, imag1)
    rat = arith.DivFOp(br, bi).result
    scl = arith.DivFOp(one, arith.AddFOp(bi, arith.MulFOp(br, rat).result).result).result
    real2 = arith.MulFOp(arith.AddFOp(arith.MulFOp(ar, rat).result, ai).result, scl).result
    imag2 = arith.MulFOp(arith.SubFOp(arith.MulFOp(ai, rat).result, ar).result, scl).result
    return complexes.make(select(by_real, real1, real2), select(by_real, imag1, imag2), ty)


@_over(binop_rules, operator.eq)
def equal(lw, args, sig, expr):
    (a, b), _ = _operands(args, sig, expr)
    return complex_dialect.EqualOp(a, b).result


@_over(binop_rules, operator.ne)
def not_equal(lw, args, sig, expr):
    (a, b), _ = _operands(args, sig, expr)
    return complex_dialect.NotEqualOp(a, b).result


def _refuse_order(fn):
    def rule(lw, args, sig, expr):
        raise UnsupportedConstructError(f"ordering comparison ({fn.__name__}) of complex numbers",
                                        expr.loc)
    return rule


for _fn in (operator.floordiv, operator.mod):
    _over(binop_rules, _fn)(_refuse_order(_fn))


def _ordered(a: ir.Value, b: ir.Value, strict: str, pred: str) -> ir.Value:
    """NumPy's lexicographic order of complex numbers (its CLT/CLE/CGT/CGE
    macros, Numba's np_complex_lt_impl...): by the real parts when the
    imaginary ones are not NaN, by the imaginary parts on equal real ones."""
    (ar, ai), (br, bi) = complexes.parts(a), complexes.parts(b)
    by_real = arith.AndIOp(cmpf(strict, ar, br), cmpf("ORD", ai, bi)).result
    by_imag = arith.AndIOp(cmpf("OEQ", ar, br), cmpf(pred, ai, bi)).result
    return arith.OrIOp(by_real, by_imag).result


def _order(strict: str, pred: str):
    """`<`, `<=`, `>`, `>=` of complex values: they reach the lowering only
    from NumPy (np.less and array expressions; Python refuses to order
    complex scalars, and so does Numba's typing)."""
    def rule(lw, args, sig, expr):
        (a, b), _ = _operands(args, sig, expr)
        return _ordered(a, b, strict, pred)
    return rule


for _fn, _strict, _pred in ((operator.lt, "OLT", "OLT"), (operator.le, "OLT", "OLE"),
                            (operator.gt, "OGT", "OGT"), (operator.ge, "OGT", "OGE")):
    _over(binop_rules, _fn)(_order(_strict, _pred))


def _complex_is_nan(z: ir.Value) -> ir.Value:
    real, imag = complexes.parts(z)
    return arith.OrIOp(cmpf("UNO", real, real), cmpf("UNO", imag, imag)).result


def _extremum(strict: str, pred: str, nan_of_first: bool):
    """np.maximum/minimum (a NaN wins: the first's if both) and np.fmax/fmin
    (a NaN loses) of complex values, as Numba's np_complex_maximum_impl...:
    otherwise the first unless the second is ordered after (before) it."""
    def rule(lw, args, sig, expr):
        (a, b), _ = _operands(args, sig, expr)
        a_nan, b_nan = _complex_is_nan(a), _complex_is_nan(b)
        nan_result = select(a_nan, a, b) if nan_of_first else select(b_nan, a, b)
        value = select(_ordered(a, b, strict, pred), a, b)
        return select(arith.OrIOp(a_nan, b_nan).result, nan_result, value)
    return rule


_over(call_rules, np.maximum)(_extremum("OGT", "OGE", nan_of_first=True))
_over(call_rules, np.minimum)(_extremum("OLT", "OLE", nan_of_first=True))
_over(call_rules, np.fmax)(_extremum("OGT", "OGE", nan_of_first=False))
_over(call_rules, np.fmin)(_extremum("OLT", "OLE", nan_of_first=False))


@_over(call_rules, np.reciprocal)
def reciprocal(lw, args, sig, expr):
    """1 / z by Smith's method with a numerator of 1, as NumPy's loops.c.src
    and Numba's np_complex_reciprocal_impl (both branches computed, one
    selected: the same operations on the chosen path)."""
    (z,), ty = _operands(args, sig, expr)
    fty = complexes.part_type(ty)
    real, imag = complexes.parts(z)
    zero, one = const(fty, 0.0), const(fty, 1.0)
    by_real = cmpf("OLE", math.AbsFOp(imag).result, math.AbsFOp(real).result)
    r1 = arith.DivFOp(imag, real).result
    d1 = arith.AddFOp(real, arith.MulFOp(imag, r1).result).result
    inv1 = arith.DivFOp(one, d1).result
    imag1 = arith.MulFOp(arith.SubFOp(zero, r1).result, inv1).result
    r2 = arith.DivFOp(real, imag).result
    d2 = arith.AddFOp(arith.MulFOp(real, r2).result, imag).result
    inv2 = arith.DivFOp(one, d2).result
    real2 = arith.MulFOp(r2, inv2).result
    imag2 = arith.SubFOp(zero, inv2).result
    return complexes.make(select(by_real, inv1, real2), select(by_real, imag1, imag2), ty)


@_over(unary_rules, operator.neg)
def neg(lw, args, sig, expr):
    (z,), _ = _operands(args, sig, expr)
    return complex_dialect.NegOp(z).result


@_over(unary_rules, operator.pos)
def pos(lw, args, sig, expr):
    return _operands(args, sig, expr)[0][0]


@_over(unary_rules, operator.not_)
def not_(lw, args, sig, expr):
    return arith.XOrIOp(truth(args[0], sig.args[0]), const(types.boolean, 1)).result


# -- power -----------------------------------------------------------------------

def _c_pow(ar, ai, br, bi):
    """CPython 3.11's _Py_c_pow in float64, as Numba's numba_cpow (and
    numba_cpowf, through doubles) runs it; its EDOM case (0 to a negative
    or complex power) gives nan+nanj."""
    if br == 0.0 and bi == 0.0:
        return complex(1.0, 0.0)
    if ar == 0.0 and ai == 0.0:
        if bi != 0.0 or br < 0.0:
            return complex(pymath.nan, pymath.nan)
        return complex(0.0, 0.0)
    vabs = pymath.hypot(ar, ai)
    length = pymath.pow(vabs, br)
    at = pymath.atan2(ai, ar)
    phase = at * br
    if bi != 0.0:
        length /= pymath.exp(at * bi)
        phase += bi * pymath.log(vabs)
    return complex(length * pymath.cos(phase), length * pymath.sin(phase))


@_over(binop_rules, operator.pow)
def power(lw, args, sig, expr):
    """Numba's complex_power_impl: z * z for an exponent of exactly 2 (cpow
    loses precision there), else _Py_c_pow in float64."""
    (a, b), ty = _operands(args, sig, expr)
    (ar, ai), (br, bi) = complexes.parts(a), complexes.parts(b)
    fty = complexes.part_type(ty)
    wide = [cast(p, fty, types.float64) for p in (ar, ai, br, bi)]
    general = cast(*call_python(lw, _c_pow, (types.float64,) * 4, wide, expr), ty)
    squared = complexes.mul(a, a, ty)
    is_two = arith.AndIOp(cmpf("OEQ", br, const(fty, 2.0)), cmpf("OEQ", bi, const(fty, 0.0))).result
    return select(is_two, squared, general)


# np.power's complex loop is the same implementation (npyfuncs.np_complex_power_impl)
_over(call_rules, np.power)(power)


# -- abs, parts, conjugate, construction --------------------------------------------

def _hypot(lw, real, imag, fty, expr):
    """math.hypot's rule (rules/mathlib.py), as Numba's complex_abs_impl."""
    return call_rules.get(pymath.hypot)(lw, [real, imag], signature(fty, fty, fty), expr)


@_over(call_rules, abs, np.abs, np.absolute)
def absolute(lw, args, sig, expr):
    ty = _unliteral(sig.args[0])
    real, imag = complexes.parts(args[0])
    result = _hypot(lw, real, imag, complexes.part_type(ty), expr)
    return cast(result, complexes.part_type(ty), sig.return_type)


@attr_rules.register((types.Complex, "real"))
def real_part(lw, value, ty, expr):
    return complexes.parts(value)[0]


@attr_rules.register((types.Complex, "imag"))
def imaginary_part(lw, value, ty, expr):
    return complexes.parts(value)[1]


@method_rules.register((types.Complex, "conjugate"))
def conjugate_method(lw, args, sig, expr):
    return complex_dialect.ConjOp(args[0]).result


@_over(call_rules, np.conjugate, np.conj)
def conjugate(lw, args, sig, expr):
    (z,), _ = _operands(args, sig, expr)
    return complex_dialect.ConjOp(z).result


@call_rules.register(complex)
def complex_(lw, args, sig, expr):
    """complex(x), complex(x, y) of real numbers, or complex(z)."""
    ty = _unliteral(sig.return_type)
    fty = complexes.part_type(ty)
    argtys = [_unliteral(t) for t in sig.args]
    if expr.kws or len(args) > 2 or (len(args) == 2 and any(
            isinstance(t, types.Complex) for t in argtys)):
        raise UnsupportedConstructError("complex() with these arguments", expr.loc)
    if len(args) == 1 and isinstance(argtys[0], types.Complex):
        return cast(args[0], argtys[0], ty)
    parts = [cast(a, t, fty) for a, t in zip(args, argtys)]
    parts += [const(fty, 0.0)] * (2 - len(parts))
    return complexes.make(parts[0], parts[1], ty)


# -- cmath, and NumPy's complex loops that share its implementation ------------------

def call_python(lw, py_func, argtypes: tuple, args: list, expr) -> tuple:
    """`py_func`, a Python function of scalars, lowered through our pipeline
    as a callee (module.py) and called; its status is checked like a raise.
    Returns (result, its Numba type)."""
    callee = lw.mlower.callee(py_func, argtypes, lw.parallel_depth > 0, expr.loc)
    call = func.CallOp([status_type()] + callee.result_types, callee.name, list(args))
    lw.errors.raise_if(lw, cmpi("ne", call.results[0], const(STATUS, 0)), call.results[0])
    return call.results[1], callee.restype


def _wrapped_python(lowering) -> callable:
    """The Python function Numba's intrinsic_complex_unary wraps (cmath.exp,
    cmath.log): (x, y, x_is_finite, y_is_finite) -> complex."""
    for cell in lowering.__closure__ or ():
        if inspect.isfunction(cell.cell_contents):
            return cell.cell_contents
    raise RuntimeError(f"Numba's {lowering.__qualname__} has no Python implementation")


def _is_finite(x, fty):
    return cmpf("OLT", math.AbsFOp(x).result, const(fty, float("inf")))


def _by_parts(inner):
    """cmath.exp / cmath.log: Numba's function of (x, y, x_is_finite,
    y_is_finite), as its intrinsic_complex_unary calls it."""
    def rule(lw, args, sig, expr):
        ty = _unliteral(sig.args[0])
        fty = complexes.part_type(ty)
        real, imag = complexes.parts(args[0])
        value, restype = call_python(
            lw, inner, (fty, fty, types.boolean, types.boolean),
            [real, imag, _is_finite(real, fty), _is_finite(imag, fty)], expr)
        return cast(value, restype, sig.return_type)
    return rule


def _of_complex(py_func):
    """A cmath function Numba lowers from Python source (compile_internal)
    with the same source here, called with the argument as it is."""
    def rule(lw, args, sig, expr):
        ty = _unliteral(sig.args[0])
        value, restype = call_python(lw, py_func, (ty,), [args[0]], expr)
        return cast(value, restype, sig.return_type)
    return rule


# Numba's cmathimpl.cos_impl/sin_impl/tan_impl (defined inside its lowering
# functions, so not importable): through cmath.cosh/sinh/tanh of z*j, which
# are Numba @overloads written in Python (lowered by calls.py as any).

def _cos(z):
    return cmath.cosh(complex(-z.imag, z.real))


def _sin(z):
    r = cmath.sinh(complex(-z.imag, z.real))
    return complex(r.imag, -r.real)


def _tan(z):
    r = cmath.tanh(complex(-z.imag, z.real))
    return complex(r.imag, -r.real)


@functools.lru_cache(maxsize=None)
def _sqrt(bitwidth: int):
    """Numba's cmathimpl.sqrt_impl (NumPy's npy_csqrt), its overflow
    threshold that of the argument's float type."""
    thres = (1.7976931348623157e308 if bitwidth == 64 else 3.4028234663852886e38) / \
        (1.0 + 1.414213562373095048801688724209698079)

    def sqrt(z):
        a = z.real
        b = z.imag
        if a == 0.0 and b == 0.0:
            return complex(abs(b), b)
        if pymath.isinf(b):
            return complex(abs(b), b)
        if pymath.isnan(a):
            return complex(a, a)
        if pymath.isinf(a):
            if a < 0.0:
                return complex(abs(b - b), pymath.copysign(a, b))
            else:
                return complex(a, pymath.copysign(b - b, b))
        if abs(a) >= thres or abs(b) >= thres:
            a *= 0.25
            b *= 0.25
            scale = True
        else:
            scale = False
        if a >= 0:
            t = pymath.sqrt((a + pymath.hypot(a, b)) * 0.5)
            real = t
            imag = b / (2 * t)
        else:
            t = pymath.sqrt((-a + pymath.hypot(a, b)) * 0.5)
            real = abs(b) / (2 * t)
            imag = pymath.copysign(t, b)
        if scale:
            return complex(real * 2, imag)
        return complex(real, imag)
    return sqrt


def _sqrt_rule(lw, args, sig, expr):
    ty = _unliteral(sig.args[0])
    return _of_complex(_sqrt(ty.bitwidth // 2))(lw, args, sig, expr)


def _complex_only(rule):
    """A cmath function on a real argument: Numba converts it to complex128."""
    def checked(lw, args, sig, expr):
        ty = _unliteral(sig.args[0])
        if not isinstance(ty, types.Complex):
            args = [cast(args[0], ty, types.complex128)]
            sig = signature(sig.return_type, types.complex128)
        return rule(lw, args, sig, expr)
    return checked


# Numba's parfor bodies may call the math module's function on elements of
# a complex array expression (np.sqrt becomes math.sqrt): the same rule.
for _py, _np, _rule in ((cmath.exp, np.exp, _by_parts(_wrapped_python(cmathimpl.exp_impl))),
                        (cmath.sqrt, np.sqrt, _sqrt_rule),
                        (cmath.cos, np.cos, _of_complex(_cos)),
                        (cmath.sin, np.sin, _of_complex(_sin)),
                        (cmath.tan, np.tan, _of_complex(_tan))):
    call_rules.register(_py)(_complex_only(_rule))
    _over(call_rules, _np, getattr(pymath, _py.__name__))(_rule)

_LOG = _by_parts(_wrapped_python(cmathimpl.log_impl))
_over(call_rules, np.log, pymath.log)(_LOG)


def _scaled_log(factor: float):
    """np.log10 / np.log2 of complex: log(z) with both parts times
    log10(e) or log2(e), as Numba's np_complex_log10_impl/log2_impl."""
    def rule(lw, args, sig, expr):
        ty = _unliteral(sig.return_type)
        fty = complexes.part_type(ty)
        real, imag = complexes.parts(_LOG(lw, [cast(args[0], sig.args[0], ty)],
                                          signature(ty, ty), expr))
        scale = const(fty, factor)
        return complexes.make(arith.MulFOp(scale, real).result,
                              arith.MulFOp(scale, imag).result, ty)
    return rule


_over(call_rules, np.log10)(_scaled_log(0.434294481903251827651128918916605082))
_over(call_rules, np.log2)(_scaled_log(1.442695040888963407359924681001892137))


@_over(call_rules, np.square)
def square(lw, args, sig, expr):
    (z,), ty = _operands(args, sig, expr)
    return complexes.mul(z, z, ty)


def _refused(name: str):
    def rule(lw, args, sig, expr):
        raise UnsupportedConstructError(
            f"{name} of complex numbers ({', '.join(str(_unliteral(t)) for t in sig.args)})",
            expr.loc)
    return rule


# NumPy ufuncs whose complex loops Numba writes in formulas of its own (not
# lowered here yet), and the math functions its parfor bodies may call for
# them: refused by name instead of reaching the real-only rules.
for _name in ("exp2", "expm1", "log1p", "sign", "rint", "floor", "ceil", "trunc", "fabs",
              "cbrt"):
    _over(call_rules, getattr(np, _name))(_refused(f"np.{_name}"))
for _name in ("expm1", "log1p", "log10", "log2", "exp2"):
    if hasattr(pymath, _name):
        _over(call_rules, getattr(pymath, _name))(_refused(f"math.{_name}"))


# -- hyperbolic and inverse trigonometric functions ----------------------------------
#
# np.sinh/cosh/tanh/arccosh of complex: NumPy's formulas (funcs.inc.src), as
# Numba's np_complex_*_impl translate them. np.arcsin/arccos/arctan/arcsinh/
# arctanh and cmath.asin/acos/atan/asinh/atanh: CPython's algorithms, as
# Numba's cmathimpl writes them in Python inside its lowering functions (so
# not importable: the same source is repeated here and lowered as a callee).

_FLT_MAX = float(np.finfo(np.float32).max)     # Numba's mathimpl.FLT_MAX
_FLT_MIN = float(np.finfo(np.float32).tiny)
_LN_4 = pymath.log(4)
_THRES = _FLT_MAX / 4
_THRES_LARGE = pymath.sqrt(_FLT_MAX / 4)
_THRES_SMALL = pymath.sqrt(_FLT_MIN)
_PI_12 = pymath.pi / 2


def _acos(z):
    if abs(z.real) > _THRES or abs(z.imag) > _THRES:
        real = pymath.atan2(abs(z.imag), z.real)
        imag = pymath.copysign(
            pymath.log(pymath.hypot(z.real * 0.5, z.imag * 0.5)) + _LN_4, -z.imag)
        return complex(real, imag)
    s1 = cmath.sqrt(complex(1. - z.real, -z.imag))
    s2 = cmath.sqrt(complex(1. + z.real, z.imag))
    real = 2. * pymath.atan2(s1.real, s2.real)
    imag = pymath.asinh(s2.real * s1.imag - s2.imag * s1.real)
    return complex(real, imag)


def _asinh(z):
    if abs(z.real) > _THRES or abs(z.imag) > _THRES:
        real = pymath.copysign(
            pymath.log(pymath.hypot(z.real * 0.5, z.imag * 0.5)) + _LN_4, z.real)
        imag = pymath.atan2(z.imag, abs(z.real))
        return complex(real, imag)
    s1 = cmath.sqrt(complex(1. + z.imag, -z.real))
    s2 = cmath.sqrt(complex(1. - z.imag, z.real))
    real = pymath.asinh(s1.real * s2.imag - s2.real * s1.imag)
    imag = pymath.atan2(z.imag, s1.real * s2.real - s1.imag * s2.imag)
    return complex(real, imag)


def _asin(z):
    r = cmath.asinh(complex(-z.imag, z.real))
    return complex(r.imag, -r.real)


def _atanh(z):
    if z.real < 0.:
        negate = True
        z = -z
    else:
        negate = False
    ay = abs(z.imag)
    if pymath.isnan(z.real) or z.real > _THRES_LARGE or ay > _THRES_LARGE:
        if pymath.isinf(z.imag):
            real = pymath.copysign(0., z.real)
        elif pymath.isinf(z.real):
            real = 0.
        else:
            h = pymath.hypot(z.real * 0.5, z.imag * 0.5)
            real = z.real / 4. / h / h
        imag = -pymath.copysign(_PI_12, -z.imag)
    elif z.real == 1. and ay < _THRES_SMALL:
        if ay == 0.:
            real = pymath.inf
            imag = z.imag
        else:
            real = -pymath.log(pymath.sqrt(ay) / pymath.sqrt(pymath.hypot(ay, 2.)))
            imag = pymath.copysign(pymath.atan2(2., -ay) / 2, z.imag)
    else:
        sqay = ay * ay
        zr1 = 1 - z.real
        real = pymath.log1p(4. * z.real / (zr1 * zr1 + sqay)) * 0.25
        imag = -pymath.atan2(-2. * z.imag, zr1 * (1 + z.real) - sqay) * 0.5
    if pymath.isnan(z.imag):
        imag = pymath.nan
    if negate:
        return complex(-real, -imag)
    return complex(real, imag)


def _atan(z):
    r = cmath.atanh(complex(-z.imag, z.real))
    if pymath.isinf(z.real) and pymath.isnan(z.imag):
        return complex(r.imag, r.real)       # Numba's "odd but necessary" case
    return complex(r.imag, -r.real)


for _cm, _np, _py in ((cmath.acos, np.arccos, _acos), (cmath.asinh, np.arcsinh, _asinh),
                      (cmath.asin, np.arcsin, _asin), (cmath.atanh, np.arctanh, _atanh),
                      (cmath.atan, np.arctan, _atan)):
    call_rules.register(_cm)(_complex_only(_of_complex(_py)))
    _over(call_rules, _np, getattr(pymath, _cm.__name__))(_of_complex(_py))


def _real_unary(lw, key, x, fty, expr):
    return call_rules.get(key)(lw, [x], signature(fty, fty), expr)


def _hyperbolic_parts(lw, z, ty, expr):
    """sin, cos of the imaginary part and sinh, cosh of the real one."""
    fty = complexes.part_type(ty)
    xr, xi = complexes.parts(z)
    return [_real_unary(lw, key, x, fty, expr) for key, x in
            ((np.sin, xi), (np.cos, xi), (np.sinh, xr), (np.cosh, xr))]


@_over(call_rules, np.sinh, pymath.sinh)
def sinh(lw, args, sig, expr):
    (z,), ty = _operands(args, sig, expr)
    sxi, cxi, shxr, chxr = _hyperbolic_parts(lw, z, ty, expr)
    return complexes.make(arith.MulFOp(cxi, shxr).result, arith.MulFOp(sxi, chxr).result, ty)


@_over(call_rules, np.cosh, pymath.cosh)
def cosh(lw, args, sig, expr):
    (z,), ty = _operands(args, sig, expr)
    sxi, cxi, shxr, chxr = _hyperbolic_parts(lw, z, ty, expr)
    return complexes.make(arith.MulFOp(cxi, chxr).result, arith.MulFOp(sxi, shxr).result, ty)


@_over(call_rules, np.tanh, pymath.tanh)
def tanh(lw, args, sig, expr):
    """Numba's np_complex_tanh_impl, operation for operation."""
    (z,), ty = _operands(args, sig, expr)
    fty = complexes.part_type(ty)
    si, ci, shr, chr_ = _hyperbolic_parts(lw, z, ty, expr)

    def mul(a, b):
        return arith.MulFOp(a, b).result
    rs, is_, rc, ic = mul(ci, shr), mul(si, chr_), mul(ci, chr_), mul(si, shr)
    inv_d = arith.DivFOp(const(fty, 1.0), arith.AddFOp(mul(rc, rc), mul(ic, ic)).result).result
    numr = arith.AddFOp(mul(rs, rc), mul(is_, ic)).result
    numi = arith.SubFOp(mul(is_, rc), mul(rs, ic)).result
    return complexes.make(mul(numr, inv_d), mul(numi, inv_d), ty)


@_over(call_rules, np.arccosh, pymath.acosh)
def arccosh(lw, args, sig, expr):
    """NumPy's log(z + sqrt(z + 1) * sqrt(z - 1)), as Numba's
    np_complex_acosh_impl (its sqrt and log are the cmath ones)."""
    (z,), ty = _operands(args, sig, expr)
    unary = signature(ty, ty)
    fty = complexes.part_type(ty)
    one = complexes.make(const(fty, 1.0), const(fty, 0.0), ty)
    root_up = _sqrt_rule(lw, [complexes.add(z, one)], unary, expr)
    root_down = _sqrt_rule(lw, [complex_dialect.SubOp(z, one).result], unary, expr)
    inner = complexes.add(z, complexes.mul(root_up, root_down, ty))
    return _LOG(lw, [inner], unary, expr)


@call_rules.register(cmath.log)
def cmath_log(lw, args, sig, expr):
    """cmath.log(z) and cmath.log(z, base) = log(z) / log(base), with
    Python's division, as Numba's log_base_impl."""
    ty = _unliteral(sig.return_type)
    values = [cast(a, t, ty) for a, t in zip(args, sig.args)]
    logs = [_LOG(lw, [v], signature(ty, ty), expr) for v in values]
    if len(logs) == 1:
        return logs[0]
    return python_divide(lw, logs[0], logs[1], ty)


def _classify(test_parts, combine):
    def rule(lw, args, sig, expr):
        ty = _unliteral(sig.args[0])
        fty = complexes.part_type(ty)
        real, imag = complexes.parts(args[0])
        return combine(test_parts(real, fty), test_parts(imag, fty)).result
    return rule


def _is_nan(x, fty):
    return cmpf("UNO", x, x)


def _is_inf(x, fty):
    return cmpf("OEQ", math.AbsFOp(x).result, const(fty, float("inf")))


_CLASSIFY = {
    (cmath.isnan, np.isnan): _classify(_is_nan, arith.OrIOp),
    (cmath.isinf, np.isinf): _classify(_is_inf, arith.OrIOp),
    (cmath.isfinite, np.isfinite): _classify(_is_finite, arith.AndIOp),
}
for (_py, _np), _rule in _CLASSIFY.items():
    _over(call_rules, _py, _np)(_rule)
